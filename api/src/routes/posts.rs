//! `/api/v1/posts`: publish and delete posts (rule 8).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{delete, post};
use axum::Router;
use relations_domain::{PostContent, PostId};
use relations_store::EventMetadata;
use serde::{Deserialize, Serialize};

use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::{ApiJson, IdempotencyHeader, ReqId};
use crate::routes::command_answer;
use crate::state::AppState;

/// The post routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/posts", post(publish))
        .route("/api/v1/posts/{id}", delete(remove))
}

/// `POST /api/v1/posts` body.
#[derive(Debug, Deserialize, Serialize)]
pub struct PublishBody {
    /// 1 to 2000 characters.
    pub content: PostContent,
}

/// Publishes a post: `201 {post, position}`.
async fn publish(
    State(state): State<AppState>,
    actor: Actor,
    ReqId(request_id): ReqId,
    idempotency: IdempotencyHeader,
    ApiJson(body): ApiJson<PublishBody>,
) -> Result<Response, ApiError> {
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
    Ok(command_answer(executed, StatusCode::CREATED))
}

/// Deletes the caller's post: `200 {position}`; someone else's 403, unknown 404.
async fn remove(
    State(state): State<AppState>,
    actor: Actor,
    ReqId(request_id): ReqId,
    idempotency: IdempotencyHeader,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
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
    Ok(command_answer(executed, StatusCode::OK))
}
