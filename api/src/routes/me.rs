//! `/api/v1/me/*`: the caller's own private lists.

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use relations_projections::following::query as read;
use serde::Deserialize;
use serde_json::Value;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::query::{catch_up, limit, Cursor};
use crate::routes::users::cursor_page;
use crate::state::AppState;

/// The `me` routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/api/v1/me/blocks", get(blocks))
}

/// `blocks` parameters.
#[derive(Debug, Deserialize)]
pub struct BlocksParams {
    cursor: Option<String>,
    limit: Option<i64>,
    min_position: Option<String>,
}

/// Whom the caller blocks, newest first: `{items, next_cursor}`.
async fn blocks(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<BlocksParams>,
) -> Result<Json<Value>, ApiError> {
    let limit = limit(p.limit)?;
    let after = p.cursor.as_deref().map(Cursor::parse).transpose()?;
    catch_up(&state, p.min_position.as_deref()).await?;
    let mut page = read::blocks(&state.pool, actor.user, after.map(Cursor::key), limit + 1).await?;
    cursor_page(&state, &mut page, None, limit).await.map(Json)
}
