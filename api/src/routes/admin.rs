//! `/api/v1/admin/*` (token with role `admin`).

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use relations_projections::ProjectorStatus;
use serde_json::{json, Value};

use crate::auth::Admin;
use crate::error::ApiError;
use crate::state::AppState;

/// The admin routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/admin/projections", get(projections))
}

/// Every projector's position, lag and state.
async fn projections(State(state): State<AppState>, _: Admin) -> Result<Json<Value>, ApiError> {
    let mut projections = Vec::new();
    for p in state.projectors.iter() {
        projections.push(ProjectorStatus::read(&state.pool, p.name, p.health.as_deref()).await?);
    }
    Ok(Json(json!({ "projections": projections })))
}
