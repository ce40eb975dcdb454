//! `POST /api/v1/lists`, `PATCH` and `DELETE /api/v1/lists/{id}`: making, changing and
//! deleting a list of the caller's.

use axum::extract::State;
use relations_domain::{ListCommand, ListId, ListTitle};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::run::run;
use crate::error::ApiError;
use crate::extract::{ApiJson, PathId};
use crate::outcome::{ListAnswer, ListOutcome};
use crate::routes::command::{CommandAnswer, CommandRequest};
use crate::routes::contract::ListCommandErrors;
use crate::state::AppState;

/// `POST /api/v1/lists` body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewList {
    /// 1 to 100 characters, no NUL.
    #[schema(min_length = 1, max_length = 100, pattern = r"^[^\x00]*$")]
    pub title: String,
    /// Whether its members leave the caller's home feed (default false).
    #[serde(default)]
    pub exclusive: bool,
}

/// `PATCH /api/v1/lists/{id}` body: each field omitted stays.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ListChanges {
    /// A new title: 1 to 100 characters, no NUL.
    #[schema(min_length = 1, max_length = 100, pattern = r"^[^\x00]*$")]
    pub title: Option<String>,
    /// Whether its members leave the caller's home feed.
    pub exclusive: Option<bool>,
}

fn title(text: &str) -> Result<ListTitle, ApiError> {
    ListTitle::parse(text).map_err(|e| ApiError::InvalidInput(e.to_string()))
}

/// Makes a list: `201 {list, position}`. At most 100 lists a user.
#[utoipa::path(post, path = "/api/v1/lists", tag = "commands",
    request_body = NewList, params(CommandRequest), security(("bearer" = [])),
    responses((status = 201, body = ListAnswer), ListCommandErrors))]
pub async fn create_list(
    State(state): State<AppState>,
    request: CommandRequest,
    ApiJson(body): ApiJson<NewList>,
) -> Result<CommandAnswer<ListOutcome>, ApiError> {
    let command = ListCommand::Create {
        owner: request.actor(),
        list: ListId::from_uuid(uuid::Uuid::now_v7()),
        title: title(&body.title)?,
        exclusive: body.exclusive,
        at: relations_store::metadata::now(),
    };
    run(state, request, command, &body).await
}

/// Renames a list or changes whether it is exclusive: `{list, position}` (`position` null when
/// nothing changed).
#[utoipa::path(patch, path = "/api/v1/lists/{id}", tag = "commands",
    request_body = ListChanges,
    params(("id" = String, Path, description = "The list"), CommandRequest),
    security(("bearer" = [])),
    responses((status = 200, body = ListAnswer), ListCommandErrors))]
pub async fn update_list(
    State(state): State<AppState>,
    request: CommandRequest,
    PathId(list): PathId<ListId>,
    ApiJson(body): ApiJson<ListChanges>,
) -> Result<CommandAnswer<ListOutcome>, ApiError> {
    let command = ListCommand::Update {
        owner: request.actor(),
        list,
        title: body.title.as_deref().map(title).transpose()?,
        exclusive: body.exclusive,
    };
    run(state, request, command, &(list, &body)).await
}

/// Deletes a list and its members: `{position}`.
#[utoipa::path(delete, path = "/api/v1/lists/{id}", tag = "commands",
    params(("id" = String, Path, description = "The list"), CommandRequest),
    security(("bearer" = [])),
    responses((status = 200, body = crate::outcome::Deleted), ListCommandErrors))]
pub async fn delete_list(
    State(state): State<AppState>,
    request: CommandRequest,
    PathId(list): PathId<ListId>,
) -> Result<CommandAnswer<ListOutcome>, ApiError> {
    let command = ListCommand::Delete {
        owner: request.actor(),
        list,
    };
    run(state, request, command, &list).await
}
