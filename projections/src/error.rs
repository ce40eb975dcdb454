//! What can stop a projector.

/// Why a batch was not applied. The checkpoint does not move; the runner retries with backoff.
#[derive(Debug, thiserror::Error)]
pub enum ProjectionError {
    /// PostgreSQL failed.
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    /// Content could not be opened: a data key does not unwrap under the master key, or a
    /// sealed payload does not open (an erased author's content is no error: it reads as
    /// null).
    #[error("content keys: {0}")]
    Keys(#[from] relations_store::KeyError),
    /// Redis refused or timed out (projector `cache`).
    #[error("cache: {0}")]
    Cache(String),
    /// A task the work depended on stopped before it was done.
    #[error("stopped: {0}")]
    Stopped(String),
    /// A fail point's error (issue 45; only in builds with fail points).
    #[error(transparent)]
    Injected(#[from] relations_store::faults::Injected),
}
