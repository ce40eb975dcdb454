//! `GET /api/v1/me/follow_requests`: who asks to follow the caller.

use axum::extract::State;
use axum::Json;
use relations_projections::relations::reads::KeyedList;

use super::own_list::own_list;
use crate::auth::Actor;
use crate::error::ApiError;
use crate::routes::contract::BearerQueryErrors;
use crate::routes::page::{Page, SinceKey};
use crate::routes::query::CursorPage;
use crate::state::AppState;

/// Who asks to follow the caller (pending requests), newest first: `{items, next_cursor}`.
#[utoipa::path(get, path = "/api/v1/me/follow_requests", tag = "queries", security(("bearer" = [])),
    params(Page<SinceKey>),
    responses((status = 200, body = CursorPage), BearerQueryErrors))]
pub async fn follow_requests(
    State(state): State<AppState>,
    actor: Actor,
    page: Page<SinceKey>,
) -> Result<Json<CursorPage>, ApiError> {
    own_list(state, actor, page, KeyedList::FollowRequests).await
}
