//! `POST /api/v1/posts/{id}/unlike`.

use crate::outcome::Liking;
use axum::extract::State;
use relations_domain::{LikeTarget, PostId};

use crate::error::ApiError;
use crate::extract::PathId;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::contract::LikeErrors;
use crate::routes::liking;
use crate::state::AppState;

/// Take back a like of a post.
#[utoipa::path(post, path = "/api/v1/posts/{id}/unlike", tag = "commands",
    params(("id" = String, Path), CommandRequest), security(("bearer" = [])),
    responses((status = 200, body = Liking), LikeErrors))]
pub async fn unlike_post(
    State(state): State<AppState>,
    request: CommandRequest,
    PathId(post): PathId<PostId>,
) -> Result<CommandAnswer<Liking>, ApiError> {
    liking::like(state, request, LikeTarget::Post(post), false).await
}
