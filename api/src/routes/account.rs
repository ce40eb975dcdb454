//! An account command (a token revocation, a ban), decided and answered: the admin's routes and
//! the caller's logout share it.

use crate::outcome::AccountChange;
use axum::http::StatusCode;
use relations_domain::AccountCommand;
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
