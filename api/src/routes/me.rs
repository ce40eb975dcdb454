//! `/api/v1/me/*`: the caller's own private lists.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use relations_projections::following::reads::KeyedList;
use relations_store::LogPosition;
use serde::Deserialize;
use utoipa::{IntoParams, OpenApi};

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiQuery;
use crate::routes::query::{graph_source, limit, Cursor, CursorPage};
use crate::routes::users::cursor_page;
use crate::state::AppState;

/// The `me` routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/me/blocks", get(blocks))
}

/// The `me` routes' contract.
#[derive(OpenApi)]
#[openapi(paths(blocks))]
pub struct Doc;

/// `blocks` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BlocksParams {
    /// The previous page's `next_cursor`.
    #[param(pattern = r"^-?[0-9]{1,18}\.[0-9]{1,18}$")]
    cursor: Option<String>,
    /// Items per page: default 20, at most 100.
    #[param(minimum = 1, maximum = 100)]
    limit: Option<i64>,
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<LogPosition>,
}

/// Whom the caller blocks, newest first: `{items, next_cursor}`.
#[utoipa::path(get, path = "/api/v1/me/blocks", tag = "queries", security(("bearer" = [])),
    params(BlocksParams),
    responses((status = 200, body = CursorPage), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody), (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
async fn blocks(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<BlocksParams>,
) -> Result<Json<CursorPage>, ApiError> {
    let limit = limit(p.limit)?;
    let after = p.cursor.as_deref().map(Cursor::parse).transpose()?;
    let source = graph_source(&state, p.min_position).await?;
    let mut page = source
        .keyed_page(
            KeyedList::Blocking,
            actor.user,
            after.map(Cursor::key),
            limit + 1,
        )
        .await?;
    cursor_page(source, &mut page, None, limit).await.map(Json)
}
