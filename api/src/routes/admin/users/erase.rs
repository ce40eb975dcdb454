//! `POST /api/v1/admin/users/{id}/erase` (admin).

use crate::outcome::AccountChange;
use axum::extract::State;
use relations_domain::{AccountCommand, UserId};

use crate::auth::Admin;
use crate::error::ApiError;
use crate::extract::PathId;
use crate::routes::account::run;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::contract::EraseErrors;
use crate::state::AppState;

/// Erases the user, as `DELETE /api/v1/me` does for the caller (an operator answering an
/// erasure request). Erasing an erased user changes nothing (`position` null).
#[utoipa::path(post, path = "/api/v1/admin/users/{id}/erase", tag = "accounts", operation_id = "erase_user", security(("bearer" = [])),
    params(("id" = i64, Path, description = "The user")),
    responses((status = 200, body = AccountChange), EraseErrors))]
pub async fn erase(
    State(state): State<AppState>,
    _: Admin,
    mut request: CommandRequest,
    PathId(user): PathId<UserId>,
) -> Result<CommandAnswer<AccountChange>, ApiError> {
    let command = AccountCommand::Erase { user };
    run(&state, &mut request, "erase", command, &user).await
}
