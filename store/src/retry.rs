//! Deciding again after a lost race: every writer's attempt ends in a commit, a lost race
//! (another writer took a stream version first, or PostgreSQL aborted the attempt to break a
//! lock cycle; the attempt rolled back) or an error, and a lost race is decided again, a few
//! times, after a random wait.

use std::future::Future;
use std::time::Duration;

use rand::Rng;

use crate::error::StoreError;

/// How many times a command is decided before it is told to retry.
pub(crate) const MAX_ATTEMPTS: u32 = 12;

/// Runs `attempt` until it commits (`Some`), at most [`MAX_ATTEMPTS`] times; `None` is a lost
/// race, counted and decided again after [`backoff`]. An error ends it at once.
pub(crate) async fn until_committed<T, F>(mut attempt: impl FnMut() -> F) -> Result<T, StoreError>
where
    F: Future<Output = Result<Option<T>, StoreError>>,
{
    for round in 1..=MAX_ATTEMPTS {
        match attempt().await {
            Ok(Some(done)) => return Ok(done),
            Ok(None) => {
                tracing::debug!(attempt = round, "a stream changed under the decision")
            }
            // PostgreSQL broke a lock cycle by aborting this attempt: it lost a race too.
            Err(error) if error.is_lost_race() => {
                tracing::info!(attempt = round, %error, "the attempt was chosen to break a lock cycle")
            }
            Err(error) => return Err(error),
        }
        metrics::counter!("relations_command_conflicts_total").increment(1);
        backoff(round).await;
    }
    Err(StoreError::Contended {
        attempts: MAX_ATTEMPTS,
    })
}

/// Waits a random while, growing with the attempt, so racing writers spread out.
async fn backoff(attempt: u32) {
    let ceiling_ms = 2u64 << attempt.min(6);
    let ms = rand::rng().random_range(0..=ceiling_ms);
    tokio::time::sleep(Duration::from_millis(ms)).await;
}
