//! The replica's reader of the log: it replays the log from the load's lower checkpoint, then
//! follows it like any projector (`relations_store::log::read_after`: below the horizon, whole
//! transactions), decoding each batch outside the replica's lock.

use relations_domain::LogEvent;
use relations_store::log::{self, RecordedEvent};
use relations_store::{Keyring, LogPosition};
use sqlx::PgPool;

use super::{GraphChange, MemoryGraph};
use crate::error::ProjectionError;

/// Events read per step.
const BATCH: i64 = 5000;

/// What a step hands the replica.
pub(super) enum Update {
    /// The graph after its replay (installed whole).
    Loaded(Box<MemoryGraph>),
    /// Changes to apply, the position they bring it to, and the batch they come from.
    Changes(Vec<GraphChange>, LogPosition, Vec<RecordedEvent>),
    /// The load's replay moved on; nothing to install yet.
    Replaying,
}

/// Where the replica's reader has read to, and until where each kind of event is already in
/// the loaded graph.
pub(super) struct ReplicaTail {
    /// The graph being replayed, until it reaches both checkpoints; then `None` (it lives in
    /// the replica).
    pub(super) pending: Option<Box<MemoryGraph>>,
    pub(super) position: LogPosition,
    /// Relation events up to here were in `rm_follows` and `rm_blocks`.
    pub(super) relations_loaded: LogPosition,
    /// Post events up to here were in `feed_authors`.
    pub(super) posts_loaded: LogPosition,
    /// Like and thread events up to here were in `rm_likes` and `rm_comments`.
    pub(super) engagement_loaded: LogPosition,
    /// Account events up to here were folded by the load.
    pub(super) accounts_loaded: LogPosition,
    /// What opens the posts' content, when posts are held.
    pub(super) keys: Option<Keyring>,
}

impl ReplicaTail {
    /// Reads and decodes the next batch. `None` when there was nothing below the horizon.
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
            return Ok(self.pending.take().map(|mut graph| {
                graph.settle();
                Update::Loaded(graph)
            }));
        };
        let changes = self.decode(&events)?;
        self.position = last;
        metrics::counter!("relations_graph_events_total").increment(events.len() as u64);
        let Some(graph) = &mut self.pending else {
            return Ok(Some(Update::Changes(changes, last, events)));
        };
        for change in changes {
            graph.apply(change);
        }
        graph.advance(last);
        Ok(Some(Update::Replaying))
    }

    /// The batch's changes, skipping what the load already held.
    fn decode(&self, events: &[RecordedEvent]) -> Result<Vec<GraphChange>, ProjectionError> {
        let mut changes = Vec::with_capacity(events.len());
        for event in events {
            let at = event.position;
            // Engagement is kept only beside held posts.
            let engagement = self.keys.is_some() && at > self.engagement_loaded;
            match &event.event {
                LogEvent::Relation(relation) if at > self.relations_loaded => {
                    changes.push(GraphChange::of_relation(relation, event.occurred_at));
                }
                LogEvent::Post(post) if at > self.posts_loaded => {
                    changes.push(GraphChange::of_post(post.clone()));
                }
                LogEvent::Account(account) if at > self.accounts_loaded => {
                    changes.push(GraphChange::Account(account.clone()));
                }
                LogEvent::Like(like) if engagement => changes.extend(GraphChange::of_like(*like)),
                LogEvent::Thread(thread) if engagement => {
                    changes.extend(GraphChange::of_thread(thread.clone()));
                }
                // What the load already held.
                LogEvent::Relation(_)
                | LogEvent::Post(_)
                | LogEvent::Account(_)
                | LogEvent::Like(_)
                | LogEvent::Thread(_) => {}
            }
        }
        Ok(changes)
    }
}
