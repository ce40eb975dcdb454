//! `GET /api/v1/users/{id}/known_followers`: the user's followers whom the caller follows.

use axum::extract::State;
use axum::Json;
use relations_domain::UserId;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::PathId;
use crate::routes::page::{Page, SinceKey};
use crate::routes::query::{cursor_page, graph_list_source, CursorPage, ListItem};
use crate::state::AppState;

/// `known_followers`' answer: `{items, total, next_cursor}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct KnownFollowersPage {
    /// Newest follow of the user first; `since` is when that follower began following them.
    pub items: Vec<ListItem>,
    /// How many followers of the user the caller follows.
    pub total: i64,
    /// The next page's cursor; none after the last page.
    pub next_cursor: Option<String>,
}

/// Followers of the user whom the caller follows ("followed by people you know"), newest
/// first, with their number: `{items, total, next_cursor}`.
#[utoipa::path(get, path = "/api/v1/users/{id}/known_followers", tag = "queries",
    security(("bearer" = [])),
    params(("id" = i64, Path, description = "The user"), Page<SinceKey>),
    responses((status = 200, body = KnownFollowersPage), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "USER_BANNED; HIDDEN: the user hides their graph from the caller (or is locked and not followed by them)"), (status = 404, body = ErrorBody),
              (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
pub async fn known_followers(
    State(state): State<AppState>,
    actor: Actor,
    PathId(user): PathId<UserId>,
    page: Page<SinceKey>,
) -> Result<Json<KnownFollowersPage>, ApiError> {
    let source = graph_list_source(&state, user, Some(actor.user), page.min_position).await?;
    let (rows, total) = source
        .known_followers(actor.user, user, page.after, page.probe())
        .await?;
    let CursorPage { items, next_cursor } = cursor_page(source, &page, rows, None).await?;
    Ok(Json(KnownFollowersPage {
        items,
        total,
        next_cursor,
    }))
}
