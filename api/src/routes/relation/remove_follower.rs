//! `POST /api/v1/relation/remove_follower` `{"target"}`.

use crate::outcome::RelationOutcome;
use axum::extract::State;
use relations_domain::RelationCommand;

use super::run::{on_target, Answer, TargetBody};
use crate::extract::ApiJson;
use crate::routes::command::CommandRequest;
use crate::routes::contract::RelationCommandErrors;
use crate::state::AppState;

/// Remove the target from the caller's followers, without blocking them (they may follow again).
#[utoipa::path(post, path = "/api/v1/relation/remove_follower", tag = "commands", request_body = TargetBody,
    params(CommandRequest), security(("bearer" = [])),
    responses((status = 200, body = RelationOutcome), RelationCommandErrors))]
pub async fn remove_follower(
    state: State<AppState>,
    request: CommandRequest,
    body: ApiJson<TargetBody>,
) -> Answer {
    on_target(state, request, body, |actor, target| {
        RelationCommand::RemoveFollower { actor, target }
    })
    .await
}
