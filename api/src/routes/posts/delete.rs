//! `DELETE /api/v1/posts/{id}`: the author deletes a post.

use crate::outcome::Deleted;
use axum::extract::State;
use axum::http::StatusCode;
use relations_domain::PostId;

use crate::error::{ApiError, ErrorBody};
use crate::extract::PathId;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::state::AppState;

/// Deletes the caller's post: `200 {position}`; someone else's 403, unknown 404.
#[utoipa::path(delete, path = "/api/v1/posts/{id}", tag = "commands",
    params(("id" = String, Path, description = "The post"), CommandRequest),
    security(("bearer" = [])),
    responses((status = 200, body = Deleted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "NOT_AUTHOR: someone else's post"),
              (status = 404, body = ErrorBody, description = "unknown, deleted or malformed id"),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn remove(
    State(state): State<AppState>,
    mut request: CommandRequest,
    PathId(post_id): PathId<PostId>,
) -> Result<CommandAnswer<Deleted>, ApiError> {
    let idempotency = request.admit(&state, "delete_post", &post_id).await?;
    let executed = state
        .posts
        .delete(
            request.actor(),
            post_id,
            &request.metadata,
            idempotency.as_ref(),
        )
        .await?;
    Ok(CommandAnswer::new("delete_post", executed, StatusCode::OK))
}
