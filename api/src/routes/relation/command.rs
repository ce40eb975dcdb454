//! `POST /api/v1/relation/{follow,unfollow,block,unblock,remove_follower,unmute}` and
//! `/api/v1/relation/follow_requests/{approve,reject}`, each with `{"target": <user id>}`.

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{post, MethodRouter};
use relations_domain::{RelationCommand, UserId};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiJson;
use crate::outcome::RelationOutcome;
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::state::AppState;

/// Which relation command a route carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// `POST /api/v1/relation/follow`
    Follow,
    /// `POST /api/v1/relation/unfollow`
    Unfollow,
    /// `POST /api/v1/relation/block`
    Block,
    /// `POST /api/v1/relation/unblock`
    Unblock,
    /// `POST /api/v1/relation/remove_follower`
    RemoveFollower,
    /// `POST /api/v1/relation/unmute`
    Unmute,
    /// `POST /api/v1/relation/follow_requests/approve`
    Approve,
    /// `POST /api/v1/relation/follow_requests/reject`
    Reject,
}

impl Verb {
    /// Every verb, in the order the routes are listed.
    pub const ALL: [Verb; 8] = [
        Verb::Follow,
        Verb::Unfollow,
        Verb::Block,
        Verb::Unblock,
        Verb::RemoveFollower,
        Verb::Unmute,
        Verb::Approve,
        Verb::Reject,
    ];

    /// The route that carries it.
    pub fn path(self) -> &'static str {
        match self {
            Verb::Follow => "/api/v1/relation/follow",
            Verb::Unfollow => "/api/v1/relation/unfollow",
            Verb::Block => "/api/v1/relation/block",
            Verb::Unblock => "/api/v1/relation/unblock",
            Verb::RemoveFollower => "/api/v1/relation/remove_follower",
            Verb::Unmute => "/api/v1/relation/unmute",
            Verb::Approve => "/api/v1/relation/follow_requests/approve",
            Verb::Reject => "/api/v1/relation/follow_requests/reject",
        }
    }

    fn command(self, actor: UserId, target: UserId) -> RelationCommand {
        match self {
            Verb::Follow => RelationCommand::Follow { actor, target },
            Verb::Unfollow => RelationCommand::Unfollow { actor, target },
            Verb::Block => RelationCommand::Block { actor, target },
            Verb::Unblock => RelationCommand::Unblock { actor, target },
            Verb::RemoveFollower => RelationCommand::RemoveFollower { actor, target },
            Verb::Approve => RelationCommand::ApproveRequest { actor, target },
            Verb::Reject => RelationCommand::RejectRequest { actor, target },
            Verb::Unmute => RelationCommand::Unmute {
                actor,
                target,
                now: chrono::Utc::now(),
            },
        }
    }
}

/// The request body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct TargetBody {
    /// The other user.
    #[serde(deserialize_with = "relations_domain::ids::integral_user")]
    pub target: UserId,
}

/// The route for `verb`: parses, rate-limits, then decides and appends.
pub fn route(verb: Verb) -> MethodRouter<AppState> {
    post(
        move |State(state): State<AppState>,
              request: CommandRequest,
              ApiJson(body): ApiJson<TargetBody>| async move {
            handle(verb, state, request, body).await
        },
    )
}

async fn handle(
    verb: Verb,
    state: AppState,
    request: CommandRequest,
    body: TargetBody,
) -> Result<CommandAnswer<RelationOutcome>, ApiError> {
    let command = verb.command(request.actor(), body.target);
    run(state, request, command, &body).await
}

/// Decides `command` (whose request body was `body`) and answers it.
pub async fn run(
    state: AppState,
    mut request: CommandRequest,
    command: RelationCommand,
    body: &impl Serialize,
) -> Result<CommandAnswer<RelationOutcome>, ApiError> {
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

/// The contract of one route [`route`] serves: one shared handler cannot carry four
/// `#[utoipa::path]`s, so each route gets a doc-only function naming the handler's own types.
macro_rules! command_doc {
    ($fn:ident, $path:literal, $summary:literal) => {
        #[doc = $summary]
        #[utoipa::path(post, path = $path, tag = "commands", request_body = TargetBody,
            params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer for a retry", pattern = r"^[!-~]{1,255}$")),
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

command_doc!(
    follow,
    "/api/v1/relation/follow",
    "Follow the target; when the target's account is locked, ask to (`requested: true`)."
);
command_doc!(
    unfollow,
    "/api/v1/relation/unfollow",
    "Stop following the target, or withdraw a pending request to follow them."
);
command_doc!(
    approve,
    "/api/v1/relation/follow_requests/approve",
    "Approve the target's pending request: they follow the caller (no request: `changed: false`)."
);
command_doc!(
    reject,
    "/api/v1/relation/follow_requests/reject",
    "Refuse the target's pending request (no request: `changed: false`)."
);
command_doc!(
    block,
    "/api/v1/relation/block",
    "Block the target; ends follows and pending requests both ways."
);
command_doc!(
    unblock,
    "/api/v1/relation/unblock",
    "Lift a block; follows are not restored."
);
command_doc!(
    unmute,
    "/api/v1/relation/unmute",
    "Lift the caller's mute on the target (a mute that already ended changes nothing)."
);
command_doc!(
    remove_follower,
    "/api/v1/relation/remove_follower",
    "Remove the target from the caller's followers, without blocking them (they may follow again)."
);
