//! `/api/v1/users/{id}/*`: following, followers, friends, counts, known followers.

mod lists;

pub use lists::cursor_page;

use axum::routing::get;
use axum::Router;
use utoipa::OpenApi;

use crate::state::AppState;

/// The user routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/v1/users/{id}/following", get(lists::following))
        .route("/api/v1/users/{id}/followers", get(lists::followers))
        .route("/api/v1/users/{id}/friends", get(lists::friends))
        .route("/api/v1/users/{id}/counts", get(lists::counts))
        .route(
            "/api/v1/users/{id}/known_followers",
            get(lists::known_followers),
        )
}

/// The user routes' contract.
#[derive(OpenApi)]
#[openapi(paths(
    lists::following,
    lists::followers,
    lists::friends,
    lists::counts,
    lists::known_followers
))]
pub struct Doc;
