//! `GET /api/v1/admin/projections` (admin): every projector's position, lag and state.

use axum::extract::State;
use axum::Json;
use relations_projections::replica::NAME as GRAPH;
use relations_projections::runtime::rebuild::{running, RunningRebuild};
use relations_projections::runtime::Horizon;
use relations_projections::ProjectorStatus;
use relations_store::LogPosition;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Admin;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

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
    /// The rebuilds (`relations rebuild NAME`) running now, with their progress.
    pub rebuilds: Vec<RunningRebuild>,
}

/// Every projector's position, lag and state.
#[utoipa::path(get, path = "/api/v1/admin/projections", tag = "operations", security(("bearer" = [])),
    responses((status = 200, body = Projections), (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "FORBIDDEN: not an admin")))]
pub async fn projections(
    State(state): State<AppState>,
    _: Admin,
) -> Result<Json<Projections>, ApiError> {
    let horizon = state.log_watch.observe(&state.pool).await?;
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
    let rebuilds = running(&state.pool).await?;
    Ok(Json(Projections {
        projections,
        horizon,
        rebuilds,
    }))
}
