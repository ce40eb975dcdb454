//! `POST /api/v1/posts/{id}/unrepost` (issue 44).

use axum::extract::State;
use relations_domain::PostId;

use crate::error::ApiError;
use crate::extract::PathId;
use crate::outcome::Reposting;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::contract::RepostErrors;
use crate::routes::reposting;
use crate::state::AppState;

/// Take back a repost of a post.
#[utoipa::path(post, path = "/api/v1/posts/{id}/unrepost", tag = "commands",
    params(("id" = String, Path), CommandRequest), security(("bearer" = [])),
    responses((status = 200, body = Reposting), RepostErrors))]
pub async fn unrepost_post(
    State(state): State<AppState>,
    request: CommandRequest,
    PathId(post): PathId<PostId>,
) -> Result<CommandAnswer<Reposting>, ApiError> {
    reposting::repost(state, request, post, false).await
}
