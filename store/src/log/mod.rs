//! The global log, read in commit order without ever skipping an event.
//!
//! Events are visited in `(transaction_id, global_position)` order, and only below the oldest
//! transaction still open (`pg_snapshot_xmin`): an event whose transaction has not committed
//! yet may carry a lower `global_position` than events already visible, and reading past it
//! would skip it for good. Every transaction below the horizon has committed or aborted, so
//! what is read there never changes.

// The shared SQL fragments first: macros are in scope for the modules declared after them.
#[macro_use]
mod sql;
pub(crate) mod content;
mod envelope;
mod event;
mod horizon;
pub mod partitions;
mod read;
mod replay;
mod rewrite;

pub use content::{
    forget_erased, reveal, revealed, revealed_to_fold, CONTENT_TYPES, SEALED_VERSION,
};
pub use envelope::{BadEnvelope, ENVELOPE_SCHEMA};
pub use event::RecordedEvent;
pub use horizon::{
    ahead, count_after, event_at, footprint, head, held, horizon_holder, lag, lags, Ahead, Held,
    HorizonHolder, Lag, COUNTED,
};
pub use read::{
    read_after, read_type, read_unsettled, relation_streams_until, relation_streams_up_to,
    RelationFact,
};
pub use replay::Replay;
pub use rewrite::{seal_plain_content, Sealed};
