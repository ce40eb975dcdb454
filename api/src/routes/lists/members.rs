//! `/api/v1/lists/{id}/members`: a list's members, and adding or removing some.

use axum::extract::State;
use axum::Json;
use relations_domain::{lists::MAX_NAMED, ListCommand, ListId, UserId};
use relations_projections::lists::query;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::run::run;
use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, PathId};
use crate::outcome::{ListOutcome, MembersChanged};
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::contract::BearerQueryErrors;
use crate::routes::contract::ListCommandErrors;
use crate::routes::page::{Page, SinceKey};
use crate::routes::query::{cursor_page, graph_source, wait_for_essential, CursorPage};
use crate::state::AppState;

/// A members call's body: `{users}`, 1 to 100 ids.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Members {
    /// Whom (repeats count once).
    #[schema(value_type = Vec<UserId>, min_items = 1, max_items = 100)]
    pub users: Vec<Named>,
}

/// A user id in a body, as every body takes one (`2.0` is 2).
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(transparent)]
pub struct Named(#[serde(deserialize_with = "relations_domain::ids::integral_user")] UserId);

impl Members {
    /// The users named, each once, in order; 400 when none or more than 100.
    fn named(&self) -> Result<Vec<UserId>, ApiError> {
        let mut users: Vec<UserId> = self.users.iter().map(|n| n.0).collect();
        users.sort_unstable();
        users.dedup();
        if users.is_empty() || self.users.len() > MAX_NAMED {
            return Err(ApiError::InvalidInput(format!(
                "users names 1 to {MAX_NAMED} users"
            )));
        }
        Ok(users)
    }
}

async fn change(
    state: AppState,
    request: CommandRequest,
    list: ListId,
    body: Members,
    add: bool,
) -> Result<CommandAnswer<ListOutcome>, ApiError> {
    let command = ListCommand::Members {
        owner: request.actor(),
        list,
        users: body.named()?,
        add,
    };
    run(state, request, command, &(list, &body)).await
}

/// Adds users the caller follows to the list: `{changed, position}`. One user not followed
/// refuses the whole call (409 `NOT_FOLLOWING`), and nothing changes.
#[utoipa::path(post, path = "/api/v1/lists/{id}/members", tag = "commands",
    request_body = Members,
    params(("id" = String, Path, description = "The list"), CommandRequest),
    security(("bearer" = [])),
    responses((status = 200, body = MembersChanged), ListCommandErrors))]
pub async fn add_list_members(
    State(state): State<AppState>,
    request: CommandRequest,
    PathId(list): PathId<ListId>,
    ApiJson(body): ApiJson<Members>,
) -> Result<CommandAnswer<ListOutcome>, ApiError> {
    change(state, request, list, body, true).await
}

/// Removes users from the list: `{changed, position}`.
#[utoipa::path(delete, path = "/api/v1/lists/{id}/members", tag = "commands",
    request_body = Members,
    params(("id" = String, Path, description = "The list"), CommandRequest),
    security(("bearer" = [])),
    responses((status = 200, body = MembersChanged), ListCommandErrors))]
pub async fn remove_list_members(
    State(state): State<AppState>,
    request: CommandRequest,
    PathId(list): PathId<ListId>,
    ApiJson(body): ApiJson<Members>,
) -> Result<CommandAnswer<ListOutcome>, ApiError> {
    change(state, request, list, body, false).await
}

/// The list's members, newest first: `{items: [{user, since}], next_cursor}`.
#[utoipa::path(get, path = "/api/v1/lists/{id}/members", tag = "queries",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "The list"), Page<SinceKey>),
    responses((status = 200, body = CursorPage), BearerQueryErrors,
              (status = 404, body = ErrorBody, description = "not a list of the caller's")))]
pub async fn list_members(
    State(state): State<AppState>,
    actor: Actor,
    PathId(list): PathId<ListId>,
    page: Page<SinceKey>,
) -> Result<Json<CursorPage>, ApiError> {
    let pool = wait_for_essential(&state, page.min_position).await?;
    if query::list(pool, actor.user, list).await?.is_none() {
        return Err(ApiError::NotFound);
    }
    let rows = query::members(pool, list, page.after, page.probe()).await?;
    let source = graph_source(&state, page.min_position).await?;
    cursor_page(source, &page, rows, None).await.map(Json)
}
