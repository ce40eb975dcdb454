//! `GET /metrics`: Prometheus text format.

use std::time::Duration;

use axum::extract::State;
use axum::response::IntoResponse;
use relations_projections::ProjectorStatus;

use super::readiness::readiness;
use crate::state::AppState;

/// Prometheus text format. Projector positions and lags are read at scrape time, so they are
/// as fresh as the scrape.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, body = String, content_type = "text/plain")))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
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
