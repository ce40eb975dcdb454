//! `/api/v1/relation/*`: the relation commands, and the status and batch queries.

mod command;
mod mute;
mod status;

use axum::routing::{get, post};
use axum::Router;
use utoipa::OpenApi;

use crate::state::AppState;
use command::Verb;

/// The relation routes.
pub fn router() -> Router<AppState> {
    let commands = Verb::ALL.into_iter().fold(Router::new(), |router, verb| {
        router.route(verb.path(), command::route(verb))
    });
    commands
        .route("/api/v1/relation/mute", post(mute::mute))
        .route("/api/v1/relation/status", get(status::status))
        .route("/api/v1/relation/batch", get(status::batch))
}

/// The relation routes' contract.
#[derive(OpenApi)]
#[openapi(paths(
    command::follow,
    command::unfollow,
    command::block,
    command::unblock,
    command::remove_follower,
    command::unmute,
    command::approve,
    command::reject,
    mute::mute,
    status::status,
    status::batch
))]
pub struct Doc;
