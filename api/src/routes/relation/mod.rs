//! `/api/v1/relation/*`: the relation commands (one file each), and the status and batch
//! queries.

mod batch;
mod block;
mod follow;
mod follow_requests;
mod mute;
mod remove_follower;
pub mod run;
mod status;
mod unblock;
mod unfollow;
mod unmute;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// The relation routes, each with its contract.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(follow::follow))
        .routes(routes!(unfollow::unfollow))
        .routes(routes!(block::block))
        .routes(routes!(unblock::unblock))
        .routes(routes!(remove_follower::remove_follower))
        .routes(routes!(mute::mute))
        .routes(routes!(unmute::unmute))
        .routes(routes!(follow_requests::approve::approve))
        .routes(routes!(follow_requests::reject::reject))
        .routes(routes!(status::status))
        .routes(routes!(batch::batch))
}
