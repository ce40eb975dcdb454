//! Operations: liveness, readiness and metrics, one file each.

mod healthz;
mod metrics;
mod readiness;
mod readyz;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// `/healthz`, `/readyz`, `/metrics`, each with its contract.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(healthz::healthz))
        .routes(routes!(readyz::readyz))
        .routes(routes!(metrics::metrics))
}
