//! `POST /api/v1/relation/unfollow` `{"target"}`.

use crate::outcome::RelationOutcome;
use axum::extract::State;
use relations_domain::RelationCommand;

use super::run::{on_target, Answer, TargetBody};
use crate::extract::ApiJson;
use crate::routes::command::CommandRequest;
use crate::routes::contract::RelationCommandErrors;
use crate::state::AppState;

/// Stop following the target, or withdraw a pending request to follow them.
#[utoipa::path(post, path = "/api/v1/relation/unfollow", tag = "commands", request_body = TargetBody,
    params(CommandRequest), security(("bearer" = [])),
    responses((status = 200, body = RelationOutcome), RelationCommandErrors))]
pub async fn unfollow(
    state: State<AppState>,
    request: CommandRequest,
    body: ApiJson<TargetBody>,
) -> Answer {
    on_target(state, request, body, |actor, target| {
        RelationCommand::Unfollow { actor, target }
    })
    .await
}
