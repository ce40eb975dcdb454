//! `DELETE /api/v1/me`: the caller erases their own account (issue 25).

use crate::outcome::AccountChange;
use axum::extract::State;
use relations_domain::AccountCommand;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::routes::account::run;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::contract::EraseErrors;
use crate::state::AppState;

/// Erases the caller, in one decision: every relation of theirs ends both ways, their likes,
/// posts and comments go (a comment with live replies stays as a tombstone), and the id is
/// never used again (its tokens get 401 `ACCOUNT_ERASED`). `position` is where the erasure
/// sits in the log.
#[utoipa::path(delete, path = "/api/v1/me", tag = "accounts", operation_id = "erase_me", security(("bearer" = [])),
    responses((status = 200, body = AccountChange), EraseErrors))]
pub async fn erase(
    State(state): State<AppState>,
    actor: Actor,
    mut request: CommandRequest,
) -> Result<CommandAnswer<AccountChange>, ApiError> {
    let command = AccountCommand::Erase { user: actor.user };
    run(&state, &mut request, "erase", command, &actor.user).await
}
