//! Relation commands (follow, unfollow, block, unblock, requests, mutes), each decided on its
//! pair's stream and appended in one transaction with the guard rows (rule 3,
//! [`crate::guards::follows`]) and the idempotency answer.

use relations_domain::{
    guarded_users, FollowBudget, PairId, Relation, RelationCommand, RelationError, RelationPair,
    UserId, Visibility,
};
use sqlx::PgPool;

use crate::error::StoreError;
use crate::executor::{Executed, Executor, Render, StoreCommand, Workers};
use crate::guards::follows::{FollowAsk, FollowGuard};
use crate::guards::pairs::may_read_post;
use crate::idempotency::Idempotency;
use crate::metadata::EventMetadata;
use crate::position::LogPosition;
use crate::signal::CommitSignal;

/// What a relation command decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelationDecision {
    /// Whether any event was appended.
    pub changed: bool,
    /// The actor's relation to the target as the decision left it.
    pub relation: Relation,
    /// Where the appended events ended in the log; none when nothing changed.
    pub position: Option<LogPosition>,
    /// The command decided (its answer's shape depends on it: a dismissal shows no relation).
    pub command: RelationCommand,
}

/// Carries out relation commands against the event store.
#[derive(Clone)]
pub struct RelationStore {
    executor: Executor<GuardedRelationCommand>,
    pool: PgPool,
    follow_limit: u32,
}

impl RelationStore {
    /// A store on `pool` that enforces `follow_limit` (rule 3) and wakes log readers through
    /// `signal` after each commit; `workers` groups of commands are decided at once, and an
    /// outcome is kept under its idempotency key as `render` gives it. Starts its workers on
    /// the current runtime.
    pub fn new(
        pool: PgPool,
        follow_limit: u32,
        signal: CommitSignal,
        workers: Workers,
        render: Render<RelationDecision>,
    ) -> Self {
        Self {
            executor: Executor::spawn(pool.clone(), None, signal, workers, render),
            pool,
            follow_limit,
        }
    }

    /// Decides `command` and appends its events, retrying lost races inside.
    #[tracing::instrument(name = "command.execute", skip_all, fields(
        command = command.name(), user.id = %command.actor(), target.id = %command.target()
    ))]
    pub async fn execute(
        &self,
        command: RelationCommand,
        metadata: &EventMetadata,
        idempotency: Option<&Idempotency>,
    ) -> Result<Executed<RelationDecision>, StoreError> {
        let stream = command.pair().map_err(RelationError::from)?.stream_id();
        let command = GuardedRelationCommand {
            command,
            stream,
            follow_limit: self.follow_limit,
        };
        self.executor.execute(command, metadata, idempotency).await
    }
}

impl RelationStore {
    /// Whether `reader` may read a post of `visibility` by `author` as committed now: the
    /// pair's stream brought up to date and the author's lock, by the rule the like and
    /// comment guards apply under lock (`guards::pairs`), without the locks. What a command
    /// asks when a read model that may lag would refuse it (issue 43): a lagging model may
    /// send a command to the log, never refuse it.
    pub async fn may_read_now(
        &self,
        reader: UserId,
        author: UserId,
        visibility: Visibility,
    ) -> Result<bool, StoreError> {
        let follows = match PairId::new(reader, author) {
            Ok(pair) => {
                let (pair, _) = self.executor.peek(&pair.stream_id()).await?;
                pair.facts(reader, author).following
            }
            Err(_) => false,
        };
        let locked: bool =
            sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM account_locks WHERE user_id = $1)")
                .bind(author.get())
                .fetch_one(&self.pool)
                .await?;
        Ok(may_read_post(reader, author, visibility, follows, locked))
    }
}

/// A relation command with what its rules are checked against.
struct GuardedRelationCommand {
    command: RelationCommand,
    stream: String,
    follow_limit: u32,
}

impl StoreCommand for GuardedRelationCommand {
    type Aggregate = RelationPair;
    type Guard = FollowGuard;
    type Outcome = RelationDecision;

    fn stream(&self) -> &str {
        &self.stream
    }

    fn actor(&self) -> UserId {
        self.command.actor()
    }

    /// Both users of the pair.
    fn users(&self) -> Vec<UserId> {
        vec![self.command.actor(), self.command.target()]
    }

    fn command(&self) -> RelationCommand {
        self.command
    }

    fn counted(&self) -> Vec<UserId> {
        guarded_users(self.command)
    }

    /// The users whose following count the command may change (rule 3); a follow asks
    /// whether its target is locked (it becomes a request).
    fn ask(&self) -> FollowAsk {
        FollowAsk {
            guarded: guarded_users(self.command),
            locked_target: matches!(self.command, RelationCommand::Follow { .. })
                .then(|| self.command.target()),
        }
    }

    fn services(&self, guard: &FollowGuard) -> FollowBudget {
        let following = guard.following(self.command.actor());
        FollowBudget {
            following: following.clamp(0, i64::from(u32::MAX)) as u32,
            limit: self.follow_limit,
            target_locked: guard.locked(self.command.target()),
        }
    }

    fn outcome(&self, pair: &RelationPair, position: Option<LogPosition>) -> RelationDecision {
        RelationDecision {
            changed: position.is_some(),
            relation: pair.relation(
                self.command.actor(),
                self.command.target(),
                chrono::Utc::now(),
            ),
            position,
            command: self.command,
        }
    }
}
