//! `DELETE /api/v1/comments/{id}`: the comment's author or the post's deletes a comment.

use crate::outcome::{Deleted, ThreadAnswer};
use axum::extract::State;
use relations_domain::{CommentAct, CommentId};

use super::thread::run_thread;
use crate::error::{ApiError, ErrorBody};
use crate::extract::PathId;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::state::AppState;

/// Deletes a comment: its author or the post's author. `200 {position}`.
#[utoipa::path(delete, path = "/api/v1/comments/{id}", tag = "commands",
    params(("id" = String, Path), CommandRequest),
    security(("bearer" = [])),
    responses((status = 200, body = Deleted), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "NOT_ALLOWED: neither the comment's author nor the post's"),
              (status = 404, body = ErrorBody), (status = 422, body = ErrorBody),
              (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn delete_comment(
    State(state): State<AppState>,
    request: CommandRequest,
    PathId(comment): PathId<CommentId>,
) -> Result<CommandAnswer<ThreadAnswer>, ApiError> {
    run_thread(state, request, comment, CommentAct::Delete).await
}
