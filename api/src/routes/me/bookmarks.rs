//! `GET /api/v1/me/bookmarks`: the caller's bookmarks (issue 46), a page at a time.

use axum::extract::State;
use axum::Json;
use relations_projections::engagement::query::BookmarkKey;
use relations_store::LogPosition;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::contract::BearerQueryErrors;
use crate::routes::feed::post_page::PostPage;
use crate::routes::page::{self, Cursor, Page};
use crate::routes::query::feed_reader;
use crate::state::AppState;

/// `me/bookmarks` parameters: a paged list's `cursor`, `limit` and `min_position` (fourth
/// round).
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BookmarksParams {
    /// The previous page's `next_cursor`.
    #[param(
        value_type = Option<String>,
        pattern = r"^-?[0-9]{1,18}\.[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
    )]
    cursor: Option<Cursor<BookmarkKey>>,
    /// Posts per page: default 20, 1 to 100.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<i64>,
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<LogPosition>,
}

impl BookmarksParams {
    /// The page asked for; a `limit` out of range is 400.
    fn page(self) -> Result<Page<BookmarkKey>, ApiError> {
        Ok(Page {
            limit: page::limit(self.limit)?,
            after: self.cursor.map(|c| c.0),
            min_position: self.min_position,
        })
    }
}

/// The caller's bookmarks, newest bookmark first: `{items, next_cursor}`, each a `Post` as
/// the caller may see it now. A bookmark of a post they may not read now (deleted, its
/// author erased or banned, a `followers` post of someone they no longer follow, a block
/// either way) is left out, and shows again once the post is readable again. Private:
/// nobody else sees them, nothing counts them.
#[utoipa::path(get, path = "/api/v1/me/bookmarks", tag = "queries", security(("bearer" = [])),
    params(BookmarksParams),
    responses((status = 200, body = PostPage), BearerQueryErrors))]
pub async fn bookmarks(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<BookmarksParams>,
) -> Result<Json<PostPage>, ApiError> {
    let page = p.page()?;
    let feed = feed_reader(&state, page.min_position).await?;
    let mut rows = feed.bookmarks(actor.user, page.after, page.probe()).await?;
    let next_cursor = page.cut(&mut rows, |(key, _)| *key);
    let items = rows.into_iter().map(|(_, post)| post).collect();
    Ok(Json(PostPage { items, next_cursor }))
}
