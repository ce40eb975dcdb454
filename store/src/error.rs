//! What can go wrong when a command meets the store.

use relations_domain::{PostError, RelationError};

/// Why a command was not carried out.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The domain refused the command; nothing was appended.
    #[error(transparent)]
    Rejected(#[from] RelationError),
    /// The domain refused a post command; nothing was appended.
    #[error(transparent)]
    PostRejected(#[from] PostError),
    /// The Idempotency-Key was used before with another request.
    #[error("this Idempotency-Key was used with another request")]
    IdempotencyKeyReused,
    /// Optimistic concurrency kept losing; the client may retry.
    #[error("the stream stayed contended after {attempts} attempts")]
    Contended {
        /// How many times the command was decided.
        attempts: u32,
    },
    /// A stored event could not be read back: the log holds something this build cannot fold.
    #[error("stored event unreadable: {0}")]
    Corrupt(String),
    /// The group the command was decided in failed as a whole (the database failed or could
    /// not be reached); nothing of it was appended.
    #[error("{0}")]
    Group(std::sync::Arc<StoreError>),
    /// PostgreSQL failed or could not be reached.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
}

impl StoreError {
    /// True when the database is unreachable or overloaded rather than the request at fault.
    pub fn is_unavailable(&self) -> bool {
        if let StoreError::Group(cause) = self {
            return cause.is_unavailable();
        }
        matches!(
            self,
            StoreError::Database(
                sqlx::Error::PoolTimedOut | sqlx::Error::PoolClosed | sqlx::Error::Io(_)
            ) | StoreError::Contended { .. }
        )
    }
}

impl From<cqrs_es::persist::PersistenceError> for StoreError {
    fn from(error: cqrs_es::persist::PersistenceError) -> Self {
        StoreError::Corrupt(error.to_string())
    }
}
