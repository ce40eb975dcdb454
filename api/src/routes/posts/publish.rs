//! `POST /api/v1/posts`: publishes a post.

use crate::outcome::Published;
use axum::extract::State;
use axum::http::StatusCode;
use relations_domain::{PostContent, Visibility};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiJson;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::state::AppState;

/// `POST /api/v1/posts` body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct PublishBody {
    /// 1 to 2000 characters.
    #[schema(value_type = String, min_length = 1, max_length = 2000, pattern = r"^[^\x00]*$")]
    pub content: PostContent,
    /// Who may read it (issue 26): `public` (the default), `unlisted` (never in the
    /// recommended feed) or `followers` (the author and their followers).
    #[serde(default)]
    pub visibility: Visibility,
}

/// Publishes a post: `201 {post, position}`.
#[utoipa::path(post, path = "/api/v1/posts", tag = "commands", request_body = PublishBody,
    params(CommandRequest), security(("bearer" = [])),
    responses((status = 201, body = Published),
              (status = 400, body = ErrorBody, description = "INVALID_INPUT: content not 1 to 2000 characters, or an unknown visibility"),
              (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "USER_BANNED"), (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn publish(
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
            body.visibility,
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
