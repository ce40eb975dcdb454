//! A user's lists and counters, read from the in-memory graph (projector `following`'s read
//! models until it is loaded).

use axum::extract::{Path, State};
use axum::Json;
use relations_domain::UserId;
use relations_projections::relations::query::{Counts, ListEntry};
use relations_projections::relations::reads::{KeyedList, OffsetList, Source};
use relations_store::LogPosition;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiQuery;
use crate::routes::query::{
    graph_source, items, limit, offset, Cursor, CursorPage, KeyedParams, OffsetPage,
};
use crate::state::AppState;

/// The `{id}` path segment.
fn user(raw: &str) -> Result<UserId, ApiError> {
    raw.parse().map_err(|_| ApiError::NotFound)
}

/// Offset-paged list parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OffsetParams {
    /// Items to skip: default 0, at most 100000.
    #[param(minimum = 0, maximum = 100000)]
    offset: Option<i64>,
    /// Items per page: default 20, at most 100.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<i64>,
    /// Annotate each item with this user's relation to it.
    #[param(value_type = Option<i64>, minimum = 1)]
    viewer: Option<UserId>,
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<LogPosition>,
}

/// Whom the user follows, newest first: `{items, total, next_offset}`.
#[utoipa::path(get, path = "/api/v1/users/{id}/following", tag = "queries",
    params(("id" = i64, Path, description = "The user"), OffsetParams),
    responses((status = 200, body = OffsetPage), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
pub async fn following(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(p): ApiQuery<OffsetParams>,
) -> Result<Json<OffsetPage>, ApiError> {
    offset_list(&state, &id, p, OffsetList::Following).await
}

/// The user's friends, newest friendship first: `{items, total, next_offset}`.
#[utoipa::path(get, path = "/api/v1/users/{id}/friends", tag = "queries",
    params(("id" = i64, Path, description = "The user"), OffsetParams),
    responses((status = 200, body = OffsetPage), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
pub async fn friends(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(p): ApiQuery<OffsetParams>,
) -> Result<Json<OffsetPage>, ApiError> {
    offset_list(&state, &id, p, OffsetList::Friends).await
}

async fn offset_list(
    state: &AppState,
    id: &str,
    p: OffsetParams,
    list: OffsetList,
) -> Result<Json<OffsetPage>, ApiError> {
    let (user, offset, limit) = (user(id)?, offset(p.offset)?, limit(p.limit)?);
    let source = graph_source(state, p.min_position).await?;
    let slice = source.offset_page(list, user, offset, limit).await?;
    let next = offset + slice.edges.len() as i64;
    let next_offset = (next < slice.total && !slice.edges.is_empty()).then_some(next);
    Ok(Json(OffsetPage {
        items: items(source, &slice.edges, p.viewer).await?,
        total: slice.total,
        next_offset,
    }))
}

/// Cursor-paged list parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CursorParams {
    /// The previous page's `next_cursor`.
    #[param(pattern = r"^-?[0-9]{1,18}\.[0-9]{1,18}$")]
    cursor: Option<String>,
    /// Items per page: default 20, at most 100.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<i64>,
    /// Annotate each item with this user's relation to it.
    #[param(value_type = Option<i64>, minimum = 1)]
    viewer: Option<UserId>,
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<LogPosition>,
}

/// Who follows the user, newest first, search-after cursor: `{items, next_cursor}`.
#[utoipa::path(get, path = "/api/v1/users/{id}/followers", tag = "queries",
    params(("id" = i64, Path, description = "The user"), CursorParams),
    responses((status = 200, body = CursorPage), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
pub async fn followers(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(p): ApiQuery<CursorParams>,
) -> Result<Json<CursorPage>, ApiError> {
    let (user, limit) = (user(&id)?, limit(p.limit)?);
    let after = p.cursor.as_deref().map(Cursor::parse).transpose()?;
    let source = graph_source(&state, p.min_position).await?;
    let mut page = source
        .keyed_page(
            KeyedList::Followers,
            user,
            after.map(Cursor::key),
            limit + 1,
        )
        .await?;
    cursor_page(source, &mut page, p.viewer, limit)
        .await
        .map(Json)
}

/// `known_followers`' answer: `{items, total, next_cursor}`.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct KnownFollowersPage {
    /// Newest follow of the user first; `since` is when that follower began following them.
    pub items: Vec<crate::routes::query::ListItem>,
    /// How many followers of the user the caller follows.
    pub total: i64,
    /// The next page's cursor; none after the last page.
    pub next_cursor: Option<String>,
}

/// Followers of the user whom the caller follows ("followed by people you know"), newest
/// first, with their number: `{items, total, next_cursor}`.
#[utoipa::path(get, path = "/api/v1/users/{id}/known_followers", tag = "queries",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "The user"), KeyedParams),
    responses((status = 200, body = KnownFollowersPage), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 404, body = ErrorBody),
              (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
pub async fn known_followers(
    State(state): State<AppState>,
    actor: crate::auth::Actor,
    Path(id): Path<String>,
    ApiQuery(p): ApiQuery<KeyedParams>,
) -> Result<Json<KnownFollowersPage>, ApiError> {
    let (user, limit) = (user(&id)?, limit(p.limit)?);
    let after = p.cursor.as_deref().map(Cursor::parse).transpose()?;
    let source = graph_source(&state, p.min_position).await?;
    let (mut page, total) = source
        .known_followers(actor.user, user, after.map(Cursor::key), limit + 1)
        .await?;
    let CursorPage { items, next_cursor } = cursor_page(source, &mut page, None, limit).await?;
    Ok(Json(KnownFollowersPage {
        items,
        total,
        next_cursor,
    }))
}

/// Turns `limit + 1` rows into a page and the cursor after it.
pub async fn cursor_page(
    source: Source<'_>,
    page: &mut Vec<ListEntry>,
    viewer: Option<UserId>,
    limit: i64,
) -> Result<CursorPage, ApiError> {
    let more = page.len() as i64 > limit;
    page.truncate(limit as usize);
    let next_cursor = if more {
        page.last().map(|e| Cursor::after(e).to_string())
    } else {
        None
    };
    Ok(CursorPage {
        items: items(source, page, viewer).await?,
        next_cursor,
    })
}

/// Counts parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CountsParams {
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<LogPosition>,
}

/// `{following, followers, friends, posts}`.
#[utoipa::path(get, path = "/api/v1/users/{id}/counts", tag = "queries",
    params(("id" = i64, Path, description = "The user"), CountsParams),
    responses((status = 200, body = Counts), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
pub async fn counts(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(p): ApiQuery<CountsParams>,
) -> Result<Json<Counts>, ApiError> {
    let user = user(&id)?;
    let source = graph_source(&state, p.min_position).await?;
    Ok(Json(source.counts(user).await?))
}
