//! Relation commands (follow, unfollow, block, unblock, requests, mutes), each decided on its pair's stream and
//! appended in one transaction with the guard rows (rule 3) and the idempotency answer.

use relations_domain::{
    following_deltas, guarded_users, FollowBudget, Relation, RelationCommand, RelationError,
    RelationEvent, RelationPair, UserId,
};
use serde::Serialize;
use sqlx::PgPool;

use crate::command::{Executed, Executor, Guards, RequestChange, StoreCommand};
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
    executor: Executor<GuardedRelationCommand>,
    follow_limit: u32,
}

impl RelationStore {
    /// A store on `pool` that enforces `follow_limit` (rule 3) and wakes log readers through
    /// `signal` after each commit; `workers` groups of commands are decided at once. Starts
    /// its workers on the current runtime.
    pub fn new(pool: PgPool, follow_limit: u32, signal: CommitSignal, workers: usize) -> Self {
        Self {
            executor: Executor::spawn(pool, signal, workers),
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
    ) -> Result<Executed<RelationOutcome>, StoreError> {
        let stream = command.pair().map_err(RelationError::from)?.stream_id();
        let command = GuardedRelationCommand {
            command,
            stream,
            follow_limit: self.follow_limit,
        };
        self.executor.execute(command, metadata, idempotency).await
    }
}

/// How `events` change the pending follow requests, in order: `((target, requester), pending)`.
pub(crate) fn request_changes(events: &[RelationEvent]) -> Vec<RequestChange> {
    events
        .iter()
        .filter_map(RelationEvent::request)
        .map(|((requester, target), pending)| ((target, requester), pending))
        .collect()
}

/// A relation command with what its rules are checked against.
struct GuardedRelationCommand {
    command: RelationCommand,
    stream: String,
    follow_limit: u32,
}

impl StoreCommand for GuardedRelationCommand {
    type Aggregate = RelationPair;
    type Answer = RelationOutcome;

    fn stream(&self) -> &str {
        &self.stream
    }

    fn actor(&self) -> UserId {
        self.command.actor()
    }

    fn command(&self) -> RelationCommand {
        self.command
    }

    /// The users whose following count the command may change (rule 3).
    fn guarded(&self) -> Vec<UserId> {
        guarded_users(self.command)
    }

    /// A follow asks whether its target is locked (it becomes a request).
    fn locked_target(&self) -> Option<UserId> {
        matches!(self.command, RelationCommand::Follow { .. }).then(|| self.command.target())
    }

    fn services(&self, guards: &Guards) -> FollowBudget {
        let following = guards
            .following
            .get(&self.command.actor())
            .copied()
            .unwrap_or(0);
        FollowBudget {
            following: following.clamp(0, i64::from(u32::MAX)) as u32,
            limit: self.follow_limit,
            target_locked: guards.locked.contains(&self.command.target()),
        }
    }

    fn deltas(&self, events: &[RelationEvent]) -> Vec<(UserId, i32)> {
        following_deltas(events)
    }

    fn requests(&self, events: &[RelationEvent]) -> Vec<RequestChange> {
        request_changes(events)
    }

    fn answer(&self, pair: &RelationPair, position: Option<LogPosition>) -> RelationOutcome {
        RelationOutcome {
            changed: position.is_some(),
            relation: pair.relation(
                self.command.actor(),
                self.command.target(),
                chrono::Utc::now(),
            ),
            position,
        }
    }
}
