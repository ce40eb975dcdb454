//! `POST /api/v1/me/suggestions/{id}/dismiss`: never suggest this user again.

use axum::extract::State;
use relations_domain::{RelationCommand, UserId};

use crate::error::ApiError;
use crate::extract::PathId;
use crate::outcome::Changed;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::contract::DismissErrors;
use crate::routes::relation::run::run;
use crate::state::AppState;

/// Dismiss the user from the caller's suggestions, for good (`changed: false` when dismissed
/// already). A fact between the two users, kept on their relation's stream; nobody is told.
#[utoipa::path(post, path = "/api/v1/me/suggestions/{id}/dismiss", tag = "commands",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "The user not to suggest"), CommandRequest),
    responses((status = 200, body = Changed), DismissErrors))]
pub async fn dismiss(
    State(state): State<AppState>,
    request: CommandRequest,
    PathId(target): PathId<UserId>,
) -> Result<CommandAnswer<Changed>, ApiError> {
    let actor = request.actor();
    let command = RelationCommand::Dismiss { actor, target };
    run(state, request, command, &target).await
}
