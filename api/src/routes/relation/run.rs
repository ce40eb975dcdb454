//! What the relation commands share: the `{"target"}` body, and deciding a command and
//! answering it (rule 1, then rule 7, then the decision).

use crate::outcome::RelationOutcome;
use axum::extract::State;
use axum::http::StatusCode;
use relations_domain::{RelationCommand, UserId};
use relations_store::RelationDecision;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::extract::ApiJson;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::state::AppState;

/// A relation command's answer.
pub type Answer = Result<CommandAnswer<RelationOutcome>, ApiError>;

/// The request body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct TargetBody {
    /// The other user.
    #[serde(deserialize_with = "relations_domain::ids::integral_user")]
    pub target: UserId,
}

/// Runs the `{"target"}` command `command` makes of the actor and the target.
pub async fn on_target(
    State(state): State<AppState>,
    request: CommandRequest,
    ApiJson(body): ApiJson<TargetBody>,
    command: impl FnOnce(UserId, UserId) -> RelationCommand,
) -> Answer {
    let command = command(request.actor(), body.target);
    run(state, request, command, &body).await
}

/// Decides `command` (whose request body was `body`) and answers it with the view `T` (a
/// dismissed suggestion shows no relation).
pub async fn run<T: From<RelationDecision>>(
    state: AppState,
    mut request: CommandRequest,
    command: RelationCommand,
    body: &impl Serialize,
) -> Result<CommandAnswer<T>, ApiError> {
    if command.pair().is_err() {
        return Err(ApiError::SelfRelation);
    }
    let idempotency = request.admit(&state, command.name(), body).await?;
    let executed = state
        .relations
        .execute(command, &request.metadata, idempotency.as_ref())
        .await?;
    Ok(CommandAnswer::new(command.name(), executed, StatusCode::OK))
}
