//! `POST /api/v1/posts/{id}/bookmark` (issue 46).

use axum::extract::State;
use relations_domain::PostId;

use crate::error::ApiError;
use crate::extract::PathId;
use crate::outcome::Bookmarking;
use crate::routes::bookmarking;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::contract::LikeErrors;
use crate::state::AppState;

/// Bookmark a post, privately: `{changed, bookmarked, position}`.
#[utoipa::path(post, path = "/api/v1/posts/{id}/bookmark", tag = "commands",
    params(("id" = String, Path), CommandRequest), security(("bearer" = [])),
    responses((status = 200, body = Bookmarking), LikeErrors))]
pub async fn bookmark_post(
    State(state): State<AppState>,
    request: CommandRequest,
    PathId(post): PathId<PostId>,
) -> Result<CommandAnswer<Bookmarking>, ApiError> {
    bookmarking::bookmark(state, request, post, true).await
}
