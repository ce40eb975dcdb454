//! `GET /api/v1/posts/{id}/comments`: a post's root comments.

use axum::extract::State;
use axum::Json;
use relations_domain::PostId;
use relations_projections::engagement::query::{CommentKey, Sort};
use relations_projections::engagement::NAME as ENGAGEMENT;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::{ApiQuery, PathId};
use crate::routes::comments::visible::{visible_page, CommentList, CommentPage};
use crate::routes::contract::TokenErrors;
use crate::routes::page::Page;
use crate::routes::query::wait_for_projectors;
use crate::routes::readable::readable_post;
use crate::state::AppState;
use relations_projections::filters::NAME as FILTERS;

/// The comment list's order.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SortParams {
    /// `new` (default) or `top` (most liked, then newest).
    #[param(pattern = "^(new|top)$")]
    sort: Option<String>,
}

/// A post's root comments, pinned first, then newest (`sort=new`) or most liked (`sort=top`).
/// With a bearer token, comments by users who block the caller or whom the caller blocks are
/// left out.
#[utoipa::path(get, path = "/api/v1/posts/{id}/comments", tag = "queries",
    params(("id" = String, Path), SortParams, Page<CommentKey>),
    responses((status = 200, body = CommentPage), (status = 400, body = ErrorBody),
              (status = 404, body = ErrorBody), (status = 503, body = ErrorBody), TokenErrors))]
pub async fn comments(
    State(state): State<AppState>,
    viewer: Option<Actor>,
    PathId(post): PathId<PostId>,
    ApiQuery(p): ApiQuery<SortParams>,
    page: Page<CommentKey>,
) -> Result<Json<CommentPage>, ApiError> {
    let reader = viewer.as_ref().map(|a| a.user);
    readable_post(&state, reader, post, page.min_position).await?;
    let sort = match p.sort.as_deref() {
        None | Some("new") => Sort::New,
        Some("top") => Sort::Top,
        Some(other) => {
            return Err(ApiError::InvalidInput(format!(
                "sort: new or top, got {other:?}"
            )))
        }
    };
    let pool = wait_for_projectors(&state, &[ENGAGEMENT, FILTERS], page.min_position).await?;
    let list = CommentList::Roots(post, sort);
    visible_page(&state, pool, viewer, list, &page)
        .await
        .map(Json)
}
