//! `GET /api/v1/feed/new_count`: feed posts newer than the caller's read mark.

use axum::extract::State;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::contract::BearerQueryErrors;
use crate::routes::page::MinPosition;
use crate::routes::query::feed_reader;
use crate::state::AppState;

/// `new_count`'s answer: `{count}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct NewCount {
    /// Feed posts newer than the caller's read mark.
    pub count: i64,
}

/// How many feed posts are newer than the caller's read mark: `{count}`.
#[utoipa::path(get, path = "/api/v1/feed/new_count", tag = "queries", security(("bearer" = [])),
    params(MinPosition),
    responses((status = 200, body = NewCount), BearerQueryErrors))]
pub async fn new_count(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<MinPosition>,
) -> Result<Json<NewCount>, ApiError> {
    let recommended = state.config.recommended();
    let pending = state.read_marks.pending(actor.user);
    let feed = feed_reader(&state, p.min_position).await?;
    let count = feed.new_count(actor.user, &recommended, pending).await?;
    Ok(Json(NewCount { count }))
}
