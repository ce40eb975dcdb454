//! `POST /api/v1/comments/{id}/unpin`.

use crate::outcome::{Pinned, ThreadAnswer};
use axum::extract::State;
use relations_domain::{CommentAct, CommentId};

use super::thread::run_thread;
use crate::error::ApiError;
use crate::extract::PathId;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::contract::PinErrors;
use crate::state::AppState;

/// Unpins a comment (the post's author only).
#[utoipa::path(post, path = "/api/v1/comments/{id}/unpin", tag = "commands",
    params(("id" = String, Path), CommandRequest), security(("bearer" = [])),
    responses((status = 200, body = Pinned), PinErrors))]
pub async fn unpin(
    State(state): State<AppState>,
    request: CommandRequest,
    PathId(comment): PathId<CommentId>,
) -> Result<CommandAnswer<ThreadAnswer>, ApiError> {
    run_thread(state, request, comment, CommentAct::Pin(false)).await
}
