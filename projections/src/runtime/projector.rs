//! The contract a read model implements.

use async_trait::async_trait;
use relations_store::log::RecordedEvent;
use sqlx::PgConnection;

use super::copy_out::CopyOut;
use crate::error::ProjectionError;

/// A fold of the log into tables. `apply` runs inside the runner's transaction, which also
/// advances the checkpoint; it must be deterministic and idempotent on its rows (an event is
/// applied once per checkpoint, but a rebuild folds everything again into fresh tables).
#[async_trait]
pub trait Projector: Send + Sync {
    /// The name `relations rebuild NAME` and the admin endpoint use.
    fn name(&self) -> &'static str;

    /// The tables this projector owns (rebuilt together, swapped together).
    fn tables(&self) -> &'static [&'static str];

    /// Projectors whose read models this one stands for: this one never passes their
    /// checkpoints (a cache must not run ahead of the tables it caches).
    fn upstreams(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether the service is unready while this projector is stuck.
    fn essential(&self) -> bool {
        true
    }

    /// A fold of the whole log in memory whose result is written at once: a rebuild's fast
    /// path (`None`: rebuilds apply batches like the runner).
    fn bulk(&self) -> Option<Box<dyn BulkFold>> {
        None
    }

    /// Folds one event into the read model: by default as a batch of one. A projector
    /// implements this or [`Projector::apply_batch`], or both (each defaults to the other).
    async fn apply(
        &self,
        conn: &mut PgConnection,
        event: &RecordedEvent,
    ) -> Result<(), ProjectionError> {
        self.apply_batch(conn, std::slice::from_ref(event)).await
    }

    /// Folds a batch of events, in order, into the read model: by default one by one; a
    /// projector may write the batch's net effect at once, with the same result.
    async fn apply_batch(
        &self,
        conn: &mut PgConnection,
        events: &[RecordedEvent],
    ) -> Result<(), ProjectionError> {
        for event in events {
            self.apply(conn, event).await?;
        }
        Ok(())
    }
}

/// The read model folded in memory from the start of the log, then written to empty tables
/// (with COPY); it must equal what applying the same events batch by batch writes.
#[async_trait]
pub trait BulkFold: Send {
    /// Folds the next event, in log order.
    fn fold(&mut self, event: &RecordedEvent) -> Result<(), ProjectionError>;

    /// Folds the next batch of events, in log order: each by [`BulkFold::fold`], unless the
    /// projector must first prepare the batch (the feed reveals sealed content, in place: the
    /// batch is the fold's to change).
    async fn fold_batch(&mut self, events: Vec<RecordedEvent>) -> Result<(), ProjectionError> {
        for event in &events {
            self.fold(event)?;
        }
        Ok(())
    }

    /// Statements run on the shadow tables (made like the live ones) before the rows are
    /// written: the partitions the result needs, and none it does not (the followers' tables of
    /// their own).
    fn shadow_statements(&self) -> Vec<String> {
        Vec::new()
    }

    /// Lays out the result as the rows of the projector's (empty) tables, each table's in
    /// `COPY`'s text format ([`CopyOut::table`]); the runtime writes them as they come, on a
    /// thread of the blocking pool.
    fn write(self: Box<Self>, out: &CopyOut) -> Result<(), ProjectionError>;
}

/// The user `event` erases, if it is a `UserErased` (issue 25): every reader folds it
/// set-based, at its place in the log (docs/events.md says what each must do).
pub fn erased_user(event: &RecordedEvent) -> Option<i64> {
    event.event.erased_user().map(|user| user.get())
}
