//! What every query shares: where graph reads come from, waiting for `min_position`, the
//! user-list answers and their viewer annotation (paging is in [`super::page`]).

use std::time::Duration;

use chrono::{DateTime, Utc};
use relations_domain::{Relation, UserId};
use relations_projections::feed::reader::FeedReader;
use relations_projections::privacy;
use relations_projections::relations::query::ListEntry;
use relations_projections::relations::reads::Source;
use relations_store::LogPosition;
use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::routes::page::{Page, SinceKey};
use crate::state::AppState;

/// Where a graph read (relations, lists, counts) comes from: the in-memory replica once it is
/// loaded, else the read models on the read pool; in either case after it reflects
/// `min_position`, when given. (The replica loads and tails from the read pool, so its position
/// is never ahead of what that pool holds.)
pub async fn graph_source(
    state: &AppState,
    min_position: Option<LogPosition>,
) -> Result<Source<'_>, ApiError> {
    let wait = Duration::from_millis(state.config.catch_up_wait_ms);
    match min_position {
        None if state.graph.position().is_some() => return Ok(&state.graph),
        None => {}
        Some(position) => match state.graph.wait_for(position, wait).await {
            Some(true) => return Ok(&state.graph),
            Some(false) => return Err(ApiError::NotCaughtUp),
            None => {}
        },
    }
    Ok(wait_for_essential(state, min_position).await?)
}

/// The feed's reader for a request (posts: the feed, `new_count`, timelines), once it
/// reflects `min_position`: the read models' pool and the graph source are waited for here,
/// once for every read of posts.
pub async fn feed_reader(
    state: &AppState,
    min_position: Option<LogPosition>,
) -> Result<FeedReader<'_>, ApiError> {
    let reads = wait_for_essential(state, min_position).await?;
    let source = graph_source(state, min_position).await?;
    Ok(FeedReader {
        replica: &state.graph,
        inboxes: &state.inboxes,
        likes: &state.likes,
        primary: &state.pool,
        reads,
        source,
        min_position,
    })
}

/// [`graph_source`] for a read about `user` (`/users/{id}/...`): 404 when the user is erased,
/// judged once the source reflects `min_position`.
pub async fn user_source(
    state: &AppState,
    user: UserId,
    min_position: Option<LogPosition>,
) -> Result<Source<'_>, ApiError> {
    let source = graph_source(state, min_position).await?;
    crate::routes::live::live_user(state, user).await?;
    Ok(source)
}

/// [`user_source`] for a read of `user`'s graph (following, followers, friends, known
/// followers): 403 `HIDDEN` when `user` hides it from `viewer` (issue 26's rule,
/// `relations_projections::privacy`), judged on the same source.
pub async fn graph_list_source(
    state: &AppState,
    user: UserId,
    viewer: Option<UserId>,
    min_position: Option<LogPosition>,
) -> Result<Source<'_>, ApiError> {
    let source = user_source(state, user, min_position).await?;
    match privacy::graph_hidden(source, viewer, user).await? {
        true => Err(ApiError::Hidden),
        false => Ok(source),
    }
}

/// The pool a read that waits for no position reads the read models from (the one place it is
/// chosen: `DATABASE_READ_URL`'s standby, else the primary).
pub fn read_pool(state: &AppState) -> &PgPool {
    &state.read_pool
}

/// The pool to read the read models from, once they reflect `min_position` there (when one is
/// given): see [`wait_for_projectors`].
pub async fn wait_for_essential(
    state: &AppState,
    min_position: Option<LogPosition>,
) -> Result<&PgPool, ApiError> {
    let names: Vec<&str> = state
        .projectors
        .iter()
        .filter(|p| p.essential)
        .map(|p| p.name)
        .collect();
    wait_for_projectors(state, &names, min_position).await
}

/// The one place a read picks its pool: the read pool (`DATABASE_READ_URL`'s standby, else the
/// primary), once projectors `names` have applied `min_position` there, when one is given.
///
/// The wait reads the checkpoints on the read pool itself: a projector writes its rows in the
/// transaction that moves its checkpoint, so a standby that has replayed a checkpoint at or
/// past `min_position` holds the rows too. (A wait on the primary's checkpoints, followed by a
/// read from a standby behind it, would break read-your-writes.) 503 `NOT_CAUGHT_UP` when they
/// do not get there within `RELATIONS_CATCH_UP_WAIT_MS`.
pub async fn wait_for_projectors<'s>(
    state: &'s AppState,
    names: &[&str],
    min_position: Option<LogPosition>,
) -> Result<&'s PgPool, ApiError> {
    let pool = read_pool(state);
    let Some(position) = min_position else {
        return Ok(pool);
    };
    let wait = Duration::from_millis(state.config.catch_up_wait_ms);
    if relations_projections::runtime::wait_for(pool, names, position, wait).await? {
        Ok(pool)
    } else {
        Err(ApiError::NotCaughtUp)
    }
}

/// One item of a user list.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct ListItem {
    /// The listed user.
    pub user: UserId,
    /// Since when (RFC 3339).
    pub since: DateTime<Utc>,
    /// The viewer's relation to `user`, when a viewer was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relation: Option<Relation>,
}

/// An offset-paged list of users: `{items, total, next_offset}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct OffsetPage {
    /// Newest first.
    pub items: Vec<ListItem>,
    /// Every item of the list.
    pub total: i64,
    /// The next page's offset; none after the last page.
    pub next_offset: Option<i64>,
}

/// A cursor-paged list of users: `{items, next_cursor}`.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct CursorPage {
    /// Newest first.
    pub items: Vec<ListItem>,
    /// The next page's cursor; none after the last page.
    pub next_cursor: Option<String>,
}

/// Turns a page of edges into items, annotated for `viewer` with one read for the whole page.
pub async fn items(
    source: Source<'_>,
    page: &[ListEntry],
    viewer: Option<UserId>,
) -> Result<Vec<ListItem>, ApiError> {
    let relations = match viewer {
        Some(viewer) => {
            let users: Vec<UserId> = page.iter().map(|e| e.user).collect();
            source
                // Mutes are private: never shown in lists.
                .relations(viewer, &users, None)
                .await?
                .into_iter()
                .map(Some)
                .collect()
        }
        None => vec![None; page.len()],
    };
    Ok(page
        .iter()
        .zip(relations)
        .map(|(edge, relation)| ListItem {
            user: edge.user,
            since: edge.since,
            relation,
        })
        .collect())
}

/// The key a user list pages on after `edge`.
pub fn edge_key(edge: &ListEntry) -> SinceKey {
    (edge.since, edge.user.get())
}

/// Turns `page.probe()` rows into a page of items (annotated for `viewer`) and the cursor
/// after it.
pub async fn cursor_page(
    source: Source<'_>,
    page: &Page<SinceKey>,
    mut rows: Vec<ListEntry>,
    viewer: Option<UserId>,
) -> Result<CursorPage, ApiError> {
    let next_cursor = page.cut(&mut rows, edge_key);
    Ok(CursorPage {
        items: items(source, &rows, viewer).await?,
        next_cursor,
    })
}
