//! `GET /api/v1/feed`: the caller's follow feed, a page at a time.

use axum::extract::State;
use axum::Json;

use super::post_page::{PostPage, PostPageParams};
use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::contract::BearerQueryErrors;
use crate::routes::query::feed_reader;
use crate::state::AppState;

/// The caller's feed, newest first: `{items, next_cursor}`. Followed authors' posts (pushed
/// into the caller's inbox, or pulled from big authors' timelines), or the recommended feed
/// when the caller follows nobody. A first page (no cursor, no max_time) moves the read mark.
#[utoipa::path(get, path = "/api/v1/feed", tag = "queries", security(("bearer" = [])),
    params(PostPageParams),
    responses((status = 200, body = PostPage), BearerQueryErrors))]
pub async fn feed(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<PostPageParams>,
) -> Result<Json<PostPage>, ApiError> {
    let (size, start) = (p.size()?, p.start()?);
    let recommended = state.config.recommended();
    let feed = feed_reader(&state, p.min_position).await?;
    let (page, head) = feed
        .page(actor.user, &recommended, start, size, None)
        .await?;
    if p.is_first() {
        state.read_marks.mark(actor.user, head);
    }
    Ok(Json(page.into()))
}
