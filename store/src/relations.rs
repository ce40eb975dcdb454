//! Relation commands: follow, unfollow, block, unblock, each decided on its pair's stream and
//! appended in one transaction with the guard rows and the idempotency answer.

use std::time::Duration;

use cqrs_es::event_sink::EventSink;
use cqrs_es::Aggregate;
use postgres_es::PostgresEventRepository;
use rand::Rng;
use relations_domain::{
    following_deltas, guarded_users, FollowBudget, Relation, RelationCommand, RelationError,
    RelationPair, UserId,
};
use serde::Serialize;
use sqlx::{PgConnection, PgPool};

use crate::append::{append, load};
use crate::error::StoreError;
use crate::idempotency::{self, Idempotency, StoredAnswer};
use crate::metadata::EventMetadata;
use crate::position::LogPosition;

/// How many times a command is decided again after losing an optimistic-concurrency race
/// before the client is told to retry.
const MAX_ATTEMPTS: u32 = 12;

/// The answer to a relation command (SPEC.md: `{changed, relation, position}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RelationOutcome {
    /// Whether any event was appended.
    pub changed: bool,
    /// The actor's relation to the target as the decision left it.
    pub relation: Relation,
    /// Where the appended events ended in the log; none when nothing changed.
    pub position: Option<LogPosition>,
}

/// A command's result: decided now, or the answer stored under its idempotency key.
#[derive(Debug, Clone, PartialEq)]
pub enum Executed<T> {
    /// Decided by this call.
    Fresh(T),
    /// A retry: the first answer, unchanged; nothing was appended.
    Replayed(StoredAnswer),
}

/// Carries out relation commands against the event store.
#[derive(Clone)]
pub struct RelationStore {
    pool: PgPool,
    follow_limit: u32,
}

impl RelationStore {
    /// A store on `pool` that enforces `follow_limit` (rule 3).
    pub fn new(pool: PgPool, follow_limit: u32) -> Self {
        Self { pool, follow_limit }
    }

    /// Decides `command` and appends its events, retrying lost races inside.
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = command.name(), user.id = %command.actor(), target.id = %command.target(), attempts
    ))]
    pub async fn execute(
        &self,
        command: RelationCommand,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<RelationOutcome>, StoreError> {
        let stream = command.pair().map_err(RelationError::from)?.stream_id();
        let repo = PostgresEventRepository::new(self.pool.clone());
        for attempt in 1..=MAX_ATTEMPTS {
            tracing::Span::current().record("attempts", attempt);
            let loaded = load::<RelationPair>(&repo, &stream).await?;
            let mut tx = self.pool.begin().await?;
            let result = self
                .attempt(&mut tx, command, &stream, loaded, metadata, idempotency)
                .await;
            // Every path ends the transaction explicitly: one left to a lazy rollback would sit
            // idle holding a transaction id (guard rows are locked), stalling every log reader.
            match result {
                Ok(Attempt::Decided(outcome)) => {
                    tx.commit().await?;
                    return Ok(Executed::Fresh(outcome));
                }
                Ok(Attempt::Replayed(answer)) => {
                    tx.rollback().await?;
                    return Ok(Executed::Replayed(answer));
                }
                Ok(Attempt::Conflict) => {
                    tx.rollback().await?;
                    metrics::counter!("relations_command_conflicts_total").increment(1);
                    backoff(attempt).await;
                }
                Err(error) => {
                    let _ = tx.rollback().await;
                    return Err(error);
                }
            }
        }
        Err(StoreError::Contended {
            attempts: MAX_ATTEMPTS,
        })
    }
}

/// How one attempt at a command ended, before its transaction is finished.
enum Attempt {
    /// Decided (changed or not): commit.
    Decided(RelationOutcome),
    /// A retry under a stored key: roll back, answer as before.
    Replayed(StoredAnswer),
    /// Lost the race for the stream's next version: roll back and decide again.
    Conflict,
}

impl RelationStore {
    /// One attempt inside `tx`: claim the idempotency key, lock the guard rows, decide, append,
    /// update the guards, record the answer.
    async fn attempt(
        &self,
        tx: &mut PgConnection,
        command: RelationCommand,
        stream: &str,
        loaded: crate::append::Loaded<RelationPair>,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Attempt, StoreError> {
        if let Some(idem) = idempotency {
            if let Some(answer) = idempotency::claim(tx, command.actor(), idem).await? {
                return Ok(Attempt::Replayed(answer));
            }
        }
        let budget = lock_guards(tx, command, self.follow_limit).await?;
        let mut pair = loaded.aggregate;
        let sink = EventSink::default();
        pair.handle(command, &budget, &sink).await?;
        let events = sink.collect().await;
        let position = if events.is_empty() {
            None
        } else {
            match append::<RelationPair>(tx, stream, loaded.version, &events, metadata).await? {
                Ok(position) => Some(position),
                Err(_conflict) => return Ok(Attempt::Conflict),
            }
        };
        for (user, delta) in following_deltas(&events) {
            sqlx::query("UPDATE follow_guard SET following = following + $2 WHERE user_id = $1")
                .bind(user.get())
                .bind(delta)
                .execute(&mut *tx)
                .await?;
        }
        let outcome = RelationOutcome {
            changed: position.is_some(),
            relation: pair.relation(command.actor(), command.target()),
            position,
        };
        if let Some(idem) = idempotency {
            idempotency::record(tx, command.actor(), idem, 200, &outcome).await?;
        }
        Ok(Attempt::Decided(outcome))
    }
}

/// Locks the guard rows of every user whose following count the command may change, in
/// ascending order, and returns the actor's budget. Taken before the append, so a transaction
/// that holds a stream's new version never waits for a guard row.
async fn lock_guards(
    conn: &mut PgConnection,
    command: RelationCommand,
    limit: u32,
) -> Result<FollowBudget, StoreError> {
    let mut budget = FollowBudget {
        following: 0,
        limit,
    };
    for user in guarded_users(command) {
        let following = lock_guard(conn, user).await?;
        if user == command.actor() {
            budget.following = following;
        }
    }
    Ok(budget)
}

async fn lock_guard(conn: &mut PgConnection, user: UserId) -> Result<u32, StoreError> {
    // DO UPDATE (to the same value) takes the row lock and returns the count in one round trip.
    let following: i32 = sqlx::query_scalar(
        "INSERT INTO follow_guard (user_id) VALUES ($1)
         ON CONFLICT (user_id) DO UPDATE SET following = follow_guard.following
         RETURNING following",
    )
    .bind(user.get())
    .fetch_one(conn)
    .await?;
    Ok(following.max(0) as u32)
}

/// Waits a random while, growing with the attempt, so racing writers spread out.
async fn backoff(attempt: u32) {
    let ceiling_ms = 2u64 << attempt.min(6);
    let ms = rand::rng().random_range(0..=ceiling_ms);
    tokio::time::sleep(Duration::from_millis(ms)).await;
}
