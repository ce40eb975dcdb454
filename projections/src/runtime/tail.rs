//! The one loop that tails the log, under every reader that follows it: projector runners, the
//! in-memory replica and the Kafka relay.
//!
//! A reader says what one step did ([`Progress`]); the loop decides when to step next: at once
//! while there is work (after a short pause, when the reader wants commits to gather); on a
//! wake-up or the poll interval when it is caught up; soon, then less often, while committed
//! events wait above the horizon behind an older open transaction (they send no further wake-up
//! when it ends); and after a failure, with a backoff doubling from 100 ms to 30 s. Where a
//! reader reads, and that it reads below the horizon in whole transactions, is the reader's
//! (`relations_store::log::read_after`).

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use super::health::Health;
use super::wakeup::Wakeup;

/// What one step of a reader did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// It moved on: step again, after the pause (zero: at once).
    Moved(Duration),
    /// Nothing new below the horizon: wait for a wake-up or the poll interval.
    Idle,
    /// Nothing new below the horizon, but committed events wait above it: look again soon.
    Held,
}

/// What follows a failed step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AfterFailure {
    /// Step again after the backoff.
    Retry,
    /// End this tail after the backoff: its caller sets up again (a lost session, say).
    Restart,
}

/// Why [`TailLoop::run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Shutdown was asked.
    Shutdown,
    /// A failed step asked for [`AfterFailure::Restart`].
    Restart,
}

/// A reader of the log the loop steps.
#[async_trait]
pub trait LogTail: Send {
    /// Why a step fails.
    type Error: std::fmt::Display + Send + Sync;

    /// Reads (and applies, publishes...) the next batch, if any.
    async fn step(&mut self) -> Result<Progress, Self::Error>;

    /// Where the loop records successes and failures.
    fn health(&self) -> &Health;

    /// Reports a failed step (its metric and log line) that is retried after `retry_in`.
    fn failed(&mut self, error: &Self::Error, retry_in: Duration) -> AfterFailure;

    /// What follows a step that panicked (a bug, or a fail point; what it had begun in a
    /// transaction rolled back when the panic dropped it): by default it is stepped again
    /// after the backoff, as after a failure. A tail that keeps a session of its own restarts,
    /// since the panic may have left that session mid-statement.
    fn after_panic(&mut self) -> AfterFailure {
        AfterFailure::Retry
    }
}

/// Why a step failed: its own error, or a panic.
enum Failure<E> {
    Error(E),
    /// What the panic said.
    Panic(String),
}

impl<E: std::fmt::Display> std::fmt::Display for Failure<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Error(error) => error.fmt(f),
            Failure::Panic(panic) => write!(f, "the step panicked: {panic}"),
        }
    }
}

/// A pause doubling from 100 ms up to 30 s, back to 100 ms after a success.
#[derive(Debug, Clone, Copy)]
pub struct Backoff(Duration);

impl Backoff {
    const FIRST: Duration = Duration::from_millis(100);
    const MAX: Duration = Duration::from_secs(30);

    /// The pause to take now; the next one is twice as long.
    pub fn pause(&mut self) -> Duration {
        let pause = self.0;
        self.0 = (self.0 * 2).min(Self::MAX);
        pause
    }

    /// Back to the first pause.
    pub fn reset(&mut self) {
        self.0 = Self::FIRST;
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self(Self::FIRST)
    }
}

/// The loop's timings and state: its backoff and its pause while the horizon is held.
#[derive(Debug, Clone)]
pub struct TailLoop {
    poll: Duration,
    held_first: Duration,
    held: Duration,
    backoff: Backoff,
}

impl TailLoop {
    /// A loop that waits at most `poll` for a wake-up, and looks again `held_first` after
    /// finding the horizon held (doubling up to `poll` while it stays held).
    pub fn new(poll: Duration, held_first: Duration) -> Self {
        Self {
            poll,
            held_first,
            held: held_first,
            backoff: Backoff::default(),
        }
    }

    /// Steps `tail` until `shutdown`, or until a failure asks for a restart.
    pub async fn run(
        &mut self,
        tail: &mut impl LogTail,
        wakeup: &Wakeup,
        shutdown: &CancellationToken,
    ) -> Ended {
        while !shutdown.is_cancelled() {
            // A panic ends the step, never the reader: it is a failure like any other.
            let step = match AssertUnwindSafe(tail.step()).catch_unwind().await {
                Ok(step) => step.map_err(Failure::Error),
                Err(panic) => {
                    let panic = relations_store::panic_message(panic.as_ref()).to_owned();
                    Err(Failure::Panic(panic))
                }
            };
            if !matches!(step, Ok(Progress::Held)) {
                self.held = self.held_first;
            }
            let pause = match step {
                Ok(progress) => {
                    tail.health().succeeded();
                    self.backoff.reset();
                    match progress {
                        Progress::Moved(pause) => {
                            if !pause.is_zero() {
                                tokio::time::sleep(pause).await;
                            }
                            continue;
                        }
                        Progress::Idle => None,
                        Progress::Held => {
                            // Soon at first, then less often while a long transaction holds on.
                            let pause = self.held;
                            self.held = (self.held * 2).min(self.poll);
                            Some(pause)
                        }
                    }
                }
                Err(failure) => {
                    tail.health().failed(&failure);
                    let pause = self.backoff.pause();
                    let after = match &failure {
                        Failure::Error(error) => tail.failed(error, pause),
                        Failure::Panic(panic) => {
                            metrics::counter!("relations_tail_panics_total").increment(1);
                            tracing::error!(?pause, panic, "a step of a log reader panicked");
                            tail.after_panic()
                        }
                    };
                    if after == AfterFailure::Restart {
                        return tokio::select! {
                            _ = shutdown.cancelled() => Ended::Shutdown,
                            _ = tokio::time::sleep(pause) => Ended::Restart,
                        };
                    }
                    Some(pause)
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = async {
                    match pause {
                        Some(pause) => tokio::time::sleep(pause).await,
                        None => wakeup.wait(self.poll).await,
                    }
                } => {}
            }
        }
        Ended::Shutdown
    }
}
