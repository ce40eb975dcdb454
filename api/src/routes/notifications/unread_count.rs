//! `GET /api/v1/notifications/unread_count`: groups with something newer than the marker.

use axum::extract::State;
use axum::Json;
use relations_projections::notifications::query as notify_read;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::contract::BearerQueryErrors;
use crate::routes::page::MinPosition;
use crate::routes::query::wait_for_projectors;
use crate::state::AppState;

use super::visible;

/// `unread_count`'s answer: `{count}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct UnreadCount {
    /// Groups whose newest notification is newer than the caller's read marker.
    pub count: i64,
}

/// How many of the caller's notification groups have something newer than their read
/// marker: `{count}` (exact; the groups the list leaves out, about a post the caller may not
/// read now, are not counted).
#[utoipa::path(get, path = "/api/v1/notifications/unread_count", tag = "queries",
    security(("bearer" = [])),
    params(MinPosition),
    responses((status = 200, body = UnreadCount), BearerQueryErrors))]
pub async fn unread_count(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<MinPosition>,
) -> Result<Json<UnreadCount>, ApiError> {
    let pool = wait_for_projectors(
        &state,
        &relations_projections::notifications::READS,
        p.min_position,
    )
    .await?;
    let screen = visible::screen(&state, pool, p.min_position, actor.user).await?;
    let screening = visible::screening(screen.as_deref());
    let counts = notify_read::unread_count(pool, actor.user.get(), screening.active()).await?;
    let asks: Vec<_> = counts.iter().map(|(ask, _)| ask.clone()).collect();
    let shown = visible::readable(&state, actor.user, p.min_position, screening, &asks).await?;
    let count = counts
        .iter()
        .zip(shown)
        .filter_map(|((_, n), seen)| seen.is_some().then_some(n))
        .sum();
    Ok(Json(UnreadCount { count }))
}
