//! `/api/v1/admin/*` (token with role `admin`), and the operator page `GET /admin` that shows
//! them, refreshing live.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use relations_projections::runtime::rebuild::{running, RunningRebuild};
use relations_projections::runtime::Horizon;
use relations_projections::ProjectorStatus;
use serde::Serialize;
use utoipa::{OpenApi, ToSchema};

use relations_projections::replica::NAME as GRAPH;
use relations_store::LogPosition;

use crate::auth::Admin;
use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// The admin routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/admin/projections", get(projections))
        .route("/admin", get(operator_page))
}

/// The admin routes' contract.
#[derive(OpenApi)]
#[openapi(paths(projections, operator_page))]
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
    /// The rebuilds (`relations rebuild NAME`) running now, with their progress.
    pub rebuilds: Vec<RunningRebuild>,
}

/// The operator page: plain HTML and a little JavaScript, no build step. It signs in with an
/// admin token (a form, or `#token=...` in the address) and shows, refreshing every two
/// seconds, each projector's position, lag and state, the Kafka relay's lag, the log's horizon
/// and running rebuilds; and a user's counts and lists looked up by id (`#user=ID`).
#[utoipa::path(get, path = "/admin", tag = "operations",
    responses((status = 200, content_type = "text/html", body = String)))]
async fn operator_page() -> axum::response::Html<&'static str> {
    axum::response::Html(include_str!("operator.html"))
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
    let rebuilds = running(&state.pool).await?;
    Ok(Json(Projections {
        projections,
        horizon,
        rebuilds,
    }))
}
