//! Operations: liveness, readiness and metrics.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use relations_projections::ProjectorStatus;
use serde::Serialize;
use utoipa::{OpenApi, ToSchema};

use crate::state::AppState;

/// `/healthz`, `/readyz`, `/metrics`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
}

/// The operations routes' contract.
#[derive(OpenApi)]
#[openapi(paths(healthz, readyz, metrics))]
pub struct Doc;

/// `/healthz`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Liveness {
    /// Always `ok`.
    pub status: &'static str,
}

/// `/readyz`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Readiness {
    /// Whether this process can do its work.
    pub ready: bool,
    /// What was checked.
    pub checks: ReadinessChecks,
}

/// What `/readyz` checks.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReadinessChecks {
    /// PostgreSQL answered within a second.
    pub database: bool,
    /// Redis answered (reported, not required).
    pub redis: bool,
    /// Essential projectors failing for longer than the stuck threshold.
    pub stuck_projectors: Vec<&'static str>,
    /// Committed events have waited behind an open transaction (the log's horizon) for longer
    /// than `RELATIONS_HELD_AFTER_MS`: no projector can advance (the admin endpoint names the
    /// session holding it).
    pub horizon_held: bool,
}

/// The process is alive.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, body = Liveness)))]
async fn healthz() -> Json<Liveness> {
    Json(Liveness { status: "ok" })
}

/// The process can do its work: PostgreSQL answers, no projector it runs is stuck, and the
/// log's horizon is not held past its limit. Redis is reported, not required (the service
/// degrades without it).
#[utoipa::path(get, path = "/readyz", tag = "operations",
    responses((status = 200, body = Readiness), (status = 503, body = Readiness)))]
async fn readyz(State(state): State<AppState>) -> (StatusCode, Json<Readiness>) {
    let readiness = readiness(&state).await;
    let status = if readiness.ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(readiness))
}

/// What `/readyz` answers (and `/metrics` exports as `relations_ready` and
/// `relations_projector_stuck`).
async fn readiness(state: &AppState) -> Readiness {
    let database = tokio::time::timeout(
        Duration::from_secs(1),
        sqlx::query("SELECT 1").execute(&state.pool),
    )
    .await
    .is_ok_and(|r| r.is_ok());
    let redis = state.redis.ping().await;
    let stuck_after = Duration::from_millis(state.config.stuck_after_ms);
    let stuck: Vec<&'static str> = state
        .projectors
        .iter()
        .filter(|p| {
            p.essential
                && p.health
                    .as_ref()
                    .and_then(|h| h.failing_for())
                    .is_some_and(|d| d > stuck_after)
        })
        .map(|p| p.name)
        .collect();
    let horizon_held = state.horizon.last().stalled;
    let ready = database && stuck.is_empty() && !horizon_held;
    let checks = ReadinessChecks {
        database,
        redis,
        stuck_projectors: stuck,
        horizon_held,
    };
    Readiness { ready, checks }
}

/// Prometheus text format. Projector positions and lags are read at scrape time, so they are
/// as fresh as the scrape.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, body = String, content_type = "text/plain")))]
async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let readiness = readiness(&state).await;
    metrics::gauge!("relations_ready").set(if readiness.ready { 1.0 } else { 0.0 });
    // Stuck: failing for longer than the threshold, essential or not (only essential ones
    // make the instance unready).
    let stuck_after = Duration::from_millis(state.config.stuck_after_ms);
    for projector in state.projectors.iter() {
        let stuck = projector
            .health
            .as_ref()
            .and_then(|h| h.failing_for())
            .is_some_and(|d| d > stuck_after);
        metrics::gauge!("relations_projector_stuck", "projector" => projector.name).set(if stuck {
            1.0
        } else {
            0.0
        });
    }
    let horizon = state.horizon.last();
    for projector in state.projectors.iter() {
        let name = projector.name;
        match ProjectorStatus::read(&state.pool, name, projector.health.as_deref()).await {
            Ok(status) => {
                let status = status.with_horizon(&horizon);
                metrics::gauge!("relations_projector_held", "projector" => status.name.clone())
                    .set(if status.state == "held" { 1.0 } else { 0.0 });
                let labels = [("projector", status.name.clone())];
                metrics::gauge!("relations_projector_position", &labels)
                    .set(status.position.global_position as f64);
                metrics::gauge!("relations_projector_lag_events", &labels)
                    .set(status.lag_events as f64);
                metrics::gauge!("relations_projector_lag_seconds", &labels).set(status.lag_seconds);
                metrics::gauge!("relations_projector_failing", &labels)
                    .set(if status.state == "failing" { 1.0 } else { 0.0 });
            }
            Err(error) => tracing::warn!(projector = name, %error, "cannot read projector status"),
        }
    }
    (
        [("content-type", "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
}
