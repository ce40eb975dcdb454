//! `/api/v1/posts`: publish and delete posts (rule 8).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, post};
use axum::Router;
use relations_domain::{PostContent, PostId};
use relations_store::{Deleted, EventMetadata, Published};
use serde::{Deserialize, Serialize};
use utoipa::{OpenApi, ToSchema};

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, IdempotencyHeader, ReqId};
use crate::routes::CommandAnswer;
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
    #[schema(value_type = String, min_length = 1, max_length = 2000)]
    pub content: PostContent,
}

/// Publishes a post: `201 {post, position}`.
#[utoipa::path(post, path = "/api/v1/posts", tag = "commands", request_body = PublishBody,
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer for a retry")),
    security(("bearer" = [])),
    responses((status = 201, body = Published),
              (status = 400, body = ErrorBody, description = "INVALID_INPUT: content not 1 to 2000 characters"),
              (status = 401, body = ErrorBody), (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn publish(
    State(state): State<AppState>,
    actor: Actor,
    ReqId(request_id): ReqId,
    idempotency: IdempotencyHeader,
    ApiJson(body): ApiJson<PublishBody>,
) -> Result<CommandAnswer<Published>, ApiError> {
    // Rule 7: posts draw on the same bucket as every other command.
    state.limiter.enforce(actor.user).await?;
    let idempotency = idempotency.bind("publish_post", &body);
    let metadata = EventMetadata {
        request_id,
        actor: actor.user,
    };
    let executed = state
        .posts
        .publish(actor.user, body.content, &metadata, idempotency.as_ref())
        .await?;
    metrics::counter!("relations_commands_total", "command" => "publish_post").increment(1);
    Ok(CommandAnswer::new(executed, StatusCode::CREATED))
}

/// Deletes the caller's post: `200 {position}`; someone else's 403, unknown 404.
#[utoipa::path(delete, path = "/api/v1/posts/{id}", tag = "commands",
    params(("id" = String, Path, description = "The post"),
           ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer for a retry")),
    security(("bearer" = [])),
    responses((status = 200, body = Deleted), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "NOT_AUTHOR: someone else's post"),
              (status = 404, body = ErrorBody, description = "unknown, deleted or malformed id"),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn remove(
    State(state): State<AppState>,
    actor: Actor,
    ReqId(request_id): ReqId,
    idempotency: IdempotencyHeader,
    Path(id): Path<String>,
) -> Result<CommandAnswer<Deleted>, ApiError> {
    let post_id: PostId = id.parse().map_err(|_| ApiError::NotFound)?;
    // Rule 7: posts draw on the same bucket as every other command.
    state.limiter.enforce(actor.user).await?;
    let idempotency = idempotency.bind("delete_post", &post_id);
    let metadata = EventMetadata {
        request_id,
        actor: actor.user,
    };
    let executed = state
        .posts
        .delete(actor.user, post_id, &metadata, idempotency.as_ref())
        .await?;
    metrics::counter!("relations_commands_total", "command" => "delete_post").increment(1);
    Ok(CommandAnswer::new(executed, StatusCode::OK))
}
