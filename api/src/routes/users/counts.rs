//! `GET /api/v1/users/{id}/counts`: the user's counters.

use axum::extract::State;
use axum::Json;
use relations_domain::UserId;
use relations_projections::relations::query::Counts;

use crate::error::ApiError;
use crate::extract::{ApiQuery, PathId};
use crate::routes::contract::UserQueryErrors;
use crate::routes::page::MinPosition;
use crate::routes::query::user_source;
use crate::state::AppState;

/// `{following, followers, friends, posts}`.
#[utoipa::path(get, path = "/api/v1/users/{id}/counts", tag = "queries",
    params(("id" = i64, Path, description = "The user"), MinPosition),
    responses((status = 200, body = Counts), UserQueryErrors))]
pub async fn counts(
    State(state): State<AppState>,
    ApiQuery(p): ApiQuery<MinPosition>,
    PathId(user): PathId<UserId>,
) -> Result<Json<Counts>, ApiError> {
    let source = user_source(&state, user, p.min_position).await?;
    Ok(Json(source.counts(user).await?))
}
