//! `/api/v1/me/*`: the caller's own private lists, and their settings.

use axum::extract::State;
use axum::routing::{get, put};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use relations_domain::UserId;
use relations_projections::following::reads::KeyedList;
use relations_store::{LogPosition, Settings};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiQuery};
use crate::routes::command::CommandRequest;
use crate::routes::query::{graph_source, limit, Cursor, CursorPage};
use crate::routes::users::cursor_page;
use crate::state::AppState;

/// The `me` routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/me/blocks", get(blocks))
        .route("/api/v1/me/mutes", get(mutes))
        .route("/api/v1/me/follow_requests", get(follow_requests))
        .route("/api/v1/me/settings", put(settings))
}

/// The `me` routes' contract.
#[derive(OpenApi)]
#[openapi(paths(blocks, mutes, follow_requests, settings))]
pub struct Doc;

/// `PUT /me/settings`'s body.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SettingsBody {
    /// Whether the caller approves their followers. Unlocking approves every pending request.
    pub locked: bool,
}

/// Locks or unlocks the caller's account. A follow of a locked account is a request the owner
/// approves; unlocking approves every pending request at once, in one transaction.
#[utoipa::path(put, path = "/api/v1/me/settings", tag = "commands", request_body = SettingsBody,
    security(("bearer" = [])),
    responses((status = 200, body = Settings, description = "`position` is null when nothing changed"),
              (status = 400, body = ErrorBody), (status = 401, body = ErrorBody),
              (status = 413, body = ErrorBody), (status = 415, body = ErrorBody),
              (status = 429, body = ErrorBody, description = "RATE_LIMITED, with Retry-After"),
              (status = 503, body = ErrorBody, description = "UNAVAILABLE, with Retry-After")))]
async fn settings(
    State(state): State<AppState>,
    mut request: CommandRequest,
    ApiJson(body): ApiJson<SettingsBody>,
) -> Result<Json<Settings>, ApiError> {
    // A PUT is idempotent by itself: an Idempotency-Key is accepted and not needed.
    request.admit(&state, "settings", &body).await?;
    let settings = state
        .settings
        .set_locked(request.actor(), body.locked, &request.metadata)
        .await?;
    metrics::counter!("relations_commands_total", "command" => "settings").increment(1);
    Ok(Json(settings))
}

/// Who asks to follow the caller (pending requests), newest first: `{items, next_cursor}`.
#[utoipa::path(get, path = "/api/v1/me/follow_requests", tag = "queries", security(("bearer" = [])),
    params(BlocksParams),
    responses((status = 200, body = CursorPage), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
async fn follow_requests(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<BlocksParams>,
) -> Result<Json<CursorPage>, ApiError> {
    keyed(state, actor, p, KeyedList::FollowRequests).await
}

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

/// `blocks`, `mutes` and `follow_requests` parameters.
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
    keyed(state, actor, p, KeyedList::Blocking).await
}

/// A page of one of the caller's keyed lists.
async fn keyed(
    state: AppState,
    actor: Actor,
    p: BlocksParams,
    list: KeyedList,
) -> Result<Json<CursorPage>, ApiError> {
    let limit = limit(p.limit)?;
    let after = p.cursor.as_deref().map(Cursor::parse).transpose()?;
    let source = graph_source(&state, p.min_position).await?;
    let mut page = source
        .keyed_page(list, actor.user, after.map(Cursor::key), limit + 1)
        .await?;
    cursor_page(source, &mut page, None, limit).await.map(Json)
}
