//! `/api/v1/relation/*`: the relation commands (one file each), and the status and batch
//! queries.

mod batch;
mod block;
mod follow;
mod follow_requests;
mod mute;
mod remove_follower;
mod status;
mod unblock;
mod unfollow;
mod unmute;

use axum::extract::State;
use axum::http::StatusCode;
use relations_domain::{RelationCommand, UserId};
use relations_store::RelationOutcome;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::error::ApiError;
use crate::extract::ApiJson;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::state::AppState;

/// The relation routes, each with its contract.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(follow::follow))
        .routes(routes!(unfollow::unfollow))
        .routes(routes!(block::block))
        .routes(routes!(unblock::unblock))
        .routes(routes!(remove_follower::remove_follower))
        .routes(routes!(mute::mute))
        .routes(routes!(unmute::unmute))
        .routes(routes!(follow_requests::approve::approve))
        .routes(routes!(follow_requests::reject::reject))
        .routes(routes!(status::status))
        .routes(routes!(batch::batch))
}

/// A relation command's answer.
type Answer = Result<CommandAnswer<RelationOutcome>, ApiError>;

/// The request body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct TargetBody {
    /// The other user.
    #[serde(deserialize_with = "relations_domain::ids::integral_user")]
    pub target: UserId,
}

/// Runs the `{"target"}` command `command` makes of the actor and the target.
async fn on_target(
    State(state): State<AppState>,
    request: CommandRequest,
    ApiJson(body): ApiJson<TargetBody>,
    command: impl FnOnce(UserId, UserId) -> RelationCommand,
) -> Answer {
    let command = command(request.actor(), body.target);
    run(state, request, command, &body).await
}

/// Decides `command` (whose request body was `body`) and answers it.
async fn run(
    state: AppState,
    mut request: CommandRequest,
    command: RelationCommand,
    body: &impl Serialize,
) -> Answer {
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
