//! Relation commands: follow, unfollow, block, unblock, each decided on its pair's stream and
//! appended in one transaction with the guard rows (rule 3) and the idempotency answer.

use async_trait::async_trait;
use relations_domain::{
    following_deltas, guarded_users, FollowBudget, Relation, RelationCommand, RelationError,
    RelationEvent, RelationPair, UserId,
};
use serde::Serialize;
use sqlx::{PgConnection, PgPool};

use crate::command::{Executed, Executor, StoreCommand};
use crate::error::StoreError;
use crate::idempotency::Idempotency;
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
    executor: Executor,
    follow_limit: u32,
}

impl RelationStore {
    /// A store on `pool` that enforces `follow_limit` (rule 3) and wakes log readers through
    /// `signal` after each commit.
    pub fn new(pool: PgPool, follow_limit: u32, signal: CommitSignal) -> Self {
        Self {
            executor: Executor { pool, signal },
            follow_limit,
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
        let command = GuardedRelationCommand {
            command,
            stream,
            follow_limit: self.follow_limit,
        };
        self.executor.execute(&command, metadata, idempotency).await
    }
}

/// A relation command with what its rules are checked against.
struct GuardedRelationCommand {
    command: RelationCommand,
    stream: String,
    follow_limit: u32,
}

#[async_trait]
impl StoreCommand for GuardedRelationCommand {
    type Aggregate = RelationPair;
    type Answer = RelationOutcome;

    fn stream(&self) -> String {
        self.stream.clone()
    }

    fn actor(&self) -> UserId {
        self.command.actor()
    }

    fn command(&self) -> RelationCommand {
        self.command
    }

    /// Locks the guard rows of every user whose following count the command may change, in
    /// ascending order, and returns the actor's budget. Taken before the append, so a
    /// transaction that holds a stream's new version never waits for a guard row.
    async fn prepare(&self, conn: &mut PgConnection) -> Result<FollowBudget, StoreError> {
        let mut budget = FollowBudget {
            following: 0,
            limit: self.follow_limit,
        };
        for user in guarded_users(self.command) {
            let following = lock_guard(conn, user).await?;
            if user == self.command.actor() {
                budget.following = following;
            }
        }
        Ok(budget)
    }

    async fn appended(
        &self,
        conn: &mut PgConnection,
        events: &[RelationEvent],
    ) -> Result<(), StoreError> {
        for (user, delta) in following_deltas(events) {
            sqlx::query("UPDATE follow_guard SET following = following + $2 WHERE user_id = $1")
                .bind(user.get())
                .bind(delta)
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }

    fn answer(&self, pair: &RelationPair, position: Option<LogPosition>) -> RelationOutcome {
        RelationOutcome {
            changed: position.is_some(),
            relation: pair.relation(self.command.actor(), self.command.target()),
            position,
        }
    }
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
