//! `GET /api/v1/users/{id}/posts`: an author's timeline.

use axum::extract::State;
use axum::Json;
use relations_domain::UserId;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::{ApiQuery, PathId};
use crate::routes::contract::UserQueryErrors;
use crate::routes::feed::post_page::{PostPage, PostPageParams};
use crate::routes::live::live_user;
use crate::routes::query::feed_reader;
use crate::state::AppState;

/// An author's live posts that the caller may read, newest first, with their reposts when
/// `include_reposts`: `{items, next_cursor}`.
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
    let feed = feed_reader(&state, p.min_position).await?;
    live_user(&state, author).await?;
    let viewer = viewer.map(|a| a.user);
    let reposts = p.include_reposts.unwrap_or(false);
    let page = feed.timeline(author, viewer, start, size, reposts).await?;
    Ok(Json(page.into()))
}
