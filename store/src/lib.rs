//! The relations service's event store on PostgreSQL.
//!
//! Holds the write path (commands decided on cqrs-es aggregates by a generic group-commit
//! executor, appended atomically with the rows that guard their rules, which plug into it from
//! `guards`), the log's positions, and the database pool and migrations. Commands answer with
//! what was decided; how that is shown to a client (a status, a view) is the caller's.
//! Depends on the domain, sqlx and cqrs-es; never on a web framework or on the read models.

pub mod accounts;
mod append;
pub mod bulk;
pub mod db;
pub mod engagement;
pub mod error;
mod executor;
pub mod faults;
pub mod filters;
mod guards;
pub mod idempotency;
pub mod keys;
pub mod lists;
pub mod log;
pub mod metadata;
pub mod position;
pub mod posts;
pub mod relations;
mod retry;
pub mod settings;
pub mod signal;
mod user_locks;

pub use accounts::{AccountOutcome, AccountStore};
pub use engagement::{
    BookmarkChange, EngagementRenders, EngagementStore, LikeChange, NewComment, PinChange,
    PostAccess, RepostChange, ThreadOutcome,
};
pub use error::StoreError;
pub use executor::{panic_message, Executed, Render, Workers};
pub use filters::{FilterChange, FilterStore};
pub use guards::erasure::settle_followers;
pub use idempotency::{BadIdempotencyKey, Idempotency, IdempotencyKey, StoredAnswer};
pub use keys::{KeyError, Keyring, MasterKey};
pub use lists::{ListChange, ListStore};
pub use metadata::EventMetadata;
pub use position::{BadPosition, LogPosition};
pub use posts::{Deletion, PostChange, PostOptions, PostOutcome, PostStore, Publication};
pub use relations::{RelationDecision, RelationStore};
pub use settings::{SettingsAsk, SettingsChange, SettingsStore};
pub use signal::CommitSignal;
