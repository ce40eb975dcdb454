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
    /// An event this projector handles could not be decoded.
    #[error("event {event_id} ({event_type}) unreadable: {error}")]
    Decode {
        /// The event.
        event_id: uuid::Uuid,
        /// Its type.
        event_type: String,
        /// The decoder's complaint.
        error: String,
    },
}
