//! `GET /api/v1/posts/{id}/reposts`: who reposts a post (issue 44).

use axum::extract::State;
use axum::Json;
use relations_domain::PostId;
use relations_projections::engagement::query as read;
use relations_projections::engagement::NAME as ENGAGEMENT;

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::PathId;
use crate::routes::contract::TokenErrors;
use crate::routes::page::{Page, SinceKey};
use crate::routes::query::{cursor_page, graph_source, wait_for_projectors, CursorPage};
use crate::routes::readable::readable_post;
use crate::state::AppState;

/// Who reposts the post, newest first: `{items: [{user, since}], next_cursor}`, filtered as
/// the likes list is.
#[utoipa::path(get, path = "/api/v1/posts/{id}/reposts", tag = "queries",
    params(("id" = String, Path), Page<SinceKey>),
    responses((status = 200, body = CursorPage), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 503, body = ErrorBody), TokenErrors))]
pub async fn reposters(
    State(state): State<AppState>,
    viewer: Option<Actor>,
    PathId(post): PathId<PostId>,
    page: Page<SinceKey>,
) -> Result<Json<CursorPage>, ApiError> {
    readable_post(&state, viewer.map(|a| a.user), post, page.min_position).await?;
    let pool = wait_for_projectors(&state, &[ENGAGEMENT], page.min_position).await?;
    let rows = read::reposters(pool, post, page.after, page.probe()).await?;
    let source = graph_source(&state, None).await?;
    cursor_page(source, &page, rows, None).await.map(Json)
}
