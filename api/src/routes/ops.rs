//! Operations: liveness, readiness and metrics.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use relations_projections::ProjectorStatus;
use serde_json::json;

use crate::state::AppState;

/// `/healthz`, `/readyz`, `/metrics`.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
}

/// The process is alive.
async fn healthz() -> impl IntoResponse {
    Json(json!({"status": "ok"}))
}

/// The process can do its work: PostgreSQL answers and no projector it runs is stuck. Redis is
/// reported, not required (the service degrades without it).
async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    let database = tokio::time::timeout(
        Duration::from_secs(1),
        sqlx::query("SELECT 1").execute(&state.pool),
    )
    .await
    .is_ok_and(|r| r.is_ok());
    let redis = state.redis.ping().await;
    let stuck_after = Duration::from_millis(state.config.stuck_after_ms);
    let stuck: Vec<&str> = state
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
    let ready = database && stuck.is_empty();
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(json!({
            "ready": ready,
            "checks": {"database": database, "redis": redis, "stuck_projectors": stuck}
        })),
    )
}

/// Prometheus text format. Projector positions and lags are read at scrape time, so they are
/// as fresh as the scrape.
async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    for projector in state.projectors.iter() {
        let name = projector.name;
        match ProjectorStatus::read(&state.pool, name, projector.health.as_deref()).await {
            Ok(status) => {
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
