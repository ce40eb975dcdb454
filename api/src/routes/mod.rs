//! The HTTP API: each resource's module owns its `router()`; [`app`] merges them and adds the
//! cross-cutting layers.

mod admin;
mod feed;
mod me;
mod ops;
mod posts;
pub mod query;
mod relation;
mod users;

use axum::error_handling::HandleErrorLayer;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderName, Request, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{middleware, BoxError, Json, Router};
use relations_store::Executed;
use serde::Serialize;
use tower::ServiceBuilder;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

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
        .merge(crate::openapi::router())
        .merge(ops::router())
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

/// A command's answer: the fresh outcome with `status`, or the first answer stored under the
/// request's Idempotency-Key, marked `idempotent-replayed: true`.
pub fn command_answer<T: Serialize>(executed: Executed<T>, status: StatusCode) -> Response {
    match executed {
        Executed::Fresh(outcome) => (status, Json(outcome)).into_response(),
        Executed::Replayed(stored) => {
            let status = StatusCode::from_u16(stored.status).unwrap_or(status);
            (status, [("idempotent-replayed", "true")], Json(stored.body)).into_response()
        }
    }
}
