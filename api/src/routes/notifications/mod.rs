//! Notifications (issue 27): `/api/v1/notifications` (the grouped list), `/unread_count`, `/read`
//! (the marker) and `/stream` (live), one file each, read from projector `notifications`' read model;
//! `visible` holds what the list and the count may show (issue 26).

mod list;
mod read;
mod stream;
mod unread_count;
mod visible;

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::state::AppState;

/// The notification routes, each with its contract.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list::notifications))
        .routes(routes!(unread_count::unread_count))
        .routes(routes!(read::read))
        .routes(routes!(stream::stream))
}
