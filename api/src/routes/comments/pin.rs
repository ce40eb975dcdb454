//! `POST /api/v1/comments/{id}/pin`.

use crate::outcome::{Pinned, ThreadAnswer};
use axum::extract::State;
use relations_domain::{CommentAct, CommentId};

use super::thread::run_thread;
use crate::error::ApiError;
use crate::extract::PathId;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::contract::PinErrors;
use crate::state::AppState;

/// Pins a comment (the post's author only): `{changed, pinned, position}`.
#[utoipa::path(post, path = "/api/v1/comments/{id}/pin", tag = "commands",
    params(("id" = String, Path), CommandRequest), security(("bearer" = [])),
    responses((status = 200, body = Pinned), PinErrors))]
pub async fn pin(
    State(state): State<AppState>,
    request: CommandRequest,
    PathId(comment): PathId<CommentId>,
) -> Result<CommandAnswer<ThreadAnswer>, ApiError> {
    run_thread(state, request, comment, CommentAct::Pin(true)).await
}
