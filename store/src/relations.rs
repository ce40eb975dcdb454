//! Relation commands: follow, unfollow, block, unblock, each decided on its pair's stream and
//! appended in one transaction with the guard rows and the idempotency answer.

use cqrs_es::event_sink::EventSink;
use cqrs_es::Aggregate;
use postgres_es::PostgresEventRepository;
use relations_domain::{
    following_deltas, guarded_users, FollowBudget, Relation, RelationCommand, RelationError,
    RelationPair, UserId,
};
use serde::Serialize;
use sqlx::{PgConnection, PgPool};

use crate::append::{append, load};
use crate::command::{finish, Attempt, Executed, MAX_ATTEMPTS};
use crate::error::StoreError;
use crate::idempotency::{self, Idempotency};
use crate::metadata::EventMetadata;
use crate::position::LogPosition;
use crate::signal::CommitSignal;

/// The answer to a relation command (SPEC.md: `{changed, relation, position}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RelationOutcome {
    /// Whether any event was appended.
    pub changed: bool,
    /// The actor's relation to the target as the decision left it.
    pub relation: Relation,
    /// Where the appended events ended in the log; none when nothing changed.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub position: Option<LogPosition>,
}

/// Carries out relation commands against the event store.
#[derive(Clone)]
pub struct RelationStore {
    pool: PgPool,
    follow_limit: u32,
    signal: CommitSignal,
}

impl RelationStore {
    /// A store on `pool` that enforces `follow_limit` (rule 3) and wakes log readers through
    /// `signal` after each commit.
    pub fn new(pool: PgPool, follow_limit: u32, signal: CommitSignal) -> Self {
        Self {
            pool,
            follow_limit,
            signal,
        }
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
        for round in 1..=MAX_ATTEMPTS {
            let loaded = load::<RelationPair>(&repo, &stream).await?;
            let mut tx = self.pool.begin().await?;
            let result = self
                .attempt(&mut tx, command, &stream, loaded, metadata, idempotency)
                .await;
            if let Some(done) = finish(tx, result, round, &self.signal).await? {
                return Ok(done);
            }
        }
        unreachable!("finish gives up after MAX_ATTEMPTS")
    }
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
    ) -> Result<Attempt<RelationOutcome>, StoreError> {
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
