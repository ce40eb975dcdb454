//! `GET /api/v1/lists/{id}/feed`: a list's feed, by every rule of the home feed.

use axum::extract::State;
use axum::Json;
use relations_domain::ListId;

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiQuery, PathId};
use crate::routes::contract::BearerQueryErrors;
use crate::routes::feed::post_page::{PostPage, PostPageParams};
use crate::routes::query::feed_reader;
use crate::state::AppState;

/// The members' posts and reposts, newest first: `{items, next_cursor}`, by every rule of the
/// home feed (reposts as each member's preferences keep them, mutes, bans, blocks, who may
/// read what). Reading it moves no read mark.
#[utoipa::path(get, path = "/api/v1/lists/{id}/feed", tag = "queries",
    security(("bearer" = [])),
    params(("id" = String, Path, description = "The list"), PostPageParams),
    responses((status = 200, body = PostPage), BearerQueryErrors,
              (status = 404, body = ErrorBody, description = "not a list of the caller's")))]
pub async fn list_feed(
    State(state): State<AppState>,
    actor: Actor,
    PathId(list): PathId<ListId>,
    ApiQuery(p): ApiQuery<PostPageParams>,
) -> Result<Json<PostPage>, ApiError> {
    let (size, start) = (p.size()?, p.start()?);
    let feed = feed_reader(&state, p.min_position).await?;
    if !feed.owns_list(actor.user, list).await? {
        return Err(ApiError::NotFound);
    }
    let (page, _) = feed.page(actor.user, &[], start, size, Some(list)).await?;
    Ok(Json(page.into()))
}
