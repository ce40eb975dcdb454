//! The replica kept current: loaded once from the read models ([`super::load`]), then folded
//! forward from the log by the one log-tail loop ([`crate::runtime::TailLoop`]). Each batch is
//! decoded outside the lock and applied under one write lock, so readers see batch boundaries
//! only; then the batch is offered to subscribers (the live feed stream), once the replica
//! reflects it.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use relations_store::log::{self, RecordedEvent};
use relations_store::LogPosition;
use sqlx::PgPool;
use tokio::sync::{broadcast, watch};
use tokio_util::sync::CancellationToken;

use super::load::load;
use super::snapshot::{SnapshotConfig, Writer};
use super::tail::{ReplicaTail, Update};
use super::Replica;
use crate::error::ProjectionError;
use crate::feed::held::timelines::Caps;
use crate::runtime::health::Health;
use crate::runtime::tail::{AfterFailure, Backoff, Ended, LogTail, Progress, TailLoop};
use crate::runtime::Wakeup;

/// How often the tail looks for events when no wake-up comes.
const POLL: Duration = Duration::from_millis(100);
/// How often the graph's size gauge is refreshed.
const SIZE_EVERY: Duration = Duration::from_secs(5);
/// How soon it looks again when committed events wait above the horizon.
const HELD_RETRY: Duration = Duration::from_millis(2);
/// Batches kept for slow subscribers before they lag.
const APPLIED_BATCHES: usize = 1024;

/// A shared, live replica of the graph. Cheap to clone.
#[derive(Clone)]
pub struct LiveGraph {
    graph: Arc<RwLock<Option<Replica>>>,
    health: Arc<Health>,
    /// When `relations_graph_bytes` was last measured.
    sized: Arc<std::sync::Mutex<Option<Instant>>>,
    /// The loaded replica's position; `None` until loaded.
    position: watch::Sender<Option<LogPosition>>,
    /// Each batch of the log applied after the load, sent once the replica reflects it.
    applied: broadcast::Sender<Arc<[RecordedEvent]>>,
    /// How many posts it holds (issue 28), and what opens their content.
    posts: (Caps, Option<relations_store::Keyring>),
    /// Where the graph's snapshot is kept (issue 48), if anywhere.
    snapshots: Option<SnapshotConfig>,
}

impl Default for LiveGraph {
    fn default() -> Self {
        Self {
            graph: Arc::default(),
            health: Arc::default(),
            sized: Arc::default(),
            position: watch::Sender::new(None),
            applied: broadcast::Sender::new(APPLIED_BATCHES),
            posts: (Caps::OFF, None),
            snapshots: None,
        }
    }
}

impl LiveGraph {
    /// An empty, unloaded replica: nothing is answered from it until [`LiveGraph::run`] loads it.
    pub fn new() -> Self {
        Self::default()
    }

    /// [`LiveGraph::new`], also holding every author's newest posts up to `caps`, opened with
    /// `keys` (the feed's first pages and `new_count` from memory).
    pub fn holding_posts(caps: Caps, keys: relations_store::Keyring) -> Self {
        Self {
            posts: (caps, Some(keys)),
            ..Self::default()
        }
    }

    /// Also starting from, and keeping, the graph's snapshot in `snapshots` (none when `None`).
    pub fn with_snapshots(self, snapshots: Option<SnapshotConfig>) -> Self {
        Self { snapshots, ..self }
    }

    /// `read` on the replica, or `None` while it is not loaded.
    pub fn with<R>(&self, read: impl FnOnce(&Replica) -> R) -> Option<R> {
        let guard = self.graph.read().unwrap_or_else(|e| e.into_inner());
        guard.as_ref().map(read)
    }

    /// Every batch of the log applied from now on, each sent after the replica reflects it.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<[RecordedEvent]>> {
        self.applied.subscribe()
    }

    /// How its load and tail fare (for the admin endpoint).
    pub fn health(&self) -> &Health {
        &self.health
    }

    /// The replica's position, or `None` while it is not loaded.
    pub fn position(&self) -> Option<LogPosition> {
        *self.position.borrow()
    }

    /// Waits until the replica reflects `position`, for at most `timeout`. `None` when it is
    /// not loaded (the caller reads elsewhere); otherwise whether it got there.
    pub async fn wait_for(&self, position: LogPosition, timeout: Duration) -> Option<bool> {
        let mut watch = self.position.subscribe();
        if watch.borrow().is_none() {
            return None;
        }
        let reached = tokio::time::timeout(
            timeout,
            watch.wait_for(|at| at.is_some_and(|at| at >= position)),
        )
        .await;
        Some(matches!(reached, Ok(Ok(_))))
    }

    /// Loads the replica (retrying until it can) and keeps it current until `shutdown`; loads
    /// it again if its tail asks to restart (after a step that panicked, which may have left
    /// the graph between two positions): meanwhile readers read the read models, and the live
    /// streams are told to resync (they may have missed batches).
    pub async fn run(mut self, pool: PgPool, wakeup: Wakeup, shutdown: CancellationToken) {
        let (mut backoff, mut writer) = (Backoff::default(), None);
        loop {
            let Some(tail) = self.load(&pool, &shutdown).await else {
                return;
            };
            // A reload keeps its snapshot writer (a second one would race the first's file).
            let kept = writer.take().or_else(|| {
                self.snapshots.clone().map(|config| {
                    let restored = tail.pending.as_ref().and_then(|r| r.restored());
                    Writer::new(config, restored)
                })
            });
            let mut follower = Follower {
                writer: kept,
                replica: self,
                tail,
                pool: pool.clone(),
            };
            let ended = TailLoop::new(POLL, HELD_RETRY)
                .run(&mut follower, &wakeup, &shutdown)
                .await;
            if ended == Ended::Shutdown {
                return;
            }
            self = follower.replica;
            writer = follower.writer;
            self.unload();
            let retry_in = backoff.pause();
            tracing::warn!(?retry_in, "the replica is loaded again");
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(retry_in) => {}
            }
        }
    }

    /// Takes the graph away (readers then read the read models) and tells the live streams to
    /// resync (an empty batch: batches are never empty).
    fn unload(&self) {
        *self.graph.write().unwrap_or_else(|e| e.into_inner()) = None;
        self.position.send_replace(None);
        let _ = self.applied.send(Arc::from(Vec::new()));
    }

    /// The replica's first load, retried until it succeeds; `None` at shutdown.
    async fn load(&self, pool: &PgPool, shutdown: &CancellationToken) -> Option<ReplicaTail> {
        let mut backoff = Backoff::default();
        loop {
            let started = Instant::now();
            let snapshots = self.snapshots.as_ref();
            match load(pool, self.posts.0, self.posts.1.clone(), snapshots).await {
                Ok(tail) => {
                    tracing::info!(elapsed = ?started.elapsed(), "replica loaded");
                    return Some(tail);
                }
                Err(error) => {
                    self.health.failed(&error);
                    let retry_in = backoff.pause();
                    tracing::error!(%error, ?retry_in, "graph load failed");
                    tokio::select! {
                        _ = shutdown.cancelled() => return None,
                        _ = tokio::time::sleep(retry_in) => {}
                    }
                }
            }
        }
    }

    /// Installs the tail's graph (its first load) or its advance.
    fn publish(&self, update: Update) {
        let mut applied = Vec::new();
        let position = {
            let mut guard = self.graph.write().unwrap_or_else(|e| e.into_inner());
            let locked = Instant::now();
            match update {
                Update::Replaying => return,
                Update::Loaded(graph) => *guard = Some(*graph),
                Update::Batch(events, position) => {
                    let graph = guard.as_mut().expect("batches come after the load");
                    super::tail::apply(graph, &events, position);
                    applied = events;
                }
            }
            let position = guard.as_ref().expect("just set").position();
            // Readers wait while this lock is held: how long, in the histogram.
            metrics::histogram!("relations_graph_apply_seconds")
                .record(locked.elapsed().as_secs_f64());
            position
        };
        // Measured under a read lock: walking every node and post at 1M users takes tens of
        // milliseconds, which under the write lock every reader waited for.
        self.with(|graph| self.measure(graph));
        self.position.send_replace(Some(position));
        self.health.at(position);
        if !applied.is_empty() && self.applied.receiver_count() > 0 {
            // A subscriber gone since is fine.
            let _ = self.applied.send(applied.into());
        }
    }

    /// Sets the graph's gauges.
    fn measure(&self, graph: &Replica) {
        let relations = graph.relations();
        metrics::gauge!("relations_graph_follows").set(relations.follows() as f64);
        metrics::gauge!("relations_graph_users").set(relations.users() as f64);
        // Walking every node costs: the size is refreshed every few seconds, not per batch.
        let mut sized = self.sized.lock().unwrap_or_else(|e| e.into_inner());
        if sized.is_none_or(|at| at.elapsed() >= SIZE_EVERY) {
            *sized = Some(Instant::now());
            metrics::gauge!("relations_graph_bytes").set(relations.heap_bytes() as f64);
            let timelines = graph.timelines();
            metrics::gauge!("relations_feed_memory_posts").set(timelines.held() as f64);
            metrics::gauge!("relations_feed_memory_bytes").set(timelines.heap_bytes() as f64);
            let engagement = timelines.engagement();
            let (likes, comments) = engagement.held();
            metrics::gauge!("relations_feed_memory_likes").set(likes as f64);
            metrics::gauge!("relations_feed_memory_comments").set(comments as f64);
            metrics::gauge!("relations_feed_memory_engagement_bytes")
                .set(engagement.heap_bytes() as f64);
        }
    }
}

/// The replica as the tail loop steps it: its reader of the log, and where it publishes.
struct Follower {
    replica: LiveGraph,
    tail: ReplicaTail,
    pool: PgPool,
    /// Writes the graph's snapshot, when one is kept.
    writer: Option<Writer>,
}

impl Follower {
    /// Writes the graph's snapshot if one is due: from a copy taken here, between batches,
    /// under a read lock (readers go on; only this tail waits for the copy).
    fn snapshot(&mut self) {
        let (Some(writer), Some(position)) = (&mut self.writer, self.replica.position()) else {
            return;
        };
        let replica = &self.replica;
        writer.maybe_write(&self.pool, position, || {
            replica.with(|r| (r.position(), r.relations().clone()))
        });
    }
}

#[async_trait]
impl LogTail for Follower {
    type Error = ProjectionError;

    async fn step(&mut self) -> Result<Progress, ProjectionError> {
        if let Some(update) = self.tail.next(&self.pool).await? {
            if let (Some(writer), Update::Batch(events, _)) = (&mut self.writer, &update) {
                writer.applied(events);
            }
            self.replica.publish(update);
            self.snapshot();
            return Ok(Progress::Moved(Duration::ZERO));
        }
        self.snapshot();
        // Committed events waiting behind an older open transaction send no further wake-up
        // when it ends.
        let ahead = log::ahead(&self.pool, self.tail.position).await?;
        Ok(match ahead.unsettled || ahead.settled {
            true => Progress::Held,
            false => Progress::Idle,
        })
    }

    fn health(&self) -> &Health {
        &self.replica.health
    }

    fn failed(&mut self, error: &ProjectionError, retry_in: Duration) -> AfterFailure {
        metrics::counter!("relations_graph_errors_total").increment(1);
        tracing::error!(%error, ?retry_in, "graph tail failed");
        AfterFailure::Retry
    }

    /// The tail may have read past what the graph holds: load the graph again.
    fn after_panic(&mut self) -> AfterFailure {
        AfterFailure::Restart
    }
}
