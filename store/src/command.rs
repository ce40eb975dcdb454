//! One way to run a command on any aggregate: load its stream, and in one transaction per
//! attempt claim the idempotency key, let the command lock what it guards, decide, append, let
//! it update what it guards, and record the answer. A lost race for the stream's next version
//! is decided again; every transaction is ended explicitly.

use std::time::Duration;

use async_trait::async_trait;
use cqrs_es::event_sink::EventSink;
use cqrs_es::Aggregate;
use postgres_es::PostgresEventRepository;
use rand::Rng;
use relations_domain::UserId;
use serde::Serialize;
use sqlx::{PgConnection, PgPool};

use crate::append::{append, load, Loaded};
use crate::db::end_transaction;
use crate::error::StoreError;
use crate::idempotency::{self, Idempotency, StoredAnswer};
use crate::metadata::EventMetadata;
use crate::position::LogPosition;
use crate::signal::CommitSignal;

/// How many times a command is decided again after losing an optimistic-concurrency race
/// before the client is told to retry.
const MAX_ATTEMPTS: u32 = 12;

/// A command's result: decided now, or the answer stored under its idempotency key.
#[derive(Debug, Clone, PartialEq)]
pub enum Executed<T> {
    /// Decided by this call.
    Fresh(T),
    /// A retry: the first answer, unchanged; nothing was appended.
    Replayed(StoredAnswer),
}

/// How one attempt at a command ended, before its transaction is finished.
pub(crate) enum Attempt<T> {
    /// Decided (changed or not): commit.
    Decided(T),
    /// A retry under a stored key: roll back, answer as before.
    Replayed(StoredAnswer),
    /// Lost the race for a stream's next version: roll back and decide again.
    Conflict,
}

/// What the executor needs to know of a command beyond its aggregate.
#[async_trait]
pub(crate) trait StoreCommand: Send + Sync {
    /// The aggregate the command is decided on.
    type Aggregate: Aggregate + Send;
    /// What the client is answered (and what an idempotent retry is answered again).
    type Answer: Serialize + Send;

    /// The stream the command is decided on.
    fn stream(&self) -> String;
    /// Who issues it (idempotency keys are per actor).
    fn actor(&self) -> UserId;
    /// The aggregate's command.
    fn command(&self) -> <Self::Aggregate as Aggregate>::Command;
    /// The HTTP status the answer is given with.
    fn status(&self) -> u16 {
        200
    }

    /// Inside the attempt's transaction, before deciding: lock the rows the command's rules
    /// depend on, and return what the aggregate decides with.
    async fn prepare(
        &self,
        conn: &mut PgConnection,
    ) -> Result<<Self::Aggregate as Aggregate>::Services, StoreError>;

    /// Inside the transaction, after the append: bring the guarded rows up to date.
    async fn appended(
        &self,
        _conn: &mut PgConnection,
        _events: &[<Self::Aggregate as Aggregate>::Event],
    ) -> Result<(), StoreError> {
        Ok(())
    }

    /// The answer, from the aggregate as the decision left it and where its events ended.
    fn answer(&self, aggregate: &Self::Aggregate, position: Option<LogPosition>) -> Self::Answer;
}

/// Runs commands against the event store.
#[derive(Clone)]
pub(crate) struct Executor {
    pub pool: PgPool,
    pub signal: CommitSignal,
}

impl Executor {
    /// Decides `command` and appends its events, deciding again after lost races.
    pub async fn execute<C: StoreCommand>(
        &self,
        command: &C,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<C::Answer>, StoreError>
    where
        StoreError: From<<C::Aggregate as Aggregate>::Error>,
    {
        let stream = command.stream();
        let repo = PostgresEventRepository::new(self.pool.clone());
        for round in 1..=MAX_ATTEMPTS {
            tracing::Span::current().record("attempts", round);
            let loaded = load::<C::Aggregate>(&repo, &stream).await?;
            let mut tx = self.pool.begin().await?;
            let result = attempt(&mut tx, command, &stream, loaded, metadata, idempotency).await;
            match end_transaction(tx, result, |a| matches!(a, Attempt::Decided(_))).await? {
                Attempt::Decided(answer) => {
                    self.signal.committed();
                    return Ok(Executed::Fresh(answer));
                }
                Attempt::Replayed(answer) => return Ok(Executed::Replayed(answer)),
                Attempt::Conflict => {
                    metrics::counter!("relations_command_conflicts_total").increment(1);
                    backoff(round).await;
                }
            }
        }
        Err(StoreError::Contended {
            attempts: MAX_ATTEMPTS,
        })
    }
}

/// One attempt inside `tx`.
async fn attempt<C: StoreCommand>(
    tx: &mut PgConnection,
    command: &C,
    stream: &str,
    loaded: Loaded<C::Aggregate>,
    metadata: &EventMetadata,
    idempotency: Option<&Idempotency>,
) -> Result<Attempt<C::Answer>, StoreError>
where
    StoreError: From<<C::Aggregate as Aggregate>::Error>,
{
    if let Some(idem) = idempotency {
        if let Some(answer) = idempotency::claim(tx, command.actor(), idem).await? {
            return Ok(Attempt::Replayed(answer));
        }
    }
    let services = command.prepare(tx).await?;
    let mut aggregate = loaded.aggregate;
    let sink = EventSink::default();
    aggregate
        .handle(command.command(), &services, &sink)
        .await?;
    let events = sink.collect().await;
    let position = if events.is_empty() {
        None
    } else {
        match append::<C::Aggregate>(tx, stream, loaded.version, &events, metadata).await? {
            Attempt::Decided(position) => Some(position),
            _ => return Ok(Attempt::Conflict),
        }
    };
    command.appended(tx, &events).await?;
    let answer = command.answer(&aggregate, position);
    if let Some(idem) = idempotency {
        idempotency::record(tx, command.actor(), idem, command.status(), &answer).await?;
    }
    Ok(Attempt::Decided(answer))
}

/// Waits a random while, growing with the attempt, so racing writers spread out.
async fn backoff(attempt: u32) {
    let ceiling_ms = 2u64 << attempt.min(6);
    let ms = rand::rng().random_range(0..=ceiling_ms);
    tokio::time::sleep(Duration::from_millis(ms)).await;
}
