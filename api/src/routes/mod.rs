//! The HTTP API, laid out by URL: one folder per resource, one file per endpoint. Each
//! resource's `router()` registers every route together with its contract (utoipa-axum's
//! `routes!` reads the handler's own `#[utoipa::path]`), so a route and its OpenAPI path are
//! written once; [`router`] merges them under the document's head, and [`app`] serves them
//! with `/openapi.json` and the cross-cutting layers.

mod account;
mod admin;
mod bookmarking;
mod command;
mod comments;
mod contract;
mod feed;
mod filters;
mod liking;
mod lists;
pub(crate) mod live;
mod me;
mod notifications;
mod ops;
pub mod page;
mod posts;
pub mod query;
mod readable;
mod relation;
mod reposting;
mod users;

use axum::error_handling::HandleErrorLayer;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, Request};
use axum::{middleware, BoxError, Router};
use tower::ServiceBuilder;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;
use utoipa_axum::router::OpenApiRouter;

use crate::error::ApiError;
use crate::extract::MAX_BODY_BYTES;
use crate::state::AppState;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Every route, each with its contract, under the document's head.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(crate::openapi::head())
        .merge(relation::router())
        .merge(users::router())
        .merge(posts::router())
        .merge(comments::router())
        .merge(feed::router())
        .merge(me::router())
        .merge(lists::router())
        .merge(filters::router())
        .merge(notifications::router())
        .merge(admin::router())
        .merge(ops::router())
}

/// The whole contract, without a server.
pub fn document() -> utoipa::openapi::OpenApi {
    router().into_openapi()
}

/// The whole application, ready to serve (tests call it without a socket).
pub fn app(state: AppState) -> Router {
    let timeout = state.config.request_timeout();
    let (routes, contract) = router().split_for_parts();
    routes
        .merge(crate::openapi::router(&contract))
        // Only a routed method's request has its token checked: an unknown path is 404 and an
        // undeclared method 405 (with `Allow`), whatever token comes with them. (A route
        // layer also wraps each path's method-not-allowed answer; the fallback set after it
        // replaces that one with an unwrapped one.)
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            crate::auth::check_bearer,
        ))
        .method_not_allowed_fallback(|| async { axum::http::StatusCode::METHOD_NOT_ALLOWED })
        .fallback(|| async { ApiError::NotFound })
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
