//! Operations: liveness, readiness and metrics.

use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use relations_projections::replica::NAME as GRAPH;
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

/// What `/readyz` answers: live checks of PostgreSQL and Redis.
async fn readiness(state: &AppState) -> Readiness {
    let database = tokio::time::timeout(
        Duration::from_secs(1),
        sqlx::query("SELECT 1").execute(&state.pool),
    )
    .await
    .is_ok_and(|r| r.is_ok());
    let redis = state.redis.ping().await;
    let stuck = stuck_projectors(state, |p| p.essential);
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

/// Prometheus text format, from memory only: what this process's readers published as they
/// stepped, and the log watch's last look (its age is `relations_log_watch_age_seconds`). A
/// scrape never waits on PostgreSQL or Redis, so metrics stay up when they are down or slow.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, body = String, content_type = "text/plain")))]
async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let view = state.horizon.view();
    let age = state.horizon.age();
    metrics::gauge!("relations_log_watch_age_seconds").set(age.as_secs_f64());
    // The database counts as up while the watch's looks succeed (they run every second).
    let database = age < WATCH_FRESH;
    let stuck = stuck_projectors(&state, |_| true);
    let essential_stuck = stuck_projectors(&state, |p| p.essential);
    let ready = database && essential_stuck.is_empty() && !view.horizon.stalled;
    metrics::gauge!("relations_ready").set(if ready { 1.0 } else { 0.0 });
    let readers = state
        .projectors
        .iter()
        .map(|p| (p.name, p.health.as_deref()))
        .chain([(GRAPH, Some(state.graph.health()))]);
    for (name, health) in readers {
        let position = match name {
            GRAPH => state.graph.position(),
            _ => health.and_then(|h| h.position()),
        };
        let Some(position) = position.or(view.reader(name).map(|(at, _)| at)) else {
            continue;
        };
        let lag = view.lag_at(name, position);
        let failing = health.is_some_and(|h| h.failures() > 0);
        let labels = [("projector", name)];
        metrics::gauge!("relations_projector_stuck", &labels).set(flag(stuck.contains(&name)));
        metrics::gauge!("relations_projector_held", &labels)
            .set(flag(view.horizon.stalled && !failing));
        metrics::gauge!("relations_projector_position", &labels)
            .set(position.global_position as f64);
        metrics::gauge!("relations_projector_lag_events", &labels).set(lag.events as f64);
        metrics::gauge!("relations_projector_lag_seconds", &labels).set(lag.seconds);
        metrics::gauge!("relations_projector_failing", &labels).set(flag(failing));
    }
    (
        [("content-type", "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
}

/// How old the log watch's view may be while the database still counts as up in `/metrics`.
const WATCH_FRESH: Duration = Duration::from_secs(3);

fn flag(on: bool) -> f64 {
    if on {
        1.0
    } else {
        0.0
    }
}

/// Projectors this process runs that have failed for longer than the stuck threshold, among
/// those `which` selects.
fn stuck_projectors(
    state: &AppState,
    which: impl Fn(&crate::state::ProjectorEntry) -> bool,
) -> Vec<&'static str> {
    let stuck_after = Duration::from_millis(state.config.stuck_after_ms);
    state
        .projectors
        .iter()
        .filter(|p| {
            which(p)
                && p.health
                    .as_ref()
                    .and_then(|h| h.failing_for())
                    .is_some_and(|d| d > stuck_after)
        })
        .map(|p| p.name)
        .collect()
}
