//! What the list routes share: running a list command, and a list's view.

use axum::http::StatusCode;
use relations_domain::ListCommand;
use relations_projections::lists::query::ListRow;

use crate::error::ApiError;
use crate::outcome::{ListOutcome, ListView};
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::state::AppState;

impl From<ListRow> for ListView {
    fn from(row: ListRow) -> Self {
        Self {
            id: row.id,
            title: row.title,
            exclusive: row.exclusive,
            members: row.members,
            created_at: row.created_at,
        }
    }
}

/// Runs a list command under its Idempotency-Key (bound to `fingerprint`) and answers it.
pub async fn run(
    state: AppState,
    mut request: CommandRequest,
    command: ListCommand,
    fingerprint: &impl serde::Serialize,
) -> Result<CommandAnswer<ListOutcome>, ApiError> {
    let name = command.name();
    let command_made = matches!(command, ListCommand::Create { .. });
    let idempotency = request.admit(&state, name, fingerprint).await?;
    let executed = state
        .lists
        .execute(command, &request.metadata, idempotency.as_ref())
        .await?;
    let status = match command_made {
        true => StatusCode::CREATED,
        false => StatusCode::OK,
    };
    Ok(CommandAnswer::new(name, executed, status))
}
