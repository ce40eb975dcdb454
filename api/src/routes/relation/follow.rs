//! `POST /api/v1/relation/follow` `{"target"}`.

use crate::outcome::RelationOutcome;
use axum::extract::State;
use relations_domain::RelationCommand;

use super::run::{on_target, Answer, TargetBody};
use crate::extract::ApiJson;
use crate::routes::command::CommandRequest;
use crate::routes::contract::RelationCommandErrors;
use crate::state::AppState;

/// Follow the target; when the target's account is locked, ask to (`requested: true`).
#[utoipa::path(post, path = "/api/v1/relation/follow", tag = "commands", request_body = TargetBody,
    params(CommandRequest), security(("bearer" = [])),
    responses((status = 200, body = RelationOutcome), RelationCommandErrors))]
pub async fn follow(
    state: State<AppState>,
    request: CommandRequest,
    body: ApiJson<TargetBody>,
) -> Answer {
    on_target(state, request, body, |actor, target| {
        RelationCommand::Follow { actor, target }
    })
    .await
}
