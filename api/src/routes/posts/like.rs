//! `POST /api/v1/posts/{id}/like`.

use crate::outcome::Liking;
use axum::extract::State;
use relations_domain::{LikeTarget, PostId};

use crate::error::ApiError;
use crate::extract::PathId;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::contract::LikeErrors;
use crate::routes::liking;
use crate::state::AppState;

/// Like a post: `{changed, liked, position}`.
#[utoipa::path(post, path = "/api/v1/posts/{id}/like", tag = "commands",
    params(("id" = String, Path), CommandRequest), security(("bearer" = [])),
    responses((status = 200, body = Liking), LikeErrors))]
pub async fn like_post(
    State(state): State<AppState>,
    request: CommandRequest,
    PathId(post): PathId<PostId>,
) -> Result<CommandAnswer<Liking>, ApiError> {
    liking::like(state, request, LikeTarget::Post(post), true).await
}
