//! The replica kept current: loaded once from the read models, then folded forward from the log.
//!
//! Loading reads `rm_follows`, `rm_blocks` and `feed_authors` with their projectors'
//! checkpoints in one read-only snapshot (it takes no transaction id, so it holds back no
//! horizon), then replays the log from the lower checkpoint, skipping for each kind of event
//! what its read model already held. From then on the tail reads the log like any projector
//! (`relations_store::log::read_after`: below the horizon, whole transactions), decodes outside
//! the lock, and applies each batch under one write lock, so readers see batch boundaries only.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use relations_domain::{Account, AccountEvent, Post, PostEvent, RelationEvent, RelationPair};
use relations_store::log::{self, RecordedEvent};
use relations_store::LogPosition;
use sqlx::{PgPool, Row};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::{Change, MemoryGraph};
use crate::error::ProjectionError;
use crate::runtime::checkpoint;
use crate::runtime::health::Health;
use crate::runtime::projector::decode;
use crate::runtime::Wakeup;
use crate::{feed, relations};

/// Events read per step.
const BATCH: i64 = 5000;
/// How often the tail looks for events when no wake-up comes.
const POLL: Duration = Duration::from_millis(100);
/// How often the graph's size gauge is refreshed.
const SIZE_EVERY: Duration = Duration::from_secs(5);
/// How soon it looks again when committed events wait above the horizon.
const HELD_RETRY: Duration = Duration::from_millis(2);

/// A shared, live replica of the graph. Cheap to clone.
#[derive(Clone)]
pub struct LiveGraph {
    graph: Arc<RwLock<Option<MemoryGraph>>>,
    health: Arc<Health>,
    /// When `relations_graph_bytes` was last measured.
    sized: Arc<std::sync::Mutex<Option<Instant>>>,
    /// The loaded replica's position; `None` until loaded.
    position: watch::Sender<Option<LogPosition>>,
    /// The post events of each batch applied after the load, sent once the replica reflects
    /// them (the live feed stream decides who sees them from the replica).
    posts: tokio::sync::broadcast::Sender<Arc<[PostSignal]>>,
}

/// A post event the replica has applied, at its place in the log.
#[derive(Debug, Clone)]
pub struct PostSignal {
    /// Where it sits in the log.
    pub position: LogPosition,
    /// The event.
    pub event: PostEvent,
}

/// Batches of post events kept for slow subscribers before they lag.
const POST_SIGNALS: usize = 1024;

impl Default for LiveGraph {
    fn default() -> Self {
        Self {
            graph: Arc::default(),
            health: Arc::default(),
            sized: Arc::default(),
            position: watch::Sender::new(None),
            posts: tokio::sync::broadcast::Sender::new(POST_SIGNALS),
        }
    }
}

impl LiveGraph {
    /// An empty, unloaded replica: nothing is answered from it until [`LiveGraph::run`] loads it.
    pub fn new() -> Self {
        Self::default()
    }

    /// `read` on the replica, or `None` while it is not loaded.
    pub fn with<R>(&self, read: impl FnOnce(&MemoryGraph) -> R) -> Option<R> {
        let guard = self.graph.read().unwrap_or_else(|e| e.into_inner());
        guard.as_ref().map(read)
    }

    /// The post events of every batch applied from now on, each sent after the replica
    /// reflects it.
    pub fn subscribe_posts(&self) -> tokio::sync::broadcast::Receiver<Arc<[PostSignal]>> {
        self.posts.subscribe()
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

    /// Loads the replica (retrying until it can) and keeps it current until `shutdown`.
    pub async fn run(self, pool: PgPool, wakeup: Wakeup, shutdown: CancellationToken) {
        let mut backoff = Duration::from_millis(100);
        let mut tail = loop {
            let started = Instant::now();
            match load(&pool).await {
                Ok(tail) => {
                    tracing::info!(elapsed = ?started.elapsed(), "graph loaded from the read models");
                    break tail;
                }
                Err(error) => {
                    self.health.failed(&error);
                    tracing::error!(%error, retry_in = ?backoff, "graph load failed");
                    tokio::select! {
                        _ = shutdown.cancelled() => return,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(30));
                }
            }
        };
        let mut held = HELD_RETRY;
        backoff = Duration::from_millis(100);
        while !shutdown.is_cancelled() {
            let step = tail.step(&pool).await;
            if step.is_ok() {
                self.health.succeeded();
            }
            let pause = match step {
                Ok(Some(graph)) => {
                    self.publish(graph);
                    backoff = Duration::from_millis(100);
                    held = HELD_RETRY;
                    continue;
                }
                Ok(None) => match log::ahead(&pool, tail.position).await {
                    // Committed events wait behind an older open transaction: they send no
                    // further wake-up when it ends.
                    Ok(ahead) if ahead.unsettled || ahead.settled => {
                        let pause = held;
                        held = (held * 2).min(POLL);
                        Some(pause)
                    }
                    Ok(_) => {
                        held = HELD_RETRY;
                        None
                    }
                    Err(error) => Some(self.failed(&error.into(), &mut backoff)),
                },
                Err(error) => Some(self.failed(&error, &mut backoff)),
            };
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = async {
                    match pause {
                        Some(pause) => tokio::time::sleep(pause).await,
                        None => wakeup.wait(POLL).await,
                    }
                } => {}
            }
        }
    }

    fn failed(&self, error: &ProjectionError, backoff: &mut Duration) -> Duration {
        self.health.failed(error);
        metrics::counter!("relations_graph_errors_total").increment(1);
        tracing::error!(%error, retry_in = ?*backoff, "graph tail failed");
        let pause = *backoff;
        *backoff = (*backoff * 2).min(Duration::from_secs(30));
        pause
    }

    /// Installs the tail's graph (its first load) or its advance.
    fn publish(&self, update: Update) {
        let mut signals: Vec<PostSignal> = Vec::new();
        let position = {
            let mut guard = self.graph.write().unwrap_or_else(|e| e.into_inner());
            match update {
                Update::Replaying => return,
                Update::Loaded(graph) => *guard = Some(*graph),
                Update::Changes(changes, position, posts) => {
                    signals = posts;
                    let graph = guard.as_mut().expect("changes come after the load");
                    for change in changes {
                        graph.apply(change);
                    }
                    graph.advance(position);
                }
            }
            let graph = guard.as_ref().expect("just set");
            metrics::gauge!("relations_graph_follows").set(graph.follows() as f64);
            metrics::gauge!("relations_graph_users").set(graph.users() as f64);
            // Walking every node costs: the size is refreshed every few seconds, not per batch.
            let mut sized = self.sized.lock().unwrap_or_else(|e| e.into_inner());
            if sized.is_none_or(|at| at.elapsed() >= SIZE_EVERY) {
                *sized = Some(Instant::now());
                metrics::gauge!("relations_graph_bytes").set(graph.heap_bytes() as f64);
            }
            graph.position()
        };
        self.position.send_replace(Some(position));
        if !signals.is_empty() {
            // Nobody listening is fine.
            let _ = self.posts.send(signals.into());
        }
    }
}

/// What the tail hands the replica.
enum Update {
    /// The graph after its replay (installed whole).
    Loaded(Box<MemoryGraph>),
    /// Changes to apply, the position they bring it to, and the batch's post events.
    Changes(Vec<Change>, LogPosition, Vec<PostSignal>),
    /// The load's replay moved on; nothing to install yet.
    Replaying,
}

/// The tail's own state: where it has read to, and until where each kind of event is already in
/// the loaded graph.
struct Tail {
    /// The graph being replayed, until it reaches both checkpoints; then `None` (it lives in
    /// the replica).
    pending: Option<Box<MemoryGraph>>,
    position: LogPosition,
    /// Relation events up to here were in `rm_follows` and `rm_blocks`.
    relations_loaded: LogPosition,
    /// Post events up to here were in `feed_authors`.
    posts_loaded: LogPosition,
    /// Account events up to here were folded by the load.
    accounts_loaded: LogPosition,
}

impl Tail {
    /// Reads and decodes the next batch. `None` when there was nothing below the horizon.
    async fn step(&mut self, pool: &PgPool) -> Result<Option<Update>, ProjectionError> {
        let events = {
            let mut conn = pool.acquire().await?;
            log::read_after(&mut conn, self.position, BATCH).await?
        };
        let Some(last) = events.last().map(|e| e.position) else {
            // Caught up: a finished replay is installed now.
            return Ok(self.pending.take().map(Update::Loaded));
        };
        let (changes, posts) = self.decode(&events)?;
        self.position = last;
        metrics::counter!("relations_graph_events_total").increment(events.len() as u64);
        let Some(graph) = &mut self.pending else {
            return Ok(Some(Update::Changes(changes, last, posts)));
        };
        for change in changes {
            graph.apply(change);
        }
        graph.advance(last);
        Ok(Some(Update::Replaying))
    }

    /// The batch's changes, and its post events (for the live feed stream).
    fn decode(
        &self,
        events: &[RecordedEvent],
    ) -> Result<(Vec<Change>, Vec<PostSignal>), ProjectionError> {
        let mut changes = Vec::with_capacity(events.len());
        let mut posts = Vec::new();
        for event in events {
            if event.stream_type == RelationPair::TYPE && event.position > self.relations_loaded {
                let decoded: RelationEvent = decode(event)?;
                changes.push(Change::of_relation(&decoded, event.occurred_at));
            } else if event.stream_type == Post::TYPE && event.position > self.posts_loaded {
                let decoded: PostEvent = decode(event)?;
                changes.push(Change::of_post(&decoded));
                posts.push(PostSignal {
                    position: event.position,
                    event: decoded,
                });
            } else if event.stream_type == Account::TYPE && event.position > self.accounts_loaded {
                changes.push(Change::Account(decode::<AccountEvent>(event)?));
            }
        }
        Ok((changes, posts))
    }
}

/// Reads the read models and their checkpoints in one snapshot; the tail then replays from the
/// lower checkpoint.
async fn load(pool: &PgPool) -> Result<Tail, ProjectionError> {
    let mut graph = MemoryGraph::default();
    let mut tx = pool.begin().await?;
    let result = async {
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await?;
        let relations_loaded = checkpoint::read(&mut *tx, relations::NAME).await?;
        let posts_loaded = checkpoint::read(&mut *tx, feed::NAME).await?;
        let mut rows =
            sqlx::query("SELECT follower, followee, since FROM rm_follows").fetch(&mut *tx);
        let mut follows = Vec::new();
        while let Some(row) = rows.try_next().await? {
            follows.push(edge_row(&row)?);
        }
        drop(rows);
        graph.load_follows(follows);
        let mut rows = sqlx::query("SELECT blocker, blocked, since FROM rm_blocks").fetch(&mut *tx);
        while let Some(row) = rows.try_next().await? {
            let (a, b, since) = edge_row(&row)?;
            graph.apply(Change::Block(a, b, since));
        }
        drop(rows);
        let mut rows =
            sqlx::query("SELECT requester, target, since FROM rm_follow_requests").fetch(&mut *tx);
        while let Some(row) = rows.try_next().await? {
            let (a, b, since) = edge_row(&row)?;
            graph.apply(Change::Request(a, b, since));
        }
        drop(rows);
        let mut rows =
            sqlx::query("SELECT muter, muted, since, until FROM rm_mutes").fetch(&mut *tx);
        while let Some(row) = rows.try_next().await? {
            let (a, b, since) = edge_row(&row)?;
            let until: Option<chrono::DateTime<chrono::Utc>> = row.try_get(3)?;
            graph.apply(Change::Mute(
                a,
                b,
                since,
                until.map(|t| t.timestamp_micros()),
            ));
        }
        drop(rows);
        let mut rows =
            sqlx::query("SELECT author, posts FROM feed_authors WHERE posts <> 0").fetch(&mut *tx);
        while let Some(row) = rows.try_next().await? {
            let (author, posts): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
            graph.apply(Change::Posts(author as u64, posts));
        }
        drop(rows);
        // Accounts are few: their events up to where the tail starts, read in full.
        let accounts_loaded = relations_loaded.min(posts_loaded);
        for event in log::read_type_until(&mut tx, Account::TYPE, accounts_loaded).await? {
            let event: AccountEvent = decode(&event).map_err(|e| sqlx::Error::Decode(e.into()))?;
            graph.apply(Change::Account(event));
        }
        Ok::<_, sqlx::Error>((relations_loaded, posts_loaded, accounts_loaded))
    }
    .await;
    let (relations_loaded, posts_loaded, accounts_loaded) =
        relations_store::db::end_transaction(tx, result, |_| true).await?;
    graph.advance(accounts_loaded);
    Ok(Tail {
        pending: Some(Box::new(graph)),
        position: accounts_loaded,
        relations_loaded,
        posts_loaded,
        accounts_loaded,
    })
}

/// `(from, to, since)` of an edge row.
fn edge_row(row: &sqlx::postgres::PgRow) -> Result<(u64, u64, i64), sqlx::Error> {
    let (a, b): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
    let since: chrono::DateTime<chrono::Utc> = row.try_get(2)?;
    Ok((a as u64, b as u64, since.timestamp_micros()))
}
