//! `POST /api/v1/comments/{id}/unlike`.

use crate::outcome::Liking;
use axum::extract::State;
use relations_domain::{CommentId, LikeTarget};

use crate::error::ApiError;
use crate::extract::PathId;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::contract::LikeErrors;
use crate::routes::liking;
use crate::state::AppState;

/// Take back a like of a comment.
#[utoipa::path(post, path = "/api/v1/comments/{id}/unlike", tag = "commands",
    params(("id" = String, Path), CommandRequest), security(("bearer" = [])),
    responses((status = 200, body = Liking), LikeErrors))]
pub async fn unlike_comment(
    State(state): State<AppState>,
    request: CommandRequest,
    PathId(comment): PathId<CommentId>,
) -> Result<CommandAnswer<Liking>, ApiError> {
    liking::like(state, request, LikeTarget::Comment(comment), false).await
}
