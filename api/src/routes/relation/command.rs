//! `POST /api/v1/relation/{follow,unfollow,block,unblock}` with `{"target": <user id>}`.

use axum::extract::State;
use axum::http::StatusCode;
use relations_domain::{RelationCommand, UserId};
use relations_store::{EventMetadata, RelationOutcome};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, IdempotencyHeader, ReqId};
use crate::routes::CommandAnswer;
use crate::state::AppState;

/// Which command a route carries (a const parameter, so one handler serves all four).
pub struct Verb;

impl Verb {
    pub const FOLLOW: u8 = 0;
    pub const UNFOLLOW: u8 = 1;
    pub const BLOCK: u8 = 2;
    pub const UNBLOCK: u8 = 3;

    fn command(verb: u8, actor: UserId, target: UserId) -> RelationCommand {
        match verb {
            Verb::FOLLOW => RelationCommand::Follow { actor, target },
            Verb::UNFOLLOW => RelationCommand::Unfollow { actor, target },
            Verb::BLOCK => RelationCommand::Block { actor, target },
            _ => RelationCommand::Unblock { actor, target },
        }
    }
}

/// The request body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct TargetBody {
    /// The other user.
    pub target: UserId,
}

/// Authenticates, parses, rate-limits, then decides and appends.
pub async fn handle<const VERB: u8>(
    State(state): State<AppState>,
    actor: Actor,
    ReqId(request_id): ReqId,
    idempotency: IdempotencyHeader,
    ApiJson(body): ApiJson<TargetBody>,
) -> Result<CommandAnswer<RelationOutcome>, ApiError> {
    let command = Verb::command(VERB, actor.user, body.target);
    if command.pair().is_err() {
        return Err(ApiError::SelfRelation);
    }
    state.limiter.enforce(actor.user).await?;
    let idempotency = idempotency.bind(command.name(), &body);
    let metadata = EventMetadata {
        request_id,
        actor: actor.user,
    };
    let executed = state
        .relations
        .execute(command, &metadata, idempotency.as_ref())
        .await?;
    metrics::counter!("relations_commands_total", "command" => command.name()).increment(1);
    Ok(CommandAnswer::new(executed, StatusCode::OK))
}

/// The contract of one route [`handle`] serves: one generic handler cannot carry four
/// `#[utoipa::path]`s, so each route gets a doc-only function naming the handler's own types.
macro_rules! command_doc {
    ($fn:ident, $path:literal, $summary:literal) => {
        #[doc = $summary]
        #[utoipa::path(post, path = $path, tag = "commands", request_body = TargetBody,
            params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer for a retry")),
            security(("bearer" = [])),
            responses(
                (status = 200, body = RelationOutcome),
                (status = 400, body = ErrorBody, description = "INVALID_INPUT, SELF_RELATION"),
                (status = 401, body = ErrorBody, description = "UNAUTHENTICATED"),
                (status = 403, body = ErrorBody, description = "BLOCKED"),
                (status = 409, body = ErrorBody, description = "BLOCKING_TARGET, FOLLOW_LIMIT_REACHED"),
                (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
                (status = 422, body = ErrorBody, description = "IDEMPOTENCY_KEY_REUSED"),
                (status = 429, body = ErrorBody, description = "RATE_LIMITED, with Retry-After"),
                (status = 503, body = ErrorBody, description = "UNAVAILABLE, with Retry-After"),
            ))]
        #[allow(dead_code)]
        pub fn $fn() {}
    };
}

command_doc!(follow, "/api/v1/relation/follow", "Follow the target.");
command_doc!(
    unfollow,
    "/api/v1/relation/unfollow",
    "Stop following the target."
);
command_doc!(
    block,
    "/api/v1/relation/block",
    "Block the target; ends follows both ways."
);
command_doc!(
    unblock,
    "/api/v1/relation/unblock",
    "Lift a block; follows are not restored."
);
