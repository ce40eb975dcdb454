//! One way to run a command on any aggregate: group commit.
//!
//! Commands are queued to a few workers. A worker takes every command waiting (up to
//! [`MAX_GROUP`]) and decides them together in one transaction, each step one statement for the
//! whole group (see [`crate::group`]): lock the streams, lock the guard rows, claim the
//! idempotency keys, bring the streams up to date, decide each command in memory in arrival
//! order, append every event, update the guard rows, record the answers, commit. Each command
//! is then answered with its own result and position. PostgreSQL's commit rate, not the number
//! of statements per command, bounds throughput: a group of 64 costs about what one command did.
//!
//! Commands in one group never make each other fail: a refused command appends nothing and the
//! others go on; two commands on one stream are decided one after the other on the state the
//! first left; a key used twice in a group waits for the next group. Streams are cached in
//! process by version and brought up to date under their lock, so a command does not reload its
//! stream; the append's version check stays the only authority.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex as SyncMutex};
use std::time::Duration;

use cqrs_es::Aggregate;
use rand::Rng;
use relations_domain::UserId;
use serde::Serialize;
use sqlx::PgPool;
use tokio::sync::{mpsc, oneshot, Mutex};

use crate::append::Loaded;
use crate::db::end_transaction;
use crate::error::StoreError;
use crate::group::{Decided, Group};
use crate::idempotency::{self, Idempotency, StoredAnswer};
use crate::metadata::EventMetadata;
use crate::position::LogPosition;
use crate::signal::CommitSignal;

/// How many times a group is decided again after losing an optimistic-concurrency race (to a
/// writer outside this service's stream locks) before its commands are told to retry.
const MAX_ATTEMPTS: u32 = 12;

/// The most commands decided in one transaction.
pub(crate) const MAX_GROUP: usize = 128;

/// Streams kept in the in-process cache before it is emptied.
const CACHE_STREAMS: usize = 200_000;

/// A command's result: decided now, or the answer stored under its idempotency key.
#[derive(Debug, Clone, PartialEq)]
pub enum Executed<T> {
    /// Decided by this call.
    Fresh(T),
    /// A retry: the first answer, unchanged; nothing was appended.
    Replayed(StoredAnswer),
}

/// What a group's commands are decided against beyond their streams, read under lock in the
/// group's transaction.
#[derive(Debug, Default)]
pub(crate) struct Guards {
    /// The follow counts of the guard rows the group holds, as its decisions leave them.
    pub following: HashMap<UserId, i64>,
    /// Which of the users the group's commands asked about ([`StoreCommand::locked_target`])
    /// have a locked account (read under a shared lock, held to commit).
    pub locked: HashSet<UserId>,
    /// The relation pairs the group's commands read ([`StoreCommand::pairs`]), locked and
    /// folded, by stream id.
    pub pairs: HashMap<String, relations_domain::RelationPair>,
}

/// A change to the write side's index of pending follow requests: `(target, requester)`, and
/// whether the request is now pending.
pub(crate) type RequestChange = ((UserId, UserId), bool);

/// What the executor needs to know of a command beyond its aggregate.
pub(crate) trait StoreCommand: Send + Sync + 'static {
    /// The aggregate the command is decided on.
    type Aggregate: Aggregate + Clone + Send + Sync + 'static;
    /// What the client is answered (and what an idempotent retry is answered again).
    type Answer: Serialize + Send + Sync + 'static;

    /// The stream the command is decided on.
    fn stream(&self) -> &str;
    /// Who issues it (idempotency keys are per actor).
    fn actor(&self) -> UserId;
    /// The aggregate's command.
    fn command(&self) -> <Self::Aggregate as Aggregate>::Command;
    /// The HTTP status the answer is given with.
    fn status(&self) -> u16 {
        200
    }
    /// The users whose guard rows (`follow_guard`) the command's rules read or its events
    /// change: locked, with the group's, before anything is decided.
    fn guarded(&self) -> Vec<UserId> {
        Vec::new()
    }
    /// The relation pairs whose facts the decision reads (a block between a commenter or
    /// liker and an author): their streams are locked like a relation command's, so the two
    /// never pass each other, and folded before the decision.
    fn pairs(&self) -> Vec<relations_domain::PairId> {
        Vec::new()
    }
    /// The user whose account lock the command's decision reads (a follow's target).
    fn locked_target(&self) -> Option<UserId> {
        None
    }
    /// What the aggregate decides with, given the guard rows as the group has left them.
    fn services(&self, guards: &Guards) -> <Self::Aggregate as Aggregate>::Services;
    /// How the command's events change the guard rows.
    fn deltas(&self, _events: &[<Self::Aggregate as Aggregate>::Event]) -> Vec<(UserId, i32)> {
        Vec::new()
    }
    /// How the command's events change the pending follow requests.
    fn requests(&self, _events: &[<Self::Aggregate as Aggregate>::Event]) -> Vec<RequestChange> {
        Vec::new()
    }
    /// The answer, from the aggregate as the decision left it and where its events ended.
    fn answer(&self, aggregate: &Self::Aggregate, position: Option<LogPosition>) -> Self::Answer;
}

/// A command's result as the executor delivers it.
pub(crate) type Outcome<C> = Result<Executed<<C as StoreCommand>::Answer>, StoreError>;

/// A command waiting for its group.
pub(crate) struct Pending<C: StoreCommand> {
    pub command: C,
    pub metadata: EventMetadata,
    pub idempotency: Option<Idempotency>,
    reply: oneshot::Sender<Outcome<C>>,
}

impl<C: StoreCommand> Pending<C> {
    /// The idempotency key's identity, if the command has one.
    fn key(&self) -> Option<(i64, String)> {
        self.idempotency.as_ref().map(|idem| {
            let (actor, key) = idempotency::key_of(self.command.actor(), idem);
            (actor, key.to_owned())
        })
    }
}

/// Runs commands of one kind against the event store, in groups.
pub(crate) struct Executor<C: StoreCommand> {
    queue: mpsc::Sender<Pending<C>>,
    shared: Arc<Shared<C>>,
}

impl<C: StoreCommand> Clone for Executor<C> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl<C: StoreCommand> Executor<C>
where
    StoreError: From<<C::Aggregate as Aggregate>::Error>,
{
    /// Starts `workers` group workers on `pool` (on the current runtime; they stop when the
    /// last clone of the executor is dropped).
    pub fn spawn(pool: PgPool, signal: CommitSignal, workers: usize) -> Self {
        let (queue, receiver) = mpsc::channel(4 * MAX_GROUP * workers.max(1));
        let shared = Arc::new(Shared {
            pool,
            signal,
            cache: SyncMutex::new(HashMap::new()),
        });
        let receiver = Arc::new(Mutex::new(receiver));
        for _ in 0..workers.max(1) {
            tokio::spawn(work(receiver.clone(), shared.clone()));
        }
        Self { queue, shared }
    }

    /// The aggregate of `stream` as committed now, from this process's cache brought up to date
    /// (no lock: for a check before a command, such as whether a post exists and who wrote it).
    pub async fn peek(&self, stream: &str) -> Result<C::Aggregate, StoreError> {
        let cached = self.shared.cached(stream);
        let mut streams = HashMap::from([(stream.to_owned(), cached)]);
        let mut conn = self.shared.pool.acquire().await?;
        crate::append::catch_up(&mut conn, &mut streams).await?;
        let loaded = streams.remove(stream).expect("the stream asked for");
        let aggregate = loaded.aggregate.clone();
        self.shared.offer(stream, loaded);
        Ok(aggregate)
    }

    /// Decides `command` (in the next group) and appends its events.
    pub async fn execute(
        &self,
        command: C,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Outcome<C> {
        let (reply, answer) = oneshot::channel();
        let pending = Pending {
            command,
            metadata: metadata.clone(),
            idempotency: idempotency.cloned(),
            reply,
        };
        let gone = || StoreError::Database(sqlx::Error::PoolClosed);
        self.queue.send(pending).await.map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }
}

/// What a kind's workers share: the pool, the commit signal and the stream cache.
pub(crate) struct Shared<C: StoreCommand> {
    pool: PgPool,
    signal: CommitSignal,
    /// Streams as last committed by this process, by id.
    cache: SyncMutex<HashMap<String, Loaded<C::Aggregate>>>,
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
        shared.run(group).await;
    }
}

impl<C: StoreCommand> Shared<C>
where
    StoreError: From<<C::Aggregate as Aggregate>::Error>,
{
    /// Decides `group` until it commits (deciding again after lost races), and answers each
    /// command.
    async fn run(&self, group: Vec<Pending<C>>) {
        let mut failure = StoreError::Contended {
            attempts: MAX_ATTEMPTS,
        };
        for round in 1..=MAX_ATTEMPTS {
            match self.attempt(&group).await {
                Ok(Some((outcomes, streams))) => {
                    self.remember(streams);
                    return answer(group, outcomes);
                }
                Ok(None) => {
                    metrics::counter!("relations_command_conflicts_total").increment(1);
                    self.forget(&group);
                    backoff(round).await;
                }
                Err(error) => {
                    self.forget(&group);
                    failure = error;
                    break;
                }
            }
        }
        let failure = Arc::new(failure);
        for pending in group {
            let _ = pending.reply.send(Err(StoreError::Group(failure.clone())));
        }
    }

    /// One transaction for the whole group; `None` after a lost race (rolled back).
    async fn attempt(&self, group: &[Pending<C>]) -> Result<Option<Decided<C>>, StoreError> {
        let streams = {
            let cache = self.cache.lock().expect("not poisoned");
            group
                .iter()
                .map(|p| {
                    let id = p.command.stream();
                    (id.to_owned(), cache.get(id).cloned().unwrap_or_default())
                })
                .collect()
        };
        let mut tx = self.pool.begin().await?;
        let result = Group::new(group, streams).decide(&mut tx).await;
        let decided = end_transaction(tx, result, |decided| decided.is_some()).await?;
        if decided.is_some() {
            self.signal.committed();
        }
        Ok(decided)
    }

    /// A stream as last committed by this process (version 0 when unknown).
    fn cached(&self, stream: &str) -> Loaded<C::Aggregate> {
        let cache = self.cache.lock().expect("not poisoned");
        cache.get(stream).cloned().unwrap_or_default()
    }

    /// Keeps `loaded` unless the cache already holds a later version of the stream.
    fn offer(&self, stream: &str, loaded: Loaded<C::Aggregate>) {
        let mut cache = self.cache.lock().expect("not poisoned");
        if cache
            .get(stream)
            .is_none_or(|known| known.version < loaded.version)
        {
            if cache.len() >= CACHE_STREAMS {
                cache.clear();
            }
            cache.insert(stream.to_owned(), loaded);
        }
    }

    /// Keeps the streams as this group committed them.
    fn remember(&self, streams: HashMap<String, Loaded<C::Aggregate>>) {
        let mut cache = self.cache.lock().expect("not poisoned");
        if cache.len() + streams.len() > CACHE_STREAMS {
            cache.clear();
        }
        cache.extend(streams);
    }

    /// Drops the group's streams from the cache (they may have changed under it).
    fn forget(&self, group: &[Pending<C>]) {
        let mut cache = self.cache.lock().expect("not poisoned");
        for pending in group {
            cache.remove(pending.command.stream());
        }
    }
}

/// Sends each command its outcome.
fn answer<C: StoreCommand>(group: Vec<Pending<C>>, outcomes: Vec<Outcome<C>>) {
    for (pending, outcome) in group.into_iter().zip(outcomes) {
        // A client that went away is not waited for.
        let _ = pending.reply.send(outcome);
    }
}

/// Waits a random while, growing with the attempt, so racing writers spread out.
async fn backoff(attempt: u32) {
    let ceiling_ms = 2u64 << attempt.min(6);
    let ms = rand::rng().random_range(0..=ceiling_ms);
    tokio::time::sleep(Duration::from_millis(ms)).await;
}
