//! `/api/v1/relation/*`: the four relation commands, and the status and batch queries.

mod command;
mod status;

use axum::routing::{get, post};
use axum::Router;
use utoipa::OpenApi;

use crate::state::AppState;
use command::Verb;

/// The relation routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/v1/relation/follow",
            post(command::handle::<{ Verb::FOLLOW }>),
        )
        .route(
            "/api/v1/relation/unfollow",
            post(command::handle::<{ Verb::UNFOLLOW }>),
        )
        .route(
            "/api/v1/relation/block",
            post(command::handle::<{ Verb::BLOCK }>),
        )
        .route(
            "/api/v1/relation/unblock",
            post(command::handle::<{ Verb::UNBLOCK }>),
        )
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
    status::status,
    status::batch
))]
pub struct Doc;
