//! `POST /api/v1/admin/users/{id}/ban` (admin).

use crate::outcome::AccountChange;
use axum::extract::State;
use relations_domain::{AccountCommand, UserId};

use crate::auth::Admin;
use crate::error::ApiError;
use crate::extract::PathId;
use crate::routes::account::run;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::contract::BanErrors;
use crate::state::AppState;

/// Bans the user: every request of theirs is refused (403 `USER_BANNED`) and their posts leave
/// every feed and timeline until unbanned.
#[utoipa::path(post, path = "/api/v1/admin/users/{id}/ban", tag = "accounts", security(("bearer" = [])),
    params(("id" = i64, Path, description = "The user")),
    responses((status = 200, body = AccountChange), BanErrors))]
pub async fn ban(
    State(state): State<AppState>,
    _: Admin,
    mut request: CommandRequest,
    PathId(user): PathId<UserId>,
) -> Result<CommandAnswer<AccountChange>, ApiError> {
    let command = AccountCommand::Ban { user };
    run(&state, &mut request, "ban", command, &user).await
}
