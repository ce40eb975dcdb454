//! `POST /api/v1/relation/{follow,unfollow,block,unblock}` with `{"target": <user id>}`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use relations_domain::{RelationCommand, UserId};
use relations_store::EventMetadata;
use serde::{Deserialize, Serialize};

use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::{ApiJson, IdempotencyHeader, ReqId};
use crate::routes::command_answer;
use crate::state::AppState;

/// Which command a route carries (a const parameter, so one handler serves all four).
pub struct Verb;

impl Verb {
    pub const FOLLOW: u8 = 0;
    pub const UNFOLLOW: u8 = 1;
    pub const BLOCK: u8 = 2;
    pub const UNBLOCK: u8 = 3;

    fn command(verb: u8, actor: UserId, target: UserId) -> RelationCommand {
        match verb {
            Verb::FOLLOW => RelationCommand::Follow { actor, target },
            Verb::UNFOLLOW => RelationCommand::Unfollow { actor, target },
            Verb::BLOCK => RelationCommand::Block { actor, target },
            _ => RelationCommand::Unblock { actor, target },
        }
    }
}

/// The request body.
#[derive(Debug, Deserialize, Serialize)]
pub struct TargetBody {
    /// The other user.
    pub target: UserId,
}

/// Authenticates, parses, rate-limits, then decides and appends.
pub async fn handle<const VERB: u8>(
    State(state): State<AppState>,
    actor: Actor,
    ReqId(request_id): ReqId,
    idempotency: IdempotencyHeader,
    ApiJson(body): ApiJson<TargetBody>,
) -> Result<Response, ApiError> {
    let command = Verb::command(VERB, actor.user, body.target);
    if command.pair().is_err() {
        return Err(ApiError::SelfRelation);
    }
    state.limiter.enforce(actor.user).await?;
    let idempotency = idempotency.bind(command.name(), &body);
    let metadata = EventMetadata {
        request_id,
        actor: actor.user,
    };
    let executed = state
        .relations
        .execute(command, &metadata, idempotency.as_ref())
        .await?;
    metrics::counter!("relations_commands_total", "command" => command.name()).increment(1);
    Ok(command_answer(executed, StatusCode::OK))
}
