//! `GET /api/v1/me/mutes`: whom the caller mutes now.

use axum::extract::State;
use axum::Json;
use chrono::{DateTime, Utc};
use relations_domain::UserId;
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::routes::contract::BearerQueryErrors;
use crate::routes::page::{Page, SinceKey};
use crate::routes::query::{edge_key, graph_source};
use crate::state::AppState;

/// One mute of the caller's: `{user, since, expires_at}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct MuteItem {
    /// The muted user.
    pub user: UserId,
    /// Since when (the last mute set).
    pub since: DateTime<Utc>,
    /// When it ends by itself; null: never.
    pub expires_at: Option<DateTime<Utc>>,
}

/// A page of mutes: `{items, next_cursor}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct MutePage {
    /// Newest first.
    pub items: Vec<MuteItem>,
    /// The next page's cursor; none after the last page.
    pub next_cursor: Option<String>,
}

/// Whom the caller mutes now (ended mutes are gone), newest first: `{items, next_cursor}`.
#[utoipa::path(get, path = "/api/v1/me/mutes", tag = "queries", security(("bearer" = [])),
    params(Page<SinceKey>),
    responses((status = 200, body = MutePage), BearerQueryErrors))]
pub async fn mutes(
    State(state): State<AppState>,
    actor: Actor,
    page: Page<SinceKey>,
) -> Result<Json<MutePage>, ApiError> {
    let source = graph_source(&state, page.min_position).await?;
    let mut rows = source
        .mutes(actor.user, page.after, page.probe(), Utc::now())
        .await?;
    let next_cursor = page.cut(&mut rows, |(edge, _)| edge_key(edge));
    Ok(Json(MutePage {
        items: rows
            .into_iter()
            .map(|(edge, expires_at)| MuteItem {
                user: edge.user,
                since: edge.since,
                expires_at,
            })
            .collect(),
        next_cursor,
    }))
}
