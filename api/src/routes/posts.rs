//! `/api/v1/posts`: publish and delete posts (rule 8).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, post};
use axum::Router;
use relations_domain::{PostContent, PostId};
use serde::{Deserialize, Serialize};
use utoipa::{OpenApi, ToSchema};

use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiJson;
use crate::outcome::{Deleted, Published};
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::state::AppState;

/// The post routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/posts", post(publish))
        .route("/api/v1/posts/{id}", delete(remove))
}

/// The post routes' contract.
#[derive(OpenApi)]
#[openapi(paths(publish, remove))]
pub struct Doc;

/// `POST /api/v1/posts` body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct PublishBody {
    /// 1 to 2000 characters.
    #[schema(value_type = String, min_length = 1, max_length = 2000, pattern = r"^[^\x00]*$")]
    pub content: PostContent,
}

/// Publishes a post: `201 {post, position}`.
#[utoipa::path(post, path = "/api/v1/posts", tag = "commands", request_body = PublishBody,
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer for a retry", pattern = r"^[!-~]{1,255}$")),
    security(("bearer" = [])),
    responses((status = 201, body = Published),
              (status = 400, body = ErrorBody, description = "INVALID_INPUT: content not 1 to 2000 characters"),
              (status = 401, body = ErrorBody), (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn publish(
    State(state): State<AppState>,
    mut request: CommandRequest,
    ApiJson(body): ApiJson<PublishBody>,
) -> Result<CommandAnswer<Published>, ApiError> {
    let idempotency = request.admit(&state, "publish_post", &body).await?;
    let executed = state
        .posts
        .publish(
            request.actor(),
            body.content,
            &request.metadata,
            idempotency.as_ref(),
        )
        .await?;
    Ok(CommandAnswer::new(
        "publish_post",
        executed,
        StatusCode::CREATED,
    ))
}

/// Deletes the caller's post: `200 {position}`; someone else's 403, unknown 404.
#[utoipa::path(delete, path = "/api/v1/posts/{id}", tag = "commands",
    params(("id" = String, Path, description = "The post"),
           ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer for a retry", pattern = r"^[!-~]{1,255}$")),
    security(("bearer" = [])),
    responses((status = 200, body = Deleted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "NOT_AUTHOR: someone else's post"),
              (status = 404, body = ErrorBody, description = "unknown, deleted or malformed id"),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn remove(
    State(state): State<AppState>,
    mut request: CommandRequest,
    Path(id): Path<String>,
) -> Result<CommandAnswer<Deleted>, ApiError> {
    let post_id: PostId = id.parse().map_err(|_| ApiError::NotFound)?;
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
