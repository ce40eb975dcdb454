//! `PUT /api/v1/me/settings`: locks or unlocks the caller's account, hides or shows its graph.

use crate::outcome::Settings;
use axum::extract::State;
use axum::Json;
use relations_store::SettingsAsk;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiJson;
use crate::routes::command::CommandRequest;
use crate::state::AppState;

/// `PUT /me/settings`'s body: each setting omitted stays as it is.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsBody {
    /// Whether the caller approves their followers (and their posts are for their followers
    /// only). Unlocking approves every pending request.
    #[serde(default)]
    pub locked: Option<bool>,
    /// Whether the caller's following, followers, friends and known-followers lists are for
    /// them alone, and relation queries naming them for the pair's two users alone.
    #[serde(default)]
    pub hide_graph: Option<bool>,
}

/// Changes the caller's settings, in one transaction; the answer shows both as they are then.
/// A follow of a locked account is a request the owner approves, and its posts are for its
/// followers; unlocking approves every pending request at once. A hidden graph is 403
/// `HIDDEN` to others (counts stay public).
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
    let ask = SettingsAsk {
        locked: body.locked,
        hide_graph: body.hide_graph,
        ..SettingsAsk::default()
    };
    let change = state
        .settings
        .set(request.actor(), ask, &request.metadata)
        .await?;
    metrics::counter!("relations_commands_total", "command" => "settings").increment(1);
    Ok(Json(Settings {
        locked: change.locked,
        hide_graph: change.hide_graph,
        position: change.position,
    }))
}
