//! `POST /api/v1/admin/users/{id}/revoke` (admin): refuses tokens of a user.

use crate::outcome::AccountChange;
use axum::extract::State;
use relations_domain::{AccountCommand, UserId};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Admin;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, PathId};
use crate::routes::account::run;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::state::AppState;

/// `revoke`'s body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeBody {
    /// One client's tokens (with `ver <= up_to`), or null for every token of the user (with
    /// `bat <= up_to`). At most 255 characters, no U+0000.
    #[serde(default)]
    #[schema(max_length = 255, pattern = r"^[^\x00]*$")]
    pub client: Option<String>,
    /// The bound, inclusive. A bound lower than or equal to the one in force changes nothing.
    #[serde(deserialize_with = "relations_domain::ids::integral")]
    pub up_to: i64,
}

/// Refuses tokens of the user: one client's up to a version, or all up to a batch.
#[utoipa::path(post, path = "/api/v1/admin/users/{id}/revoke", tag = "accounts",
    request_body = RevokeBody, security(("bearer" = [])),
    params(("id" = i64, Path, description = "The user")),
    responses((status = 200, body = AccountChange), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 403, body = ErrorBody, description = "not an admin"),
              (status = 404, body = ErrorBody), (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn revoke(
    State(state): State<AppState>,
    _: Admin,
    mut request: CommandRequest,
    PathId(user): PathId<UserId>,
    ApiJson(body): ApiJson<RevokeBody>,
) -> Result<CommandAnswer<AccountChange>, ApiError> {
    if let Some(client) = &body.client {
        if client.chars().count() > 255 || client.contains('\0') {
            return Err(ApiError::InvalidInput(
                "client: at most 255 characters, no U+0000".into(),
            ));
        }
    }
    let command = AccountCommand::Revoke {
        user,
        client: body.client.clone(),
        up_to: body.up_to,
    };
    run(
        &state,
        &mut request,
        "revoke_tokens",
        command,
        &(user, &body),
    )
    .await
}
