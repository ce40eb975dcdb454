//! The relations service's event store on PostgreSQL.
//!
//! Holds the write path (commands decided on cqrs-es aggregates, appended atomically with the
//! rows that guard their rules), the log's positions, and the database pool and migrations.
//! Depends on the domain, sqlx and cqrs-es; never on a web framework or on the read models.

pub mod accounts;
mod append;
pub mod bulk;
mod command;
pub mod db;
pub mod engagement;
pub mod error;
mod group;
pub mod idempotency;
pub mod log;
pub mod metadata;
pub mod position;
pub mod posts;
pub mod relations;
pub mod settings;
pub mod signal;

pub use accounts::{AccountChange, AccountStore};
pub use command::Executed;
pub use engagement::{CommentView, Commented, EngagementStore, Liking, Pinned, ThreadAnswer};
pub use error::StoreError;
pub use idempotency::{BadIdempotencyKey, Idempotency, IdempotencyKey, StoredAnswer};
pub use metadata::EventMetadata;
pub use position::{BadPosition, LogPosition};
pub use posts::{Deleted, PostStore, PostView, Published};
pub use relations::{RelationOutcome, RelationStore};
pub use settings::{Settings, SettingsStore};
pub use signal::CommitSignal;
