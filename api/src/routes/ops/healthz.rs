//! `GET /healthz`: liveness.

use crate::routes::contract::TokenErrors;
use axum::Json;
use serde::Serialize;
use utoipa::ToSchema;

/// `/healthz`'s answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Liveness {
    /// Always `ok`.
    pub status: &'static str,
}

/// The process is alive.
#[utoipa::path(get, path = "/healthz", tag = "operations", responses((status = 200, body = Liveness), TokenErrors))]
pub async fn healthz() -> Json<Liveness> {
    Json(Liveness { status: "ok" })
}
