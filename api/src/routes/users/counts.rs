//! `GET /api/v1/users/{id}/counts`: the user's counters.

use axum::extract::State;
use axum::Json;
use relations_domain::UserId;
use relations_projections::relations::query::Counts;
use relations_store::LogPosition;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::error::ApiError;
use crate::extract::{ApiQuery, PathId};
use crate::routes::contract::UserQueryErrors;
use crate::routes::query::user_source;
use crate::state::AppState;

/// Counts parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct CountsParams {
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<LogPosition>,
}

/// `{following, followers, friends, posts}`.
#[utoipa::path(get, path = "/api/v1/users/{id}/counts", tag = "queries",
    params(("id" = i64, Path, description = "The user"), CountsParams),
    responses((status = 200, body = Counts), UserQueryErrors))]
pub async fn counts(
    State(state): State<AppState>,
    ApiQuery(p): ApiQuery<CountsParams>,
    PathId(user): PathId<UserId>,
) -> Result<Json<Counts>, ApiError> {
    let source = user_source(&state, user, p.min_position).await?;
    Ok(Json(source.counts(user).await?))
}
