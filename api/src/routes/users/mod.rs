//! `/api/v1/users/{id}/*`: a user's lists, counters and posts, one file each.

mod counts;
mod followers;
mod following;
mod friends;
mod known_followers;
mod offset_list;
mod posts;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// The user routes, each with its contract.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(following::following))
        .routes(routes!(followers::followers))
        .routes(routes!(friends::friends))
        .routes(routes!(counts::counts))
        .routes(routes!(known_followers::known_followers))
        .routes(routes!(posts::timeline))
}
