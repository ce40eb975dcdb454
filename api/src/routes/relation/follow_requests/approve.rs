//! `POST /api/v1/relation/follow_requests/approve` `{"target"}`.

use crate::outcome::RelationOutcome;
use axum::extract::State;
use relations_domain::RelationCommand;

use crate::extract::ApiJson;
use crate::routes::command::CommandRequest;
use crate::routes::contract::RelationCommandErrors;
use crate::routes::relation::run::{on_target, Answer, TargetBody};
use crate::state::AppState;

/// Approve the target's pending request: they follow the caller (no request: `changed: false`).
#[utoipa::path(post, path = "/api/v1/relation/follow_requests/approve", tag = "commands", request_body = TargetBody,
    params(CommandRequest), security(("bearer" = [])),
    responses((status = 200, body = RelationOutcome), RelationCommandErrors))]
pub async fn approve(
    state: State<AppState>,
    request: CommandRequest,
    body: ApiJson<TargetBody>,
) -> Answer {
    on_target(state, request, body, |actor, target| {
        RelationCommand::ApproveRequest { actor, target }
    })
    .await
}
