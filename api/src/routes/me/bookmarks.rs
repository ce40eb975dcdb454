//! `GET /api/v1/me/bookmarks`: the caller's bookmarks (issue 46), a page at a time.

use axum::extract::State;
use axum::Json;
use relations_projections::engagement::query::BookmarkKey;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::routes::contract::BearerQueryErrors;
use crate::routes::feed::post_page::PostPage;
use crate::routes::page::Page;
use crate::routes::query::feed_reader;
use crate::state::AppState;

/// The caller's bookmarks, newest bookmark first: `{items, next_cursor}`, each a `Post` as
/// the caller may see it now. A bookmark of a post they may not read now (deleted, its
/// author erased or banned, a `followers` post of someone they no longer follow, a block
/// either way) is left out, and shows again once the post is readable again. Private:
/// nobody else sees them, nothing counts them.
#[utoipa::path(get, path = "/api/v1/me/bookmarks", tag = "queries", security(("bearer" = [])),
    params(Page<BookmarkKey>),
    responses((status = 200, body = PostPage), BearerQueryErrors))]
pub async fn bookmarks(
    State(state): State<AppState>,
    actor: Actor,
    page: Page<BookmarkKey>,
) -> Result<Json<PostPage>, ApiError> {
    let feed = feed_reader(&state, page.min_position).await?;
    let mut rows = feed.bookmarks(actor.user, page.after, page.probe()).await?;
    let next_cursor = page.cut(&mut rows, |(key, _)| *key);
    let items = rows.into_iter().map(|(_, post)| post).collect();
    Ok(Json(PostPage { items, next_cursor }))
}
