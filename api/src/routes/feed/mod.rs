//! The follow feed (`/api/v1/feed`, `/feed/new_count`, `/feed/stream`), one file each, read
//! from projector `feed`'s read models.

mod list;
mod new_count;
pub mod post_page;
mod stream;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// The feed routes, each with its contract.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list::feed))
        .routes(routes!(new_count::new_count))
        .routes(routes!(stream::stream))
}
