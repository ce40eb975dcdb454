//! `GET /admin`: the operator page.

use crate::routes::contract::TokenErrors;

/// The operator page: plain HTML and a little JavaScript, no build step. It signs in with an
/// admin token (a form, or `#token=...` in the address) and shows, refreshing every two
/// seconds, each projector's position, lag and state, the Kafka relay's lag, the log's horizon
/// and running rebuilds; and a user's counts and lists looked up by id (`#user=ID`).
#[utoipa::path(get, path = "/admin", tag = "operations",
    responses((status = 200, content_type = "text/html", body = String), TokenErrors))]
pub async fn operator_page() -> axum::response::Html<&'static str> {
    axum::response::Html(include_str!("operator.html"))
}
