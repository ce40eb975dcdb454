//! `GET /readyz`: readiness.

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;

use super::readiness::{readiness, Readiness};
use crate::routes::contract::TokenErrors;
use crate::state::AppState;

/// The process can do its work: PostgreSQL answers, no projector it runs is stuck, and the
/// log's horizon is not held past its limit. Redis is reported, not required (the service
/// degrades without it).
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, body = Readiness), (status = 503, body = Readiness), TokenErrors))]
pub async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Readiness>) {
    let readiness = readiness(&state).await;
    let status = if readiness.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(readiness))
}
