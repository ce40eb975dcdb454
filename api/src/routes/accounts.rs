//! Token revocation and bans (seed 002's single sign-on): the sign-on service's admin calls
//! `revoke`, `ban` and `unban`; a user logs a device out with `logout`. Each is a command on the
//! user's `account` stream; every instance enforces it within a second (its graph folds the
//! event), with no database round trip per request (see [`crate::auth`]).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use relations_domain::{AccountCommand, UserId};
use serde::{Deserialize, Serialize};
use utoipa::{OpenApi, ToSchema};

use crate::auth::{Actor, Admin};
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiJson;
use crate::outcome::AccountChange;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::state::AppState;

/// The account routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/admin/users/{id}/revoke", post(revoke))
        .route("/api/v1/admin/users/{id}/ban", post(ban))
        .route("/api/v1/admin/users/{id}/unban", post(unban))
        .route("/api/v1/me/logout", post(logout))
}

/// The account routes' contract.
#[derive(OpenApi)]
#[openapi(paths(revoke, ban, unban, logout))]
pub struct Doc;

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

/// The `{id}` path segment: a user id, else 404.
fn user(raw: &str) -> Result<UserId, ApiError> {
    raw.parse().map_err(|_| ApiError::NotFound)
}

async fn run(
    state: &AppState,
    request: &mut CommandRequest,
    operation: &'static str,
    command: AccountCommand,
    body: &impl Serialize,
) -> Result<CommandAnswer<AccountChange>, ApiError> {
    let idempotency = request.admit(state, operation, body).await?;
    let executed = state
        .accounts
        .execute(
            request.actor(),
            command,
            &request.metadata,
            idempotency.as_ref(),
        )
        .await?;
    Ok(CommandAnswer::new(operation, executed, StatusCode::OK))
}

/// Refuses tokens of the user: one client's up to a version, or all up to a batch.
#[utoipa::path(post, path = "/api/v1/admin/users/{id}/revoke", tag = "accounts",
    request_body = RevokeBody, security(("bearer" = [])),
    params(("id" = i64, Path, description = "The user")),
    responses((status = 200, body = AccountChange), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 403, body = ErrorBody, description = "not an admin"),
              (status = 404, body = ErrorBody), (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn revoke(
    State(state): State<AppState>,
    _: Admin,
    mut request: CommandRequest,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<RevokeBody>,
) -> Result<CommandAnswer<AccountChange>, ApiError> {
    let user = user(&id)?;
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

/// Bans the user: every request of theirs is refused (403 `USER_BANNED`) and their posts leave
/// every feed and timeline until unbanned.
#[utoipa::path(post, path = "/api/v1/admin/users/{id}/ban", tag = "accounts", security(("bearer" = [])),
    params(("id" = i64, Path, description = "The user")),
    responses((status = 200, body = AccountChange), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "not an admin"), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn ban(
    State(state): State<AppState>,
    _: Admin,
    mut request: CommandRequest,
    Path(id): Path<String>,
) -> Result<CommandAnswer<AccountChange>, ApiError> {
    let user = user(&id)?;
    run(
        &state,
        &mut request,
        "ban",
        AccountCommand::Ban { user },
        &user,
    )
    .await
}

/// Lifts a ban: the user's posts show again; no follow is restored.
#[utoipa::path(post, path = "/api/v1/admin/users/{id}/unban", tag = "accounts", security(("bearer" = [])),
    params(("id" = i64, Path, description = "The user")),
    responses((status = 200, body = AccountChange), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "not an admin"), (status = 404, body = ErrorBody),
              (status = 422, body = ErrorBody), (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn unban(
    State(state): State<AppState>,
    _: Admin,
    mut request: CommandRequest,
    Path(id): Path<String>,
) -> Result<CommandAnswer<AccountChange>, ApiError> {
    let user = user(&id)?;
    run(
        &state,
        &mut request,
        "unban",
        AccountCommand::Unban { user },
        &user,
    )
    .await
}

/// Logs the caller's device out: its client's tokens up to this token's version are refused.
#[utoipa::path(post, path = "/api/v1/me/logout", tag = "accounts", security(("bearer" = [])),
    responses((status = 200, body = AccountChange), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody), (status = 422, body = ErrorBody),
              (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn logout(
    State(state): State<AppState>,
    actor: Actor,
    mut request: CommandRequest,
) -> Result<CommandAnswer<AccountChange>, ApiError> {
    let command = AccountCommand::Revoke {
        user: actor.user,
        client: Some(actor.stamp.client.clone()),
        up_to: actor.stamp.ver,
    };
    let body = (&actor.stamp.client, actor.stamp.ver);
    run(&state, &mut request, "logout", command, &body).await
}
