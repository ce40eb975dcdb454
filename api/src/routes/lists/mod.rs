//! `/api/v1/lists`: the caller's lists, their members and their feeds (issue 46). Private: a
//! list of anyone else's is 404, as an unknown one is.

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

mod change;
mod feed;
mod index;
mod members;
mod run;

/// The routes under `/api/v1/lists`.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(index::get_lists, change::create_list))
        .routes(routes!(change::update_list, change::delete_list))
        .routes(routes!(
            members::list_members,
            members::add_list_members,
            members::remove_list_members
        ))
        .routes(routes!(feed::list_feed))
}
