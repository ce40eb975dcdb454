//! `GET /api/v1/users/{id}/followers`: who follows the user.

use axum::extract::State;
use axum::Json;
use relations_domain::UserId;
use relations_projections::relations::reads::KeyedList;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::{ApiQuery, PathId};
use crate::routes::contract::GraphListErrors;
use crate::routes::page::{Page, SinceKey};
use crate::routes::query::{cursor_page, graph_list_source, CursorPage};
use crate::state::AppState;

/// Whose relation annotates a list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ViewerParams {
    /// Annotate each item with this user's relation to it.
    #[param(value_type = Option<i64>, minimum = 1)]
    viewer: Option<UserId>,
}

/// Who follows the user, newest first, search-after cursor: `{items, next_cursor}`.
#[utoipa::path(get, path = "/api/v1/users/{id}/followers", tag = "queries",
    params(("id" = i64, Path, description = "The user"), Page<SinceKey>, ViewerParams),
    responses((status = 200, body = CursorPage), GraphListErrors))]
pub async fn followers(
    State(state): State<AppState>,
    bearer: Option<Actor>,
    PathId(user): PathId<UserId>,
    page: Page<SinceKey>,
    ApiQuery(p): ApiQuery<ViewerParams>,
) -> Result<Json<CursorPage>, ApiError> {
    let bearer = bearer.map(|a| a.user);
    let source = graph_list_source(&state, user, bearer, page.min_position).await?;
    let rows = source
        .keyed_page(KeyedList::Followers, user, page.after, page.probe())
        .await?;
    cursor_page(source, &page, rows, p.viewer).await.map(Json)
}
