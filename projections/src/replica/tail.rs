//! The replica's reader of the log: it replays the log from the load's lowest checkpoint, then
//! follows it like any projector (`relations_store::log::read_after`: below the horizon, whole
//! transactions), reading and opening each batch outside the replica's lock.

use relations_store::log::{self, RecordedEvent};
use relations_store::{Keyring, LogPosition};
use sqlx::PgPool;

use super::Replica;
use crate::error::ProjectionError;

/// Events read per step.
const BATCH: i64 = 5000;

/// What a step hands the replica.
pub(super) enum Update {
    /// The replica after its replay (installed whole).
    Loaded(Box<Replica>),
    /// A batch to apply, and the position it brings the replica to.
    Batch(Vec<RecordedEvent>, LogPosition),
    /// The load's replay moved on; nothing to install yet.
    Replaying,
}

/// Where the replica's reader has read to.
pub(super) struct ReplicaTail {
    /// The replica being replayed, until it is caught up; then `None` (it lives in
    /// [`super::live::LiveGraph`]).
    pub(super) pending: Option<Box<Replica>>,
    pub(super) position: LogPosition,
    /// What opens the posts' content, when posts are held.
    pub(super) keys: Option<Keyring>,
}

impl ReplicaTail {
    /// Reads the next batch. `None` when there was nothing below the horizon.
    pub(super) async fn next(&mut self, pool: &PgPool) -> Result<Option<Update>, ProjectionError> {
        let mut events = {
            let mut conn = pool.acquire().await?;
            log::read_after(&mut conn, self.position, BATCH).await?
        };
        if let Some(keys) = &self.keys {
            // Opened once here: the live stream's subscribers then find the batch open.
            log::reveal(keys, &mut events).await?;
        }
        let Some(last) = events.last().map(|e| e.position) else {
            // Caught up: a finished replay is installed now.
            return Ok(self.pending.take().map(|mut replica| {
                replica.settle();
                Update::Loaded(replica)
            }));
        };
        self.position = last;
        metrics::counter!("relations_graph_events_total").increment(events.len() as u64);
        let Some(replica) = &mut self.pending else {
            return Ok(Some(Update::Batch(events, last)));
        };
        apply(replica, &events, last);
        Ok(Some(Update::Replaying))
    }
}

/// Applies a batch to `replica`, in log order, and advances it to `last`.
pub(super) fn apply(replica: &mut Replica, events: &[RecordedEvent], last: LogPosition) {
    for event in events {
        replica.apply(event.position, event.occurred_at, &event.event);
    }
    replica.advance(last);
}
