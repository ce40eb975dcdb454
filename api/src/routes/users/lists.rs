//! A user's lists and counters, read from projector `following`'s read models.

use axum::extract::{Path, State};
use axum::Json;
use relations_domain::UserId;
use relations_projections::following::cache::Entry;
use relations_projections::following::query::{self as read, Counts};
use relations_store::LogPosition;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use utoipa::IntoParams;

use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiQuery;
use crate::routes::query::{catch_up, items, limit, offset, Cursor, CursorPage, OffsetPage};
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
    offset: Option<i64>,
    /// Items per page: default 20, at most 100.
    limit: Option<i64>,
    /// Annotate each item with this user's relation to it.
    #[param(value_type = Option<i64>)]
    viewer: Option<UserId>,
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>)]
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

/// The two offset-paged lists.
#[derive(Clone, Copy)]
enum OffsetList {
    Following,
    Friends,
}

async fn offset_list(
    state: &AppState,
    id: &str,
    p: OffsetParams,
    list: OffsetList,
) -> Result<Json<OffsetPage>, ApiError> {
    let (user, offset, limit) = (user(id)?, offset(p.offset)?, limit(p.limit)?);
    catch_up(state, p.min_position).await?;
    let load = async {
        let page = match list {
            OffsetList::Following => {
                read::FOLLOWING
                    .page(&state.pool, user, offset, limit)
                    .await?
            }
            OffsetList::Friends => read::FRIENDS.page(&state.pool, user, offset, limit).await?,
        };
        let counts = read::counts(&state.pool, user).await?;
        let total = match list {
            OffsetList::Following => counts.following,
            OffsetList::Friends => counts.friends,
        };
        offset_page(state, &page, p.viewer, offset, total).await
    };
    let entry = match list {
        OffsetList::Following => Entry::FirstFollowing,
        OffsetList::Friends => Entry::FirstFriends,
    };
    cached_if(state, p.is_first_plain_page(), user, entry, load).await
}

/// Serves `load` through the cache when `plain` (the page shape the cache holds).
async fn cached_if<T: Serialize + DeserializeOwned>(
    state: &AppState,
    plain: bool,
    user: UserId,
    entry: Entry,
    load: impl std::future::Future<Output = Result<T, ApiError>>,
) -> Result<Json<T>, ApiError> {
    if plain {
        state
            .cache
            .get_or_load(user.get(), entry, load)
            .await
            .map(Json)
    } else {
        load.await.map(Json)
    }
}

async fn offset_page(
    state: &AppState,
    page: &[read::Edge],
    viewer: Option<UserId>,
    offset: i64,
    total: i64,
) -> Result<OffsetPage, ApiError> {
    let next = offset + page.len() as i64;
    let next_offset = (next < total && !page.is_empty()).then_some(next);
    Ok(OffsetPage {
        items: items(state, page, viewer).await?,
        total,
        next_offset,
    })
}

impl OffsetParams {
    /// The page hot lists are asked for most: cached.
    fn is_first_plain_page(&self) -> bool {
        self.offset.unwrap_or(0) == 0
            && self.limit.is_none()
            && self.viewer.is_none()
            && self.min_position.is_none()
    }
}

/// Cursor-paged list parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CursorParams {
    /// The previous page's `next_cursor`.
    cursor: Option<String>,
    /// Items per page: default 20, at most 100.
    limit: Option<i64>,
    /// Annotate each item with this user's relation to it.
    #[param(value_type = Option<i64>)]
    viewer: Option<UserId>,
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>)]
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
    catch_up(&state, p.min_position).await?;
    let load = async {
        let mut page = read::FOLLOWERS
            .page(&state.pool, user, after.map(Cursor::key), limit + 1)
            .await?;
        cursor_page(&state, &mut page, p.viewer, limit).await
    };
    let plain =
        p.cursor.is_none() && p.limit.is_none() && p.viewer.is_none() && p.min_position.is_none();
    cached_if(&state, plain, user, Entry::FirstFollowers, load).await
}

/// Turns `limit + 1` rows into a page and the cursor after it.
pub async fn cursor_page(
    state: &AppState,
    page: &mut Vec<read::Edge>,
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
        items: items(state, page, viewer).await?,
        next_cursor,
    })
}

/// Counts parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CountsParams {
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>)]
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
    if p.min_position.is_some() {
        catch_up(&state, p.min_position).await?;
        return Ok(Json(read::counts(&state.pool, user).await?));
    }
    let load = async { Ok::<_, ApiError>(read::counts(&state.pool, user).await?) };
    cached_if(&state, true, user, Entry::Counts, load).await
}
