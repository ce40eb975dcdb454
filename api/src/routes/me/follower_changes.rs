//! `GET /api/v1/me/follower_changes`: who started and who stopped following the caller.

use axum::extract::State;
use axum::Json;
use chrono::{DateTime, Utc};
use relations_domain::UserId;
use relations_projections::history;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::contract::BearerQueryErrors;
use crate::routes::page::{ChangeKey, Page};
use crate::routes::query::wait_for_projectors;
use crate::state::AppState;

/// `follower_changes` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChangesParams {
    /// Changes at or after this moment (RFC 3339).
    #[param(value_type = String, format = DateTime)]
    since: DateTime<Utc>,
}

/// One change of the caller's followers: `{user, change, at}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FollowerChangeItem {
    /// The follower.
    pub user: UserId,
    /// `followed` or `unfollowed` (an unfollow, a block either way, or a removal).
    #[schema(pattern = "^(followed|unfollowed)$")]
    pub change: &'static str,
    /// When.
    pub at: DateTime<Utc>,
}

/// A page of follower changes: `{items, next_cursor}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct FollowerChangePage {
    /// Newest first; one item per event.
    pub items: Vec<FollowerChangeItem>,
    /// The next page's cursor; none after the last page.
    pub next_cursor: Option<String>,
}

/// Who started and who stopped following the caller since a moment, newest first, one item per
/// event (a follow and an unfollow after `since` are two items): `{items, next_cursor}`.
#[utoipa::path(get, path = "/api/v1/me/follower_changes", tag = "queries", security(("bearer" = [])),
    params(ChangesParams, Page<ChangeKey>),
    responses((status = 200, body = FollowerChangePage), BearerQueryErrors))]
pub async fn follower_changes(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<ChangesParams>,
    page: Page<ChangeKey>,
) -> Result<Json<FollowerChangePage>, ApiError> {
    let pool = wait_for_projectors(&state, &[history::NAME], page.min_position).await?;
    let (user, before) = (actor.user, page.after);
    let mut rows =
        history::query::follower_changes(pool, user, p.since, before, page.probe()).await?;
    let next_cursor = page.cut(&mut rows, |c| (c.at, c.position));
    Ok(Json(FollowerChangePage {
        items: rows
            .into_iter()
            .map(|c| FollowerChangeItem {
                user: c.user,
                change: if c.followed { "followed" } else { "unfollowed" },
                at: c.at,
            })
            .collect(),
        next_cursor,
    }))
}
