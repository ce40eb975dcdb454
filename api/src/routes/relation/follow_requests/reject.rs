//! `POST /api/v1/relation/follow_requests/reject` `{"target"}`.

use crate::outcome::RelationOutcome;
use axum::extract::State;
use relations_domain::RelationCommand;

use crate::extract::ApiJson;
use crate::routes::command::CommandRequest;
use crate::routes::contract::RelationCommandErrors;
use crate::routes::relation::run::{on_target, Answer, TargetBody};
use crate::state::AppState;

/// Refuse the target's pending request (no request: `changed: false`).
#[utoipa::path(post, path = "/api/v1/relation/follow_requests/reject", tag = "commands", request_body = TargetBody,
    params(CommandRequest), security(("bearer" = [])),
    responses((status = 200, body = RelationOutcome), RelationCommandErrors))]
pub async fn reject(
    state: State<AppState>,
    request: CommandRequest,
    body: ApiJson<TargetBody>,
) -> Answer {
    on_target(state, request, body, |actor, target| {
        RelationCommand::RejectRequest { actor, target }
    })
    .await
}
