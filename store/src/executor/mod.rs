//! One way to run a command on any aggregate: group commit.
//!
//! Commands are queued to a few workers. A worker takes every command waiting (up to
//! [`MAX_GROUP`]) and decides them together in one transaction, each step one statement for the
//! whole group (see [`group`]): lock the streams, lock what the kind's [`Guard`] reads, claim
//! the idempotency keys, bring the streams up to date, decide each command in memory in arrival
//! order, append every event, write what the guard changed, record the answers, commit. Each
//! command is then answered with its own outcome and position. PostgreSQL's commit rate, not the number
//! of statements per command, bounds throughput: a group of 64 costs about what one command did.
//!
//! Commands in one group never make each other fail: a refused command appends nothing and the
//! others go on; two commands on one stream are decided one after the other on the state the
//! first left; a key used twice in a group waits for the next group. Streams are cached in
//! process by version and brought up to date under their lock, so a command does not reload its
//! stream; the append's version check stays the only authority.
//!
//! The executor knows no rule of any aggregate: a kind of command brings its own guard
//! (the `guards` module), and the caller says how an outcome is kept under its idempotency key.

use std::collections::{HashMap, HashSet, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex as SyncMutex};
use std::time::Duration;

use cqrs_es::Aggregate;
use futures::FutureExt;
use sqlx::{Connection, PgConnection, PgPool};
use tokio::sync::{mpsc, oneshot, Mutex};
use tokio::time::Instant;

use crate::append::Loaded;
use crate::db::end_transaction;
use crate::error::StoreError;
use crate::faults;
use crate::idempotency::Idempotency;
use crate::keys::Keyring;
use crate::metadata::EventMetadata;
use crate::retry;
use crate::signal::CommitSignal;
use group::{Committed, Group};

use command::Reply;
pub use command::{Executed, Render};
pub(crate) use command::{Guard, Pending, StoreCommand};

mod cache;
mod command;
mod group;

use cache::StreamCache;

/// The most commands decided in one transaction.
pub(crate) const MAX_GROUP: usize = 128;

/// How many streams of `A` the cache holds, and its size: an estimate from the entries'
/// inline size (an aggregate's own heap, small for every aggregate here, is not counted).
/// Looked up each time: an executor may start before the metrics recorder.
fn publish_size<A: Aggregate>(entries: usize) {
    let (entries, kind) = (entries as f64, A::TYPE);
    metrics::gauge!("relations_stream_cache_streams", "aggregate" => kind).set(entries);
    metrics::gauge!("relations_stream_cache_bytes", "aggregate" => kind)
        .set(entries * entry_bytes::<A>());
}

/// An estimate of one cache entry's bytes: the key and the loaded stream inline, the key's
/// heap (stream ids are short: an allocation of 32 bytes), and the table's control byte and
/// spare room (load factor 7/8).
fn entry_bytes<A>() -> f64 {
    (std::mem::size_of::<(String, Loaded<A>)>() + 32) as f64 * 8.0 / 7.0 + 1.0
}

/// How a kind's commands are run: how many groups at once, and how long a command may wait.
#[derive(Debug, Clone, Copy)]
pub struct Workers {
    /// Groups decided at once (at least one).
    pub count: usize,
    /// The longest a caller waits for its command, queue included, and the longest a group's
    /// transaction may take, commit included. A group that overruns it is abandoned with its
    /// connection (closed, never returned to the pool: it may be hung on a half-open socket or
    /// on a commit waiting for a synchronous standby that is gone) and its commands are
    /// answered [`StoreError::DeadlineExceeded`] (unavailable, retry: the outcome is unknown).
    pub deadline: Duration,
}

impl Workers {
    /// `count` workers with the default deadline of 5 s.
    pub fn new(count: usize) -> Self {
        Self {
            count,
            deadline: Duration::from_secs(5),
        }
    }
}

/// Runs commands of one kind against the event store, in groups.
pub(crate) struct Executor<C: StoreCommand> {
    queue: mpsc::Sender<Pending<C>>,
    shared: Arc<Shared<C>>,
    deadline: Duration,
}

impl<C: StoreCommand> Clone for Executor<C> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            shared: self.shared.clone(),
            deadline: self.deadline,
        }
    }
}

impl<C: StoreCommand> Executor<C>
where
    StoreError: From<<C::Aggregate as Aggregate>::Error>,
{
    /// Starts `workers.count` group workers on `pool` (on the current runtime; they stop when
    /// the last clone of the executor is dropped); fresh outcomes are kept under their
    /// idempotency keys as `render` gives them. A kind whose events carry content seals it
    /// with `keys` (a kind without content has none).
    pub fn spawn(
        pool: PgPool,
        keys: Option<Keyring>,
        signal: CommitSignal,
        workers: Workers,
        render: Render<C::Outcome>,
    ) -> Self {
        let count = workers.count.max(1);
        let (queue, receiver) = mpsc::channel(4 * MAX_GROUP * count);
        let shared = Arc::new(Shared {
            pool,
            keys,
            signal,
            render,
            deadline: workers.deadline,
            cache: SyncMutex::new(StreamCache::new(cache::GENERATION)),
        });
        let receiver = Arc::new(Mutex::new(receiver));
        for _ in 0..count {
            tokio::spawn(work(receiver.clone(), shared.clone()));
        }
        Self {
            queue,
            shared,
            deadline: workers.deadline,
        }
    }

    /// The aggregate of `stream` as committed now, from this process's cache brought up to date
    /// (no lock: for a check before a command, such as whether a post exists and who wrote it),
    /// and the stream's version.
    pub async fn peek(&self, stream: &str) -> Result<(C::Aggregate, usize), StoreError> {
        let cached = self.shared.cached(stream);
        let mut streams = HashMap::from([(stream.to_owned(), cached)]);
        let mut conn = self.shared.pool.acquire().await?;
        crate::append::catch_up(&mut conn, &mut streams).await?;
        let loaded = streams.remove(stream).expect("the stream asked for");
        let seen = (loaded.aggregate.clone(), loaded.version);
        self.shared.offer(stream, loaded);
        Ok(seen)
    }

    /// The aggregate of `stream` as this process last knew it, and the stream's version: from
    /// the cache, with no round trip, when it holds the stream, else [`Executor::peek`]. It may
    /// be behind what another instance committed since; a command that must not act on stale
    /// state checks the stream again under lock (the like guard does, for a post's deletion).
    pub async fn known(&self, stream: &str) -> Result<(C::Aggregate, usize), StoreError> {
        match self.shared.cached(stream) {
            Loaded { version: 0, .. } => self.peek(stream).await,
            Loaded { aggregate, version } => Ok((aggregate, version)),
        }
    }

    /// Decides `command` (in the next group) and appends its events. Waits at most the
    /// deadline: then the answer is [`StoreError::DeadlineExceeded`], and the command may or
    /// may not be committed (a group still running may commit it; a command still queued is
    /// dropped once its worker sees that nobody waits). A retry with the same idempotency key
    /// finds out: it replays the stored answer, or decides the command afresh.
    pub async fn execute(
        &self,
        command: C,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Reply<C> {
        let (reply, answer) = oneshot::channel();
        let pending = Pending {
            command,
            metadata: metadata.clone(),
            idempotency: idempotency.cloned(),
            reply,
        };
        let gone = || StoreError::Database(sqlx::Error::PoolClosed);
        let deadline = Instant::now() + self.deadline;
        let overrun = || StoreError::DeadlineExceeded(self.deadline);
        let queued = tokio::time::timeout_at(deadline, self.queue.send(pending)).await;
        queued.map_err(|_| overrun())?.map_err(|_| gone())?;
        match tokio::time::timeout_at(deadline, answer).await {
            // Dropped unanswered: the group's worker failed (a panic) after taking it.
            Ok(reply) => reply.map_err(|_| StoreError::Unanswered)?,
            Err(_) => {
                metrics::counter!("relations_command_deadline_exceeded_total", "where" => "caller")
                    .increment(1);
                Err(overrun())
            }
        }
    }
}

/// What a kind's workers share: the pool, the commit signal, the caller's rendering of
/// outcomes and the stream cache.
pub(crate) struct Shared<C: StoreCommand> {
    pool: PgPool,
    /// What seals the kind's content, if its events carry any.
    keys: Option<Keyring>,
    signal: CommitSignal,
    render: Render<C::Outcome>,
    /// The longest one group may take, every attempt included.
    deadline: Duration,
    /// Streams as last committed by this process, by id (two bounded generations).
    cache: SyncMutex<StreamCache<C::Aggregate>>,
}

/// A worker: takes what is queued, sets aside second uses of a key, runs the group.
async fn work<C: StoreCommand>(
    queue: Arc<Mutex<mpsc::Receiver<Pending<C>>>>,
    shared: Arc<Shared<C>>,
) where
    StoreError: From<<C::Aggregate as Aggregate>::Error>,
{
    let mut carried: VecDeque<Pending<C>> = VecDeque::new();
    loop {
        let mut group: Vec<Pending<C>> = carried.drain(..).collect();
        // A worker that carries commands must not wait behind one waiting for the queue.
        let receiver = match group.is_empty() {
            true => Some(queue.lock().await),
            false => queue.try_lock().ok(),
        };
        if let Some(mut receiver) = receiver {
            if group.is_empty() {
                match receiver.recv().await {
                    Some(pending) => group.push(pending),
                    None => return,
                }
            }
            while group.len() < MAX_GROUP {
                match receiver.try_recv() {
                    Ok(pending) => group.push(pending),
                    Err(_) => break,
                }
            }
        }
        // A command whose caller has gone (its request ran out of time and was answered 503)
        // is not decided: after a stall of the database (a failover, a commit waiting for its
        // synchronous standby) the queue would otherwise hold work nobody waits for, decided
        // ahead of the retries that are waited for. The client retries with the same key.
        let before = group.len();
        group.retain(|pending| !pending.reply.is_closed());
        if group.len() < before {
            metrics::counter!("relations_commands_abandoned_total")
                .increment((before - group.len()) as u64);
        }
        if group.is_empty() {
            continue;
        }
        let mut keys = HashSet::new();
        let (group, later): (Vec<_>, Vec<_>) = group
            .into_iter()
            .partition(|p| p.key().is_none_or(|key| keys.insert(key)));
        carried.extend(later);
        metrics::histogram!("relations_command_group_size").record(group.len() as f64);
        // A panic while deciding a group (a bug, or a fail point) ends that group, not the
        // worker: its callers, dropped unanswered, are told the outcome is unknown
        // ([`StoreError::Unanswered`]); its transaction, dropped mid-way, rolls back.
        if let Err(panic) = AssertUnwindSafe(shared.run(group)).catch_unwind().await {
            metrics::counter!("relations_command_group_panics_total").increment(1);
            let panic = panic_message(panic.as_ref());
            tracing::error!(
                panic,
                "a command group panicked; its commands are answered unavailable"
            );
        }
    }
}

impl<C: StoreCommand> Shared<C>
where
    StoreError: From<<C::Aggregate as Aggregate>::Error>,
{
    /// Decides `group` until it commits (deciding again after lost races), and answers each
    /// command. The group's streams leave the cache whenever an attempt does not commit (they
    /// may have changed under it).
    async fn run(&self, group: Vec<Pending<C>>) {
        let deadline = Instant::now() + self.deadline;
        let committed = retry::until_committed(|| async {
            let attempt = self.attempt(&group, deadline).await;
            if !matches!(attempt, Ok(Some(_))) {
                self.forget(&group);
            }
            attempt
        })
        .await;
        match committed {
            Ok((replies, streams)) => {
                self.remember(streams);
                // Committed, not yet answered: an error here loses the answers, as a lost
                // connection would (the callers retry under their keys).
                if let Err(injected) = faults::point(faults::AFTER_COMMIT).await {
                    for pending in group {
                        let _ = pending.reply.send(Err(StoreError::Injected(injected)));
                    }
                    return;
                }
                answer(group, replies);
            }
            Err(failure) => {
                let failure = Arc::new(failure);
                for pending in group {
                    let _ = pending.reply.send(Err(StoreError::Group(failure.clone())));
                }
            }
        }
    }

    /// One transaction for the whole group, on a connection of its own, ended by `deadline`;
    /// `None` after a lost race (rolled back).
    ///
    /// Past the deadline the transaction is abandoned where it stands and its connection is
    /// detached from the pool and closed, not returned: it may be stuck on a socket whose peer
    /// is gone, or on a COMMIT waiting for a synchronous standby, and the next group must not
    /// inherit it. Closing it makes PostgreSQL roll back whatever had not committed; a COMMIT
    /// already sent may still take effect, so the outcome is unknown and is never
    /// acknowledged: the callers get [`StoreError::DeadlineExceeded`], and a retry under the
    /// same idempotency key waits on the key's row lock, then replays or decides afresh.
    async fn attempt(
        &self,
        group: &[Pending<C>],
        deadline: Instant,
    ) -> Result<Option<Committed<C>>, StoreError> {
        let overrun = || {
            metrics::counter!("relations_command_deadline_exceeded_total", "where" => "group")
                .increment(1);
            StoreError::DeadlineExceeded(self.deadline)
        };
        let mut conn = tokio::time::timeout_at(deadline, self.pool.acquire())
            .await
            .map_err(|_| overrun())??;
        match tokio::time::timeout_at(deadline, self.transaction(&mut conn, group)).await {
            Ok(decided) => decided,
            Err(_) => {
                tracing::warn!(
                    commands = group.len(),
                    "a command group overran its deadline; its connection is closed"
                );
                drop(conn.detach());
                Err(overrun())
            }
        }
    }

    /// The group's transaction on `conn`.
    async fn transaction(
        &self,
        conn: &mut PgConnection,
        group: &[Pending<C>],
    ) -> Result<Option<Committed<C>>, StoreError> {
        let streams = {
            let mut cache = self.cache();
            group
                .iter()
                .map(|p| {
                    let id = p.command.stream();
                    (id.to_owned(), cache.get(id).unwrap_or_default())
                })
                .collect()
        };
        let mut tx = conn.begin().await?;
        let result = Group::new(group, streams, self.render, self.keys.as_ref())
            .decide(&mut tx)
            .await;
        let decided = end_transaction(tx, result, |decided| decided.is_some()).await?;
        if decided.is_some() {
            self.signal.committed();
        }
        Ok(decided)
    }

    /// The stream cache. A panic while it was held (a bug) may have left it half-changed: it
    /// is only a shortcut (every group brings its streams up to date under their locks, and
    /// the append's version check is the authority), so it is emptied, not trusted.
    fn cache(&self) -> std::sync::MutexGuard<'_, StreamCache<C::Aggregate>> {
        self.cache.lock().unwrap_or_else(|poisoned| {
            self.cache.clear_poison();
            let mut cache = poisoned.into_inner();
            *cache = StreamCache::new(cache::GENERATION);
            cache
        })
    }

    /// A stream as last committed by this process (version 0 when unknown).
    fn cached(&self, stream: &str) -> Loaded<C::Aggregate> {
        let mut cache = self.cache();
        cache.get(stream).unwrap_or_default()
    }

    /// Keeps `loaded` unless the cache already holds a later version of the stream.
    fn offer(&self, stream: &str, loaded: Loaded<C::Aggregate>) {
        let mut cache = self.cache();
        if cache.version(stream) < loaded.version {
            cache.insert(stream.to_owned(), loaded);
            publish_size::<C::Aggregate>(cache.len());
        }
    }

    /// Keeps the streams as this group committed them.
    fn remember(&self, streams: HashMap<String, Loaded<C::Aggregate>>) {
        let mut cache = self.cache();
        for (stream, loaded) in streams {
            cache.insert(stream, loaded);
        }
        publish_size::<C::Aggregate>(cache.len());
    }

    /// Drops the group's streams from the cache (they may have changed under it).
    fn forget(&self, group: &[Pending<C>]) {
        let mut cache = self.cache();
        for pending in group {
            cache.remove(pending.command.stream());
        }
    }
}

/// What a panic said (its payload, when it is text).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}

/// Sends each command its reply.
fn answer<C: StoreCommand>(group: Vec<Pending<C>>, replies: Vec<Reply<C>>) {
    for (pending, reply) in group.into_iter().zip(replies) {
        // A client that went away is not waited for.
        let _ = pending.reply.send(reply);
    }
}
