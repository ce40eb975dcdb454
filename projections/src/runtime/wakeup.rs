//! Waking runners when the log grows: a LISTEN on the channel the store's commit signal
//! NOTIFYs, reconnecting after failures. Only a hint: runners poll as well.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::PgListener;
use sqlx::PgPool;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The channel committed appends are signalled on.
pub use relations_store::signal::CHANNEL;

/// A wake-up for runners when the log grows. Only a hint: runners poll as well.
#[derive(Clone, Default)]
pub struct Wakeup(Arc<Notify>);

impl Wakeup {
    /// Listens on [`CHANNEL`] until `shutdown`, reconnecting after failures.
    pub fn listen(pool: PgPool, shutdown: CancellationToken) -> Self {
        let wakeup = Self::default();
        let notify = wakeup.0.clone();
        tokio::spawn(async move {
            while !shutdown.is_cancelled() {
                let listener = async {
                    let mut listener = PgListener::connect_with(&pool).await?;
                    listener.listen(CHANNEL).await?;
                    loop {
                        listener.recv().await?;
                        notify.notify_waiters();
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

    /// Returns when woken, or after `max`.
    pub async fn wait(&self, max: Duration) {
        let _ = tokio::time::timeout(max, self.0.notified()).await;
    }
}
