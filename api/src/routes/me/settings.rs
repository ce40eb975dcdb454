//! `PUT /api/v1/me/settings`: locks or unlocks the caller's account.

use crate::outcome::Settings;
use axum::extract::State;
use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiJson;
use crate::routes::command::CommandRequest;
use crate::state::AppState;

/// `PUT /me/settings`'s body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsBody {
    /// Whether the caller approves their followers. Unlocking approves every pending request.
    pub locked: bool,
}

/// Locks or unlocks the caller's account. A follow of a locked account is a request the owner
/// approves; unlocking approves every pending request at once, in one transaction.
#[utoipa::path(put, path = "/api/v1/me/settings", tag = "commands", request_body = SettingsBody,
    security(("bearer" = [])),
    responses((status = 200, body = Settings, description = "`position` is null when nothing changed"),
              (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "USER_BANNED"),
              (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
              (status = 429, body = ErrorBody, description = "RATE_LIMITED, with Retry-After"),
              (status = 503, body = ErrorBody, description = "UNAVAILABLE, with Retry-After")))]
pub async fn settings(
    State(state): State<AppState>,
    mut request: CommandRequest,
    ApiJson(body): ApiJson<SettingsBody>,
) -> Result<Json<Settings>, ApiError> {
    // A PUT is idempotent by itself: an Idempotency-Key is accepted and not needed.
    request.admit(&state, "settings", &body).await?;
    let position = state
        .settings
        .set_locked(request.actor(), body.locked, &request.metadata)
        .await?;
    metrics::counter!("relations_commands_total", "command" => "settings").increment(1);
    Ok(Json(Settings {
        locked: body.locked,
        position,
    }))
}
