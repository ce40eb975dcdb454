//! Waking runners when the log grows: a LISTEN on the channel the store's commit signal
//! NOTIFYs, reconnecting after failures. Only a hint: runners poll as well.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;
use sqlx::PgPool;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The channel committed appends are signalled on.
pub use relations_store::signal::CHANNEL;

/// A wake-up for runners when the log grows. Only a hint: runners poll as well.
///
/// Each clone remembers which wake-ups it has seen, so one that arrives while its runner is in
/// the middle of a step is not lost: the next [`Wakeup::wait`] returns at once. (A plain
/// `Notify::notify_waiters` would drop it, and the runner would sleep a whole poll interval
/// with events waiting: that was the tail of the projection lag.)
#[derive(Clone)]
pub struct Wakeup {
    sender: Arc<watch::Sender<u64>>,
    seen: watch::Receiver<u64>,
}

impl Default for Wakeup {
    fn default() -> Self {
        let (sender, seen) = watch::channel(0);
        Self {
            sender: Arc::new(sender),
            seen,
        }
    }
}

impl Wakeup {
    /// Listens on [`CHANNEL`] until `shutdown`, reconnecting after failures.
    pub fn listen(pool: PgPool, shutdown: CancellationToken) -> Self {
        let wakeup = Self::default();
        let sender = wakeup.sender.clone();
        tokio::spawn(async move {
            while !shutdown.is_cancelled() {
                let listener = async {
                    let mut listener = PgListener::connect_with(&pool).await?;
                    listener.listen(CHANNEL).await?;
                    loop {
                        listener.recv().await?;
                        wake(&sender);
                    }
                    #[allow(unreachable_code)]
                    Ok::<(), sqlx::Error>(())
                };
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    result = listener => {
                        if let Err(error) = result {
                            tracing::warn!(%error, "log listener failed; polling until it reconnects");
                        }
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        });
        wakeup
    }

    /// Wakes every runner sharing this wake-up (what a NOTIFY does).
    pub fn wake(&self) {
        wake(&self.sender);
    }

    /// Marks every wake-up so far as seen (call before looking at the log).
    pub fn seen(&mut self) {
        self.seen.borrow_and_update();
    }

    /// Returns when woken since [`Wakeup::seen`] (at once if that already happened), or
    /// after `max`.
    pub async fn wait(&mut self, max: Duration) {
        let _ = tokio::time::timeout(max, self.seen.changed()).await;
    }
}

fn wake(sender: &watch::Sender<u64>) {
    sender.send_modify(|n| *n = n.wrapping_add(1));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_wake_up_during_a_step_is_not_lost() {
        let mut runner = Wakeup::default();
        runner.seen();
        // The log grows while the runner is busy, not waiting.
        runner.clone().wake();
        let woken =
            tokio::time::timeout(Duration::from_secs(2), runner.wait(Duration::from_secs(60)));
        assert!(woken.await.is_ok(), "the wake-up was lost");
        // Once seen, a wait sleeps until the next one (here: its own limit).
        runner.seen();
        let started = std::time::Instant::now();
        runner.wait(Duration::from_millis(50)).await;
        assert!(started.elapsed() >= Duration::from_millis(50));
    }
}
