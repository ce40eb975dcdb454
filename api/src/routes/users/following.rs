//! `GET /api/v1/users/{id}/following`: whom the user follows.

use axum::extract::State;
use axum::Json;
use relations_domain::UserId;
use relations_projections::relations::reads::OffsetList;

use super::offset_list::{offset_list, OffsetParams};
use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::{ApiQuery, PathId};
use crate::routes::contract::GraphListErrors;
use crate::routes::query::OffsetPage;
use crate::state::AppState;

/// Whom the user follows, newest first: `{items, total, next_offset}`.
#[utoipa::path(get, path = "/api/v1/users/{id}/following", tag = "queries",
    params(("id" = i64, Path, description = "The user"), OffsetParams),
    responses((status = 200, body = OffsetPage), GraphListErrors))]
pub async fn following(
    State(state): State<AppState>,
    bearer: Option<Actor>,
    ApiQuery(p): ApiQuery<OffsetParams>,
    PathId(user): PathId<UserId>,
) -> Result<Json<OffsetPage>, ApiError> {
    offset_list(
        &state,
        user,
        bearer.map(|a| a.user),
        p,
        OffsetList::Following,
    )
    .await
}
