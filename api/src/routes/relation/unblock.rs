//! `POST /api/v1/relation/unblock` `{"target"}`.

use crate::outcome::RelationOutcome;
use axum::extract::State;
use relations_domain::RelationCommand;

use super::run::{on_target, Answer, TargetBody};
use crate::extract::ApiJson;
use crate::routes::command::CommandRequest;
use crate::routes::contract::RelationCommandErrors;
use crate::state::AppState;

/// Lift a block; follows are not restored.
#[utoipa::path(post, path = "/api/v1/relation/unblock", tag = "commands", request_body = TargetBody,
    params(CommandRequest), security(("bearer" = [])),
    responses((status = 200, body = RelationOutcome), RelationCommandErrors))]
pub async fn unblock(
    state: State<AppState>,
    request: CommandRequest,
    body: ApiJson<TargetBody>,
) -> Answer {
    on_target(state, request, body, |actor, target| {
        RelationCommand::Unblock { actor, target }
    })
    .await
}
