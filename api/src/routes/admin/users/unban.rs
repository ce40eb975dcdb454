//! `POST /api/v1/admin/users/{id}/unban` (admin).

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

/// Lifts a ban: the user's posts show again; no follow is restored.
#[utoipa::path(post, path = "/api/v1/admin/users/{id}/unban", tag = "accounts", security(("bearer" = [])),
    params(("id" = i64, Path, description = "The user")),
    responses((status = 200, body = AccountChange), BanErrors))]
pub async fn unban(
    State(state): State<AppState>,
    _: Admin,
    mut request: CommandRequest,
    PathId(user): PathId<UserId>,
) -> Result<CommandAnswer<AccountChange>, ApiError> {
    let command = AccountCommand::Unban { user };
    run(&state, &mut request, "unban", command, &user).await
}
