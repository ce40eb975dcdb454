//! `/api/v1/comments/{id}[/*]`: deleting, liking and pinning a comment, and its replies, one
//! file each; [`visible`] cuts the page every comment list answers with (the read rule it
//! keeps is the read side's).

mod delete;
mod like;
mod pin;
mod replies;
mod thread;
mod unlike;
mod unpin;
pub mod visible;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// The comment routes, each with its contract.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(delete::delete_comment))
        .routes(routes!(like::like_comment))
        .routes(routes!(unlike::unlike_comment))
        .routes(routes!(pin::pin))
        .routes(routes!(unpin::unpin))
        .routes(routes!(replies::replies))
}
