//! `POST /api/v1/relation/follow` `{"target", "show_reposts"?, "notify"?}`.

use crate::outcome::RelationOutcome;
use axum::extract::State;
use relations_domain::{PrefsChange, RelationCommand, UserId};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::run::{run, Answer};
use crate::extract::ApiJson;
use crate::routes::command::CommandRequest;
use crate::routes::contract::RelationCommandErrors;
use crate::state::AppState;

/// The request body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct FollowBody {
    /// The user to follow.
    #[serde(deserialize_with = "relations_domain::ids::integral_user")]
    pub target: UserId,
    /// Keep the target's reposts in the feed (issue 44). A new follow: true when omitted; a
    /// follow that holds: its value is kept when omitted.
    #[serde(default)]
    pub show_reposts: Option<bool>,
    /// Be notified of each new post of the target (`posted`). A new follow: false when
    /// omitted; a follow that holds: its value is kept when omitted.
    #[serde(default)]
    pub notify: Option<bool>,
}

/// Follow the target; when the target's account is locked, ask to (`requested: true`), the
/// preferences kept for the follow the approval makes. Following again with other preferences
/// changes them (`changed: true`); `show_reposts` and `notify` are private, as `muting`.
#[utoipa::path(post, path = "/api/v1/relation/follow", tag = "commands", request_body = FollowBody,
    params(CommandRequest), security(("bearer" = [])),
    responses((status = 200, body = RelationOutcome, links(
                  ("status" = (operation_id = "status", parameters(("from" = "$response.body#/relation/from"), ("to" = "$response.body#/relation/to")))),
                  ("followers" = (operation_id = "followers", parameters(("id" = "$response.body#/relation/to")))),
                  ("counts" = (operation_id = "counts", parameters(("id" = "$response.body#/relation/to")))))), RelationCommandErrors))]
pub async fn follow(
    State(state): State<AppState>,
    request: CommandRequest,
    ApiJson(body): ApiJson<FollowBody>,
) -> Answer {
    let command = RelationCommand::Follow {
        actor: request.actor(),
        target: body.target,
        prefs: PrefsChange {
            show_reposts: body.show_reposts,
            notify: body.notify,
        },
    };
    run(state, request, command, &body).await
}
