//! `/api/v1/me/*`: the caller's own private lists, and their settings.

use axum::extract::State;
use axum::routing::{get, put};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use relations_domain::UserId;
use relations_projections::history::{self, query::ChangeKey};
use relations_projections::relations::reads::KeyedList;
use relations_store::LogPosition;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi, ToSchema};

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiJson, ApiQuery};
use crate::outcome::Settings;
use crate::routes::command::CommandRequest;
use crate::routes::query::{
    graph_source, limit, wait_for_projectors, Cursor, CursorPage, KeyedParams,
};
use crate::routes::users::cursor_page;
use crate::state::AppState;

/// The `me` routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/me/blocks", get(blocks))
        .route("/api/v1/me/mutes", get(mutes))
        .route("/api/v1/me/follow_requests", get(follow_requests))
        .route("/api/v1/me/settings", put(settings))
        .route("/api/v1/me/follower_changes", get(follower_changes))
}

/// The `me` routes' contract.
#[derive(OpenApi)]
#[openapi(paths(blocks, mutes, follow_requests, settings, follower_changes))]
pub struct Doc;

/// `follower_changes` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChangesParams {
    /// Changes at or after this moment (RFC 3339).
    #[param(value_type = String, format = DateTime)]
    since: DateTime<Utc>,
    /// The previous page's `next_cursor`.
    #[param(pattern = r"^-?[0-9]{1,18}\.[0-9]{1,18}\.[0-9]{1,18}$")]
    cursor: Option<String>,
    /// Items per page: default 20, at most 100.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<i64>,
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<LogPosition>,
}

/// One change of the caller's followers: `{user, change, at}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FollowerChangeItem {
    /// The follower.
    pub user: UserId,
    /// `followed` or `unfollowed` (an unfollow, a block either way, or a removal).
    #[schema(pattern = "^(followed|unfollowed)$")]
    pub change: &'static str,
    /// When.
    pub at: DateTime<Utc>,
}

/// A page of follower changes: `{items, next_cursor}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FollowerChangePage {
    /// Newest first; one item per event.
    pub items: Vec<FollowerChangeItem>,
    /// The next page's cursor; none after the last page.
    pub next_cursor: Option<String>,
}

/// The cursor of a follower-changes page: `"{at µs}.{tx}.{gp}"`, the last item's time and log
/// position.
fn change_cursor(raw: &str) -> Result<ChangeKey, ApiError> {
    let bad = || ApiError::InvalidInput("malformed cursor".into());
    let mut parts = raw
        .splitn(3, '.')
        .map(|p| p.parse::<i64>().map_err(|_| bad()));
    let (Some(micros), Some(tx), Some(gp)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    let at = DateTime::<Utc>::from_timestamp_micros(micros?).ok_or_else(bad)?;
    let position = LogPosition {
        transaction_id: tx?,
        global_position: gp?,
    };
    Ok((at, position))
}

/// Who started and who stopped following the caller since a moment, newest first, one item per
/// event (a follow and an unfollow after `since` are two items): `{items, next_cursor}`.
#[utoipa::path(get, path = "/api/v1/me/follower_changes", tag = "queries", security(("bearer" = [])),
    params(ChangesParams),
    responses((status = 200, body = FollowerChangePage), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
async fn follower_changes(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<ChangesParams>,
) -> Result<Json<FollowerChangePage>, ApiError> {
    let limit = limit(p.limit)?;
    let before = p.cursor.as_deref().map(change_cursor).transpose()?;
    wait_for_projectors(&state, &[history::NAME], p.min_position).await?;
    let mut page =
        history::query::follower_changes(&state.pool, actor.user, p.since, before, limit + 1)
            .await?;
    let more = page.len() as i64 > limit;
    page.truncate(limit as usize);
    let next_cursor = more
        .then(|| page.last())
        .flatten()
        .map(|c| format!("{}.{}", c.at.timestamp_micros(), c.position));
    Ok(Json(FollowerChangePage {
        items: page
            .into_iter()
            .map(|c| FollowerChangeItem {
                user: c.user,
                change: if c.followed { "followed" } else { "unfollowed" },
                at: c.at,
            })
            .collect(),
        next_cursor,
    }))
}

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
    let position = state
        .settings
        .set_locked(request.actor(), body.locked, &request.metadata)
        .await?;
    metrics::counter!("relations_commands_total", "command" => "settings").increment(1);
    Ok(Json(Settings {
        locked: body.locked,
        position,
    }))
}

/// Who asks to follow the caller (pending requests), newest first: `{items, next_cursor}`.
#[utoipa::path(get, path = "/api/v1/me/follow_requests", tag = "queries", security(("bearer" = [])),
    params(KeyedParams),
    responses((status = 200, body = CursorPage), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
async fn follow_requests(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<KeyedParams>,
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
    params(KeyedParams),
    responses((status = 200, body = MutePage), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
async fn mutes(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<KeyedParams>,
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

/// Whom the caller blocks, newest first: `{items, next_cursor}`.
#[utoipa::path(get, path = "/api/v1/me/blocks", tag = "queries", security(("bearer" = [])),
    params(KeyedParams),
    responses((status = 200, body = CursorPage), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
async fn blocks(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<KeyedParams>,
) -> Result<Json<CursorPage>, ApiError> {
    keyed(state, actor, p, KeyedList::Blocking).await
}

/// A page of one of the caller's keyed lists.
async fn keyed(
    state: AppState,
    actor: Actor,
    p: KeyedParams,
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
