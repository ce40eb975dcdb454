//! `/api/v1/admin/*` (token with role `admin`), and the operator page `GET /admin` that shows
//! them, refreshing live; one file each.

mod operator_page;
mod projections;
pub mod users;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// The admin routes, each with its contract.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(projections::projections))
        .routes(routes!(operator_page::operator_page))
        .routes(routes!(users::revoke::revoke))
        .routes(routes!(users::ban::ban))
        .routes(routes!(users::erase::erase))
        .routes(routes!(users::unban::unban))
}
