//! What every command's retry loop shares: one transaction per attempt, ended explicitly on
//! every path, decided again after losing an optimistic-concurrency race.

use std::time::Duration;

use rand::Rng;
use sqlx::{Postgres, Transaction};

use crate::error::StoreError;
use crate::idempotency::StoredAnswer;
use crate::signal::CommitSignal;

/// How many times a command is decided again after losing an optimistic-concurrency race
/// before the client is told to retry.
pub(crate) const MAX_ATTEMPTS: u32 = 12;

/// A command's result: decided now, or the answer stored under its idempotency key.
#[derive(Debug, Clone, PartialEq)]
pub enum Executed<T> {
    /// Decided by this call.
    Fresh(T),
    /// A retry: the first answer, unchanged; nothing was appended.
    Replayed(StoredAnswer),
}

/// How one attempt at a command ended, before its transaction is finished.
pub(crate) enum Attempt<T> {
    /// Decided (changed or not): commit.
    Decided(T),
    /// A retry under a stored key: roll back, answer as before.
    Replayed(StoredAnswer),
    /// Lost the race for a stream's next version: roll back and decide again.
    Conflict,
}

impl<T> Attempt<T> {
    /// The same ending, with the decision turned into another answer.
    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> Attempt<U> {
        match self {
            Attempt::Decided(t) => Attempt::Decided(f(t)),
            Attempt::Replayed(answer) => Attempt::Replayed(answer),
            Attempt::Conflict => Attempt::Conflict,
        }
    }
}

/// Ends an attempt's transaction the way its result says: commit a decision, roll back
/// anything else. `Some` when the command is done; `None` after a conflict, having waited a
/// growing random while, so the caller decides again (at most [`MAX_ATTEMPTS`] rounds).
///
/// Every path ends the transaction explicitly: one left to a lazy rollback would sit idle
/// holding a transaction id (guard rows are locked), stalling every log reader.
pub(crate) async fn finish<T>(
    tx: Transaction<'_, Postgres>,
    result: Result<Attempt<T>, StoreError>,
    round: u32,
    signal: &CommitSignal,
) -> Result<Option<Executed<T>>, StoreError> {
    tracing::Span::current().record("attempts", round);
    match result {
        Ok(Attempt::Decided(outcome)) => {
            tx.commit().await?;
            signal.committed();
            Ok(Some(Executed::Fresh(outcome)))
        }
        Ok(Attempt::Replayed(answer)) => {
            tx.rollback().await?;
            Ok(Some(Executed::Replayed(answer)))
        }
        Ok(Attempt::Conflict) => {
            tx.rollback().await?;
            metrics::counter!("relations_command_conflicts_total").increment(1);
            if round >= MAX_ATTEMPTS {
                return Err(StoreError::Contended { attempts: round });
            }
            backoff(round).await;
            Ok(None)
        }
        Err(error) => {
            let _ = tx.rollback().await;
            Err(error)
        }
    }
}

/// Waits a random while, growing with the attempt, so racing writers spread out.
async fn backoff(attempt: u32) {
    let ceiling_ms = 2u64 << attempt.min(6);
    let ms = rand::rng().random_range(0..=ceiling_ms);
    tokio::time::sleep(Duration::from_millis(ms)).await;
}
