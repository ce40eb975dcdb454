//! `GET /api/v1/comments/{id}/replies`: a comment's replies.

use axum::extract::State;
use axum::Json;
use relations_domain::CommentId;
use relations_projections::engagement::query::{self as read, CommentKey};
use relations_projections::engagement::NAME as ENGAGEMENT;

use super::visible::{visible_page, CommentList, CommentPage};
use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::PathId;
use crate::routes::contract::TokenErrors;
use crate::routes::page::Page;
use crate::routes::query::wait_for_projectors;
use crate::routes::readable::readable_post;
use crate::state::AppState;
use relations_projections::filters::NAME as FILTERS;

/// A comment's replies, oldest first, filtered like the root comments.
#[utoipa::path(get, path = "/api/v1/comments/{id}/replies", tag = "queries",
    params(("id" = String, Path), Page<CommentKey>),
    responses((status = 200, body = CommentPage), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 503, body = ErrorBody), TokenErrors))]
pub async fn replies(
    State(state): State<AppState>,
    viewer: Option<Actor>,
    PathId(comment): PathId<CommentId>,
    page: Page<CommentKey>,
) -> Result<Json<CommentPage>, ApiError> {
    let reader = viewer.as_ref().map(|a| a.user);
    readable_post(&state, reader, comment.post, page.min_position).await?;
    let pool = wait_for_projectors(&state, &[ENGAGEMENT, FILTERS], page.min_position).await?;
    let known = read::comment_by_id(pool, comment).await?;
    // A deleted comment shows (as deleted) while it has replies.
    if !known.is_some_and(|c| !c.deleted || c.reply_count > 0) {
        return Err(ApiError::NotFound);
    }
    let list = CommentList::Replies(comment);
    visible_page(&state, pool, viewer, list, &page)
        .await
        .map(Json)
}
