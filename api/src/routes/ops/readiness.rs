//! What `/readyz` checks (live), and which projectors are stuck (`/metrics` too, from memory).

use std::time::Duration;

use serde::Serialize;
use utoipa::ToSchema;

use crate::state::AppState;

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

/// What `/readyz` answers: live checks of PostgreSQL and Redis.
pub async fn readiness(state: &AppState) -> Readiness {
    let database = tokio::time::timeout(
        Duration::from_secs(1),
        sqlx::query("SELECT 1").execute(&state.pool),
    )
    .await
    .is_ok_and(|r| r.is_ok());
    let redis = state.redis.ping().await;
    let stuck = stuck_projectors(state, |p| p.essential);
    let horizon_held = state.log_watch.last().stalled;
    let ready = database && stuck.is_empty() && !horizon_held;
    let checks = ReadinessChecks {
        database,
        redis,
        stuck_projectors: stuck,
        horizon_held,
    };
    Readiness { ready, checks }
}

/// Projectors this process runs that have failed for longer than the stuck threshold, among
/// those `which` selects.
pub fn stuck_projectors(
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
