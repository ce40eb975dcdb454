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

/// A command's answer, typed by its outcome `T`: the fresh outcome with `status`, or the first
/// answer stored under the request's Idempotency-Key (that same `T`, as it was first sent),
/// marked `idempotent-replayed: true`.
pub struct CommandAnswer<T> {
    executed: Executed<T>,
    status: StatusCode,
}

impl<T> CommandAnswer<T> {
    /// `executed`, answered with `status` when fresh.
    pub fn new(executed: Executed<T>, status: StatusCode) -> Self {
        Self { executed, status }
    }
}

impl<T: Serialize> IntoResponse for CommandAnswer<T> {
    fn into_response(self) -> Response {
        match self.executed {
            Executed::Fresh(outcome) => (self.status, Json(outcome)).into_response(),
            Executed::Replayed(stored) => {
                let status = StatusCode::from_u16(stored.status).unwrap_or(self.status);
                (status, [("idempotent-replayed", "true")], Json(stored.body)).into_response()
            }
        }
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
        ops::Doc::openapi(),
    ] {
        doc.merge(module);
    }
    doc
}
