//! `POST /api/v1/relation/mute` `{"target", "duration_secs": n|null}`: the caller mutes the
//! target, for good or for a while; the mute ends by itself at its end.

use crate::outcome::RelationOutcome;
use axum::extract::State;
use chrono::{Duration, Utc};
use relations_domain::{RelationCommand, UserId};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::run::{run, Answer};
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiJson;
use crate::routes::command::CommandRequest;
use crate::state::AppState;

/// The longest mute with an end: ten years (a longer one is a mute for good).
pub const MAX_DURATION_SECS: i64 = 10 * 366 * 24 * 3600;

/// `mute`'s body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MuteBody {
    /// The user to mute.
    #[serde(deserialize_with = "relations_domain::ids::integral_user")]
    pub target: UserId,
    /// How long, in seconds (1 to ten years); null or absent: until unmuted.
    #[serde(default, deserialize_with = "relations_domain::ids::optional_integral")]
    #[schema(minimum = 1, maximum = 316224000)]
    pub duration_secs: Option<i64>,
}

/// Mutes the target: their posts leave the caller's feed and new-post count until the mute
/// ends (`duration_secs`) or is lifted. Follows are untouched; `muting` is private.
#[utoipa::path(post, path = "/api/v1/relation/mute", tag = "commands", request_body = MuteBody,
    params(CommandRequest), security(("bearer" = [])),
    responses(
        (status = 200, body = RelationOutcome),
        (status = 400, body = ErrorBody, description = "INVALID_INPUT, SELF_RELATION"),
        (status = 401, body = ErrorBody), (status = 403, body = ErrorBody),
        (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
        (status = 422, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody),
    ))]
pub async fn mute(
    State(state): State<AppState>,
    request: CommandRequest,
    ApiJson(body): ApiJson<MuteBody>,
) -> Answer {
    let now = Utc::now();
    let until = match body.duration_secs {
        None => None,
        Some(secs) if (1..=MAX_DURATION_SECS).contains(&secs) => {
            Some(now + Duration::seconds(secs))
        }
        Some(secs) => {
            return Err(ApiError::InvalidInput(format!(
                "duration_secs must be 1 to {MAX_DURATION_SECS} or null, got {secs}"
            )))
        }
    };
    let command = RelationCommand::Mute {
        actor: request.actor(),
        target: body.target,
        until,
        now,
    };
    run(state, request, command, &body).await
}
