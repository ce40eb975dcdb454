//! `GET /metrics`: Prometheus text format, from memory.

use std::time::Duration;

use axum::extract::State;
use axum::response::IntoResponse;
use relations_projections::replica::NAME as GRAPH;

use super::readiness::stuck_projectors;
use crate::routes::contract::TokenErrors;
use crate::state::AppState;

/// Prometheus text format, from memory only: what this process's readers published as they
/// stepped, and the log watch's last look (its age is `relations_log_watch_age_seconds`). A
/// scrape never waits on PostgreSQL or Redis, so metrics stay up when they are down or slow.
#[utoipa::path(get, path = "/metrics", tag = "operations",
    responses((status = 200, body = String, content_type = "text/plain"), TokenErrors))]
pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    let view = state.log_watch.view();
    let age = state.log_watch.age();
    metrics::gauge!("relations_log_watch_age_seconds").set(age.as_secs_f64());
    // The database counts as up while the watch's looks succeed (they run every second).
    let database = age < WATCH_FRESH;
    let stuck = stuck_projectors(&state, |_| true);
    let essential_stuck = state
        .projectors
        .iter()
        .any(|p| p.essential && stuck.contains(&p.name));
    let ready = database && !essential_stuck && !view.horizon.stalled;
    metrics::gauge!("relations_ready").set(if ready { 1.0 } else { 0.0 });
    let readers = state
        .projectors
        .iter()
        .map(|p| (p.name, p.health.as_deref()))
        .chain([(GRAPH, Some(state.graph.health()))]);
    for (name, health) in readers {
        // Each reader publishes its position as it steps (the replica as it applies a batch).
        let position = health.and_then(|h| h.position());
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
