//! `POST /api/v1/me/logout`: logs the caller's device out.

use crate::outcome::AccountChange;
use axum::extract::State;
use relations_domain::AccountCommand;

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::routes::account::run;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::state::AppState;

/// Logs the caller's device out: its client's tokens up to this token's version are refused.
#[utoipa::path(post, path = "/api/v1/me/logout", tag = "accounts", security(("bearer" = [])),
    responses((status = 200, body = AccountChange), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody), (status = 422, body = ErrorBody),
              (status = 429, body = ErrorBody), (status = 503, body = ErrorBody)))]
pub async fn logout(
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
