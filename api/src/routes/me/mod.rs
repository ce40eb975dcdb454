//! `/api/v1/me/*`: the caller's own lists, settings, likes, bookmarks, suggestions, follows as
//! CSV and logout, one file each.

mod archive;
mod blocks;
mod bookmarks;
mod erase;
mod follow_requests;
mod follower_changes;
mod following;
mod liked;
mod logout;
mod mutes;
mod notification_policy;
mod own_list;
mod settings;
mod suggestions;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// The caller's routes, each with its contract.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(erase::erase))
        .routes(routes!(archive::archive))
        .routes(routes!(blocks::blocks))
        .routes(routes!(mutes::mutes))
        .routes(routes!(follow_requests::follow_requests))
        .routes(routes!(settings::settings))
        .routes(routes!(notification_policy::notification_policy))
        .routes(routes!(follower_changes::follower_changes))
        .routes(routes!(liked::liked))
        .routes(routes!(bookmarks::bookmarks))
        .routes(routes!(suggestions::list::suggestions))
        .routes(routes!(suggestions::dismiss::dismiss))
        .routes(routes!(logout::logout))
        .routes(routes!(following::export::export))
        .routes(routes!(following::import::import))
}
