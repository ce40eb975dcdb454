//! `/api/v1/admin/*` (token with role `admin`).

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use relations_projections::ProjectorStatus;
use serde::Serialize;
use utoipa::{OpenApi, ToSchema};

use crate::auth::Admin;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// The admin routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/admin/projections", get(projections))
}

/// The admin routes' contract.
#[derive(OpenApi)]
#[openapi(paths(projections))]
pub struct Doc;

/// `GET /api/v1/admin/projections`'s answer: `{projections}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct Projections {
    /// One per projector; the names are the ones `relations rebuild` takes.
    pub projections: Vec<ProjectorStatus>,
}

/// Every projector's position, lag and state.
#[utoipa::path(get, path = "/api/v1/admin/projections", tag = "operations", security(("bearer" = [])),
    responses((status = 200, body = Projections), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "FORBIDDEN: not an admin")))]
async fn projections(
    State(state): State<AppState>,
    _: Admin,
) -> Result<Json<Projections>, ApiError> {
    let mut projections = Vec::new();
    for p in state.projectors.iter() {
        projections.push(ProjectorStatus::read(&state.pool, p.name, p.health.as_deref()).await?);
    }
    Ok(Json(Projections { projections }))
}
