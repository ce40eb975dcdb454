//! `POST /api/v1/relation/unmute` `{"target"}`.

use crate::outcome::RelationOutcome;
use axum::extract::State;
use relations_domain::RelationCommand;

use super::run::{on_target, Answer, TargetBody};
use crate::extract::ApiJson;
use crate::routes::command::CommandRequest;
use crate::routes::contract::RelationCommandErrors;
use crate::state::AppState;

/// Lift the caller's mute on the target (a mute that already ended changes nothing).
#[utoipa::path(post, path = "/api/v1/relation/unmute", tag = "commands", request_body = TargetBody,
    params(CommandRequest), security(("bearer" = [])),
    responses((status = 200, body = RelationOutcome), RelationCommandErrors))]
pub async fn unmute(
    state: State<AppState>,
    request: CommandRequest,
    body: ApiJson<TargetBody>,
) -> Answer {
    on_target(state, request, body, |actor, target| {
        let now = chrono::Utc::now();
        RelationCommand::Unmute { actor, target, now }
    })
    .await
}
