//! `GET /api/v1/users/{id}/posts`: an author's timeline.

use axum::extract::State;
use axum::Json;
use relations_domain::privacy as privacy_rule;
use relations_domain::UserId;
use relations_projections::feed::query as feed_read;
use relations_projections::privacy;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::{ApiQuery, PathId};
use crate::routes::contract::UserQueryErrors;
use crate::routes::feed::post_page::{with_engagement, PostPage, PostPageParams};
use crate::routes::query::{user_source, wait_for_essential};
use crate::state::AppState;

/// An author's live posts that the caller may read, newest first: `{items, next_cursor}`.
#[utoipa::path(get, path = "/api/v1/users/{id}/posts", tag = "queries",
    params(("id" = i64, Path, description = "The author"), PostPageParams),
    responses((status = 200, body = PostPage), UserQueryErrors))]
pub async fn timeline(
    State(state): State<AppState>,
    viewer: Option<Actor>,
    ApiQuery(p): ApiQuery<PostPageParams>,
    PathId(author): PathId<UserId>,
) -> Result<Json<PostPage>, ApiError> {
    let (size, start) = (p.size()?, p.start()?);
    let reader = viewer.as_ref().map(|a| a.user);
    let source = user_source(&state, author, p.min_position).await?;
    // What the reader may read of the author, by the graph now: a filter on a column.
    let access = privacy::access(source, reader, &[author]).await?[&author];
    let readable = privacy_rule::readable(access.privacy, access.reader);
    let pool = wait_for_essential(&state, p.min_position).await?;
    let page = feed_read::timeline(pool, author, &readable, start, size).await?;
    let mut page: PostPage = page.into();
    with_engagement(&state, pool, &mut page.items, viewer.map(|a| a.user)).await?;
    Ok(Json(page))
}
