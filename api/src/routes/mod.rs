//! The HTTP API: each resource's module owns its `router()`; [`app`] merges them and adds the
//! cross-cutting layers.

mod accounts;
mod admin;
mod command;
pub mod engagement;
mod feed;
mod me;
mod ops;
mod posts;
pub mod query;
mod relation;
mod transfer;
mod users;

use axum::error_handling::HandleErrorLayer;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, Request};
use axum::{middleware, BoxError, Router};
use tower::ServiceBuilder;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa::OpenApi;

use crate::error::ApiError;
use crate::extract::MAX_BODY_BYTES;
use crate::state::AppState;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The whole application, ready to serve (tests call it without a socket).
pub fn app(state: AppState) -> Router {
    let timeout = state.config.request_timeout();
    Router::new()
        .merge(relation::router())
        .merge(users::router())
        .merge(posts::router())
        .merge(feed::router())
        .merge(me::router())
        .merge(admin::router())
        .merge(accounts::router())
        .merge(transfer::router())
        .merge(engagement::router())
        .merge(crate::openapi::router())
        .merge(ops::router())
        .fallback(|| async { ApiError::NotFound })
        .layer(middleware::from_fn_with_state(
            state.clone(),
            crate::auth::check_bearer,
        ))
        .layer(middleware::from_fn(crate::metrics::track))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
                .layer(
                    TraceLayer::new_for_http().make_span_with(|request: &Request<_>| {
                        let request_id = request
                            .headers()
                            .get(REQUEST_ID)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("");
                        tracing::info_span!(
                            "http.request",
                            http.method = %request.method(),
                            http.path = %request.uri().path(),
                            request.id = request_id,
                            user.id = tracing::field::Empty,
                        )
                    }),
                )
                .layer(PropagateRequestIdLayer::new(REQUEST_ID))
                .layer(HandleErrorLayer::new(on_middleware_error))
                .timeout(timeout),
        )
        .with_state(state)
}

async fn on_middleware_error(error: BoxError) -> ApiError {
    if error.is::<tower::timeout::error::Elapsed>() {
        ApiError::Unavailable("the request took too long")
    } else {
        ApiError::Internal(anyhow::anyhow!("middleware: {error}"))
    }
}

/// Every route's contract, from the handlers' own `#[utoipa::path]` annotations.
pub fn described() -> utoipa::openapi::OpenApi {
    let mut doc = relation::Doc::openapi();
    for module in [
        users::Doc::openapi(),
        posts::Doc::openapi(),
        feed::Doc::openapi(),
        me::Doc::openapi(),
        admin::Doc::openapi(),
        accounts::Doc::openapi(),
        transfer::Doc::openapi(),
        engagement::Doc::openapi(),
        ops::Doc::openapi(),
    ] {
        doc.merge(module);
    }
    doc
}
