//! `PUT /api/v1/me/notification_policy` (issue 47): whose notifications reach the caller.

use axum::extract::State;
use axum::Json;
use relations_domain::Disposition;
use relations_store::{LogPosition, SettingsAsk};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiJson;
use crate::routes::command::CommandRequest;
use crate::state::AppState;

/// The body: each part omitted keeps its value.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NotificationPolicyBody {
    /// For notifications caused by users the caller does not follow.
    #[serde(default)]
    pub not_following: Option<Disposition>,
    /// For notifications caused by users who do not follow the caller.
    #[serde(default)]
    pub not_followers: Option<Disposition>,
}

/// The policy as it is after the change.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationPolicyAnswer {
    /// For notifications caused by users the caller does not follow.
    pub not_following: Disposition,
    /// For notifications caused by users who do not follow the caller.
    pub not_followers: Disposition,
    /// Where the change sits in the log; null when nothing changed.
    #[schema(value_type = Option<String>)]
    pub position: Option<LogPosition>,
}

/// Sets whose notifications reach the caller, from now on (notifications kept before stay):
/// `accept` (the default), `filter` (kept out of the list and the unread count, shown at
/// `GET /api/v1/notifications?filtered=true`) or `drop` (kept nowhere); when both parts apply
/// to a notification, the stricter wins. Judged when each notification is caused.
#[utoipa::path(put, path = "/api/v1/me/notification_policy", tag = "commands",
    request_body = NotificationPolicyBody,
    security(("bearer" = [])),
    responses((status = 200, body = NotificationPolicyAnswer),
              (status = 400, body = ErrorBody, description = "INVALID_INPUT: not accept, filter or drop"),
              (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "USER_BANNED"),
              (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
              (status = 422, body = ErrorBody),
              (status = 429, body = ErrorBody, description = "RATE_LIMITED, with Retry-After"),
              (status = 503, body = ErrorBody, description = "UNAVAILABLE, with Retry-After")))]
pub async fn notification_policy(
    State(state): State<AppState>,
    mut request: CommandRequest,
    ApiJson(body): ApiJson<NotificationPolicyBody>,
) -> Result<Json<NotificationPolicyAnswer>, ApiError> {
    // A PUT is idempotent by itself: an Idempotency-Key is accepted and not needed.
    request.admit(&state, "notification_policy", &body).await?;
    let ask = SettingsAsk {
        not_following: body.not_following,
        not_followers: body.not_followers,
        ..SettingsAsk::default()
    };
    let change = state
        .settings
        .set(request.actor(), ask, &request.metadata)
        .await?;
    metrics::counter!("relations_commands_total", "command" => "notification_policy").increment(1);
    let policy = change.notification_policy;
    Ok(Json(NotificationPolicyAnswer {
        not_following: policy.not_following,
        not_followers: policy.not_followers,
        position: change.position,
    }))
}
