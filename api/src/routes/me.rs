//! `/api/v1/me/*`: the caller's own private lists.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use relations_domain::UserId;
use relations_projections::following::reads::KeyedList;
use relations_store::LogPosition;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiQuery;
use crate::routes::query::{graph_source, limit, Cursor, CursorPage};
use crate::routes::users::cursor_page;
use crate::state::AppState;

/// The `me` routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/me/blocks", get(blocks))
        .route("/api/v1/me/mutes", get(mutes))
}

/// The `me` routes' contract.
#[derive(OpenApi)]
#[openapi(paths(blocks, mutes))]
pub struct Doc;

/// One mute of the caller's: `{user, since, expires_at}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct MuteItem {
    /// The muted user.
    pub user: UserId,
    /// Since when (the last mute set).
    pub since: DateTime<Utc>,
    /// When it ends by itself; null: never.
    pub expires_at: Option<DateTime<Utc>>,
}

/// A page of mutes: `{items, next_cursor}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct MutePage {
    /// Newest first.
    pub items: Vec<MuteItem>,
    /// The next page's cursor; none after the last page.
    pub next_cursor: Option<String>,
}

/// Whom the caller mutes now (ended mutes are gone), newest first: `{items, next_cursor}`.
#[utoipa::path(get, path = "/api/v1/me/mutes", tag = "queries", security(("bearer" = [])),
    params(BlocksParams),
    responses((status = 200, body = MutePage), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
async fn mutes(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<BlocksParams>,
) -> Result<Json<MutePage>, ApiError> {
    let limit = limit(p.limit)?;
    let after = p.cursor.as_deref().map(Cursor::parse).transpose()?;
    let source = graph_source(&state, p.min_position).await?;
    let mut page = source
        .mutes(actor.user, after.map(Cursor::key), limit + 1, Utc::now())
        .await?;
    let more = page.len() as i64 > limit;
    page.truncate(limit as usize);
    let next_cursor = more
        .then(|| page.last().map(|(edge, _)| Cursor::after(edge).to_string()))
        .flatten();
    Ok(Json(MutePage {
        items: page
            .into_iter()
            .map(|(edge, expires_at)| MuteItem {
                user: edge.user,
                since: edge.since,
                expires_at,
            })
            .collect(),
        next_cursor,
    }))
}

/// `blocks` and `mutes` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BlocksParams {
    /// The previous page's `next_cursor`.
    #[param(pattern = r"^-?[0-9]{1,18}\.[0-9]{1,18}$")]
    cursor: Option<String>,
    /// Items per page: default 20, at most 100.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<i64>,
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<LogPosition>,
}

/// Whom the caller blocks, newest first: `{items, next_cursor}`.
#[utoipa::path(get, path = "/api/v1/me/blocks", tag = "queries", security(("bearer" = [])),
    params(BlocksParams),
    responses((status = 200, body = CursorPage), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
async fn blocks(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<BlocksParams>,
) -> Result<Json<CursorPage>, ApiError> {
    let limit = limit(p.limit)?;
    let after = p.cursor.as_deref().map(Cursor::parse).transpose()?;
    let source = graph_source(&state, p.min_position).await?;
    let mut page = source
        .keyed_page(
            KeyedList::Blocking,
            actor.user,
            after.map(Cursor::key),
            limit + 1,
        )
        .await?;
    cursor_page(source, &mut page, None, limit).await.map(Json)
}
