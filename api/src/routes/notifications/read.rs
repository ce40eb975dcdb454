//! `POST /api/v1/notifications/read`: moves the caller's read marker forward.

use axum::extract::State;
use axum::Json;
use relations_projections::notifications::query as notify_read;
use relations_store::LogPosition;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiJson;
use crate::state::AppState;

/// `read`'s body: `{up_to}`.
#[derive(Debug, Deserialize, ToSchema)]
pub struct ReadBody {
    /// A log position: a group's `position` (the newest one read), or a command's.
    #[schema(value_type = String, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    pub up_to: LogPosition,
}

/// `read`'s answer: `{changed}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReadAnswer {
    /// Whether the marker moved (it never moves back: an older `up_to` changes nothing).
    pub changed: bool,
}

/// Marks the caller's notifications read up to `up_to`: every group whose newest
/// notification is at or before it stops counting as unread. The marker only moves forward.
#[utoipa::path(post, path = "/api/v1/notifications/read", tag = "queries",
    security(("bearer" = [])),
    request_body = ReadBody,
    responses((status = 200, body = ReadAnswer),
              (status = 400, body = ErrorBody, description = "INVALID_INPUT"),
              (status = 401, body = ErrorBody), (status = 403, body = ErrorBody, description = "USER_BANNED"),
              (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
              (status = 503, body = ErrorBody)))]
pub async fn read(
    State(state): State<AppState>,
    actor: Actor,
    ApiJson(body): ApiJson<ReadBody>,
) -> Result<Json<ReadAnswer>, ApiError> {
    let changed = notify_read::mark(&state.pool, actor.user.get(), body.up_to).await?;
    Ok(Json(ReadAnswer { changed }))
}
