//! What can go wrong when a command meets the store.

use relations_domain::{
    BookmarkError, FilterError, LikeError, ListError, PostError, RelationError, RepostError,
    ThreadError,
};

/// Why a command was not carried out.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The domain refused the command; nothing was appended.
    #[error(transparent)]
    Rejected(#[from] RelationError),
    /// The domain refused a post command; nothing was appended.
    #[error(transparent)]
    PostRejected(#[from] PostError),
    /// The domain refused a comment command; nothing was appended.
    #[error(transparent)]
    ThreadRejected(#[from] ThreadError),
    /// The domain refused a like or unlike; nothing was appended.
    #[error(transparent)]
    LikeRejected(#[from] LikeError),
    /// The domain refused a repost or unrepost; nothing was appended.
    #[error(transparent)]
    RepostRejected(#[from] RepostError),
    /// The domain refused a bookmark or unbookmark; nothing was appended.
    #[error(transparent)]
    BookmarkRejected(#[from] BookmarkError),
    /// The domain refused a list command; nothing was appended.
    #[error(transparent)]
    ListRejected(#[from] ListError),
    /// The domain refused a filter command; nothing was appended.
    #[error(transparent)]
    FilterRejected(#[from] FilterError),
    /// A user the command names is erased (issue 25): nothing is decided about them again.
    #[error("the user is erased")]
    Erased,
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
    /// The event store failed in a way that is neither bad data nor an unavailable database.
    #[error("event store: {0}")]
    Failed(String),
    /// The command was not answered within its deadline (see `Workers::deadline`); it may or
    /// may not have been committed. Unavailable: a retry with the same idempotency key
    /// replays the answer if it was, and decides it if it was not.
    #[error("the command was not answered within its deadline ({0:?}); its outcome is unknown")]
    DeadlineExceeded(std::time::Duration),
    /// The command's group ended without answering it: its worker failed (a panic) after the
    /// command was handed over. Its outcome is unknown; unavailable, as
    /// [`StoreError::DeadlineExceeded`].
    #[error("the command was not answered (its group failed); its outcome is unknown")]
    Unanswered,
    /// A fail point's error (issue 45; only in builds with the `failpoints` feature). Where it
    /// stands after the commit, the outcome is unknown; unavailable, as a lost connection.
    #[error(transparent)]
    Injected(#[from] crate::faults::Injected),
    /// The group the command was decided in failed as a whole (the database failed or could
    /// not be reached); nothing of it was appended.
    #[error("{0}")]
    Group(std::sync::Arc<StoreError>),
    /// PostgreSQL failed or could not be reached.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
}

impl StoreError {
    /// True when PostgreSQL aborted the transaction to let another one through (SQLSTATE
    /// 40P01 deadlock detected, 40001 serialization failure): nothing was written, and the
    /// same attempt made again may commit. Writers take their locks in one order, so a cycle
    /// is rare, but one a reader of the write side closes (a projector settling rule-3 rows)
    /// must not answer 500.
    pub fn is_lost_race(&self) -> bool {
        match self {
            StoreError::Database(sqlx::Error::Database(error)) => {
                matches!(error.code().as_deref(), Some("40P01" | "40001"))
            }
            _ => false,
        }
    }

    /// True when the database is unreachable or overloaded rather than the request at fault.
    pub fn is_unavailable(&self) -> bool {
        if let StoreError::Group(cause) = self {
            return cause.is_unavailable();
        }
        match self {
            StoreError::Database(error) => unavailable(error),
            StoreError::Contended { .. }
            | StoreError::DeadlineExceeded(_)
            | StoreError::Unanswered
            | StoreError::Injected(_) => true,
            _ => false,
        }
    }
}

/// True when `error` says PostgreSQL cannot serve right now rather than that the request or
/// the data is at fault: the pool timed out or is closed, the connection broke, or the server
/// refused or ended the session (SQLSTATE class 08 connection exception, 57P01-57P03 admin or
/// crash shutdown and "cannot connect now" during recovery, class 53 insufficient resources
/// such as too many connections or a full disk, 58000 and 58030 system and I/O errors (an
/// `fdatasync` that failed: the backend then PANICs, and whether its commit reached the disk
/// is unknown; a missing or duplicate file, 58P01 and 58P02, is no passing state), 25006 read-only transaction: a session that reached a standby during a
/// failover, before the engine promoted it). A retry may succeed.
pub fn unavailable(error: &sqlx::Error) -> bool {
    match error {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(error) => error.code().is_some_and(|code| {
            code.starts_with("08")
                || code == "58000"
                || code == "58030"
                || code.starts_with("57P")
                || code.starts_with("53")
                || code == "25006"
        }),
        _ => false,
    }
}

impl From<crate::keys::KeyError> for StoreError {
    /// A database failure stays one (it may be unavailable); anything else means the keys or
    /// the payload are not what this build expects.
    fn from(error: crate::keys::KeyError) -> Self {
        match error {
            crate::keys::KeyError::Database(error) => StoreError::Database(error),
            other => StoreError::Failed(other.to_string()),
        }
    }
}

impl From<relations_domain::AccountError> for StoreError {
    fn from(error: relations_domain::AccountError) -> Self {
        match error {
            relations_domain::AccountError::Erased => StoreError::Erased,
        }
    }
}

impl From<cqrs_es::persist::PersistenceError> for StoreError {
    /// cqrs-es wraps every database error; the database's own error decides what it was.
    fn from(error: cqrs_es::persist::PersistenceError) -> Self {
        use cqrs_es::persist::PersistenceError as P;
        match error {
            P::OptimisticLockError => StoreError::Contended { attempts: 1 },
            P::DeserializationError(error) => StoreError::Corrupt(error.to_string()),
            P::ConnectionError(error) | P::UnknownError(error) => {
                match error.downcast::<sqlx::Error>() {
                    Ok(error) => StoreError::Database(*error),
                    Err(error) => StoreError::Failed(error.to_string()),
                }
            }
        }
    }
}
