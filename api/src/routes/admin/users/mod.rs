//! `/api/v1/admin/users/{id}/*` (admin): the sign-on service's token revocations and bans
//! (seed 002's single sign-on), one file each. Each is a command on the user's `account`
//! stream; every instance enforces it within a second (its graph folds the event), with no
//! database round trip per request (see [`crate::auth`]).

pub mod ban;
pub mod revoke;
pub mod unban;

use axum::http::StatusCode;
use relations_domain::AccountCommand;
use relations_store::AccountChange;
use serde::Serialize;

use crate::error::ApiError;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::state::AppState;

/// Decides an account command (whose request body was `body`) and answers it.
pub async fn run(
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
