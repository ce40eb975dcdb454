//! A user's lists and counters, read from projector `following`'s read models.

use axum::extract::{Path, State};
use axum::Json;
use relations_domain::UserId;
use relations_projections::following::query as read;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::query::{catch_up, items, limit, offset, Cursor};
use crate::state::AppState;
use relations_projections::following::cache::Entry;

/// The `{id}` path segment.
fn user(raw: &str) -> Result<UserId, ApiError> {
    raw.parse().map_err(|_| ApiError::NotFound)
}

/// Offset-paged list parameters.
#[derive(Debug, Deserialize)]
pub struct OffsetParams {
    offset: Option<i64>,
    limit: Option<i64>,
    viewer: Option<UserId>,
    min_position: Option<String>,
}

/// Whom the user follows, newest first: `{items, total, next_offset}`.
pub async fn following(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(p): ApiQuery<OffsetParams>,
) -> Result<Json<Value>, ApiError> {
    offset_list(&state, &id, p, OffsetList::Following).await
}

/// The user's friends, newest friendship first: `{items, total, next_offset}`.
pub async fn friends(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(p): ApiQuery<OffsetParams>,
) -> Result<Json<Value>, ApiError> {
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
) -> Result<Json<Value>, ApiError> {
    let (user, offset, limit) = (user(id)?, offset(p.offset)?, limit(p.limit)?);
    catch_up(state, p.min_position.as_deref()).await?;
    let load = async {
        let page = match list {
            OffsetList::Following => read::following(&state.pool, user, offset, limit).await?,
            OffsetList::Friends => read::friends(&state.pool, user, offset, limit).await?,
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
async fn cached_if(
    state: &AppState,
    plain: bool,
    user: UserId,
    entry: Entry,
    load: impl std::future::Future<Output = Result<Value, ApiError>>,
) -> Result<Json<Value>, ApiError> {
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
) -> Result<Value, ApiError> {
    let next = offset + page.len() as i64;
    let next_offset = (next < total && !page.is_empty()).then_some(next);
    Ok(json!({
        "items": items(state, page, viewer).await?,
        "total": total,
        "next_offset": next_offset,
    }))
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
#[derive(Debug, Deserialize)]
pub struct CursorParams {
    cursor: Option<String>,
    limit: Option<i64>,
    viewer: Option<UserId>,
    min_position: Option<String>,
}

/// Who follows the user, newest first, search-after cursor: `{items, next_cursor}`.
pub async fn followers(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(p): ApiQuery<CursorParams>,
) -> Result<Json<Value>, ApiError> {
    let (user, limit) = (user(&id)?, limit(p.limit)?);
    let after = p.cursor.as_deref().map(Cursor::parse).transpose()?;
    catch_up(&state, p.min_position.as_deref()).await?;
    let load = async {
        let mut page =
            read::followers(&state.pool, user, after.map(Cursor::key), limit + 1).await?;
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
) -> Result<Value, ApiError> {
    let more = page.len() as i64 > limit;
    page.truncate(limit as usize);
    let next_cursor = if more {
        page.last().map(|e| Cursor::after(e).to_string())
    } else {
        None
    };
    Ok(json!({
        "items": items(state, page, viewer).await?,
        "next_cursor": next_cursor,
    }))
}

/// Counts parameters.
#[derive(Debug, Deserialize)]
pub struct CountsParams {
    min_position: Option<String>,
}

/// `{following, followers, friends, posts}`.
pub async fn counts(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(p): ApiQuery<CountsParams>,
) -> Result<Json<read::Counts>, ApiError> {
    let user = user(&id)?;
    if p.min_position.is_some() {
        catch_up(&state, p.min_position.as_deref()).await?;
        return Ok(Json(read::counts(&state.pool, user).await?));
    }
    let load = async { Ok::<_, ApiError>(read::counts(&state.pool, user).await?) };
    Ok(Json(
        state
            .cache
            .get_or_load(user.get(), Entry::Counts, load)
            .await?,
    ))
}
