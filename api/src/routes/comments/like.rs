//! `POST /api/v1/comments/{id}/like`.

use crate::outcome::Liking;
use axum::extract::State;
use relations_domain::{CommentId, LikeTarget};

use crate::error::ApiError;
use crate::extract::PathId;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::contract::LikeErrors;
use crate::routes::liking;
use crate::state::AppState;

/// Like a comment: `{changed, liked, position}`.
#[utoipa::path(post, path = "/api/v1/comments/{id}/like", tag = "commands",
    params(("id" = String, Path), CommandRequest), security(("bearer" = [])),
    responses((status = 200, body = Liking), LikeErrors))]
pub async fn like_comment(
    State(state): State<AppState>,
    request: CommandRequest,
    PathId(comment): PathId<CommentId>,
) -> Result<CommandAnswer<Liking>, ApiError> {
    liking::like(state, request, LikeTarget::Comment(comment), true).await
}
