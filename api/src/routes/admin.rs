//! `/api/v1/admin/*` (token with role `admin`).

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use relations_projections::runtime::Horizon;
use relations_projections::ProjectorStatus;
use serde::Serialize;
use utoipa::{OpenApi, ToSchema};

use relations_projections::graph::NAME as GRAPH;
use relations_store::LogPosition;

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
    /// One per projector; the names are the ones `relations rebuild` takes. Last comes
    /// `graph`, this instance's in-memory replica (it keeps no checkpoint and is never
    /// rebuilt: a restart reloads it).
    pub projections: Vec<ProjectorStatus>,
    /// The log's horizon: committed events no reader can read yet because an older
    /// transaction is open, and the session holding it.
    pub horizon: Horizon,
}

/// Every projector's position, lag and state.
#[utoipa::path(get, path = "/api/v1/admin/projections", tag = "operations", security(("bearer" = [])),
    responses((status = 200, body = Projections), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "FORBIDDEN: not an admin")))]
async fn projections(
    State(state): State<AppState>,
    _: Admin,
) -> Result<Json<Projections>, ApiError> {
    let horizon = state.horizon.observe(&state.pool).await?;
    let mut projections = Vec::new();
    for p in state.projectors.iter() {
        let status = ProjectorStatus::read(&state.pool, p.name, p.health.as_deref()).await?;
        projections.push(status.with_horizon(&horizon));
    }
    // This instance's in-memory graph: where it is, or loading.
    let graph = &state.graph;
    let mut status = ProjectorStatus::at(
        &state.pool,
        GRAPH,
        graph.position().unwrap_or(LogPosition::START),
        Some(graph.health()),
    )
    .await?;
    if graph.position().is_none() && status.state != "failing" {
        status.state = "loading";
    }
    projections.push(status.with_horizon(&horizon));
    Ok(Json(Projections {
        projections,
        horizon,
    }))
}
