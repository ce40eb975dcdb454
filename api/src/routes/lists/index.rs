//! `GET /api/v1/lists`: every list of the caller's.

use axum::extract::State;
use axum::Json;
use relations_projections::lists::query;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::outcome::ListView;
use crate::routes::contract::BearerQueryErrors;
use crate::routes::page::MinPosition;
use crate::routes::query::wait_for_essential;
use crate::state::AppState;

/// The caller's lists: `{items}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Lists {
    /// Every list, oldest first.
    pub items: Vec<ListView>,
}

/// Every list of the caller's, unpaged (at most 100), oldest first.
#[utoipa::path(get, path = "/api/v1/lists", tag = "queries", security(("bearer" = [])),
    params(MinPosition),
    responses((status = 200, body = Lists), BearerQueryErrors))]
pub async fn get_lists(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(q): ApiQuery<MinPosition>,
) -> Result<Json<Lists>, ApiError> {
    let pool = wait_for_essential(&state, q.min_position).await?;
    let rows = query::lists(pool, actor.user).await?;
    Ok(Json(Lists {
        items: rows.into_iter().map(ListView::from).collect(),
    }))
}
