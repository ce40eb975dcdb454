//! `GET /api/v1/me/suggestions?limit=`: users followed by the caller's followees.

use axum::extract::State;
use axum::Json;
use chrono::Utc;
use relations_domain::UserId;
use relations_store::LogPosition;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::contract::BearerQueryErrors;
use crate::routes::page::limit_within;
use crate::routes::query::graph_source;
use crate::state::AppState;

/// The query: how many suggestions, and read-your-writes.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SuggestionsQuery {
    /// How many: default 10, at most 50.
    #[param(minimum = 1, maximum = 50)]
    limit: Option<i64>,
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<LogPosition>,
}

/// One suggestion: `{user, count, followed_by}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SuggestionItem {
    /// The suggested user.
    pub user: UserId,
    /// How many of the users the caller follows (and whose graph the caller may see) follow
    /// them.
    pub count: i64,
    /// min(count, 3) of those users, lowest id first.
    pub followed_by: Vec<UserId>,
}

/// `{items}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SuggestionList {
    /// Most followed first; ties: lower id first.
    pub items: Vec<SuggestionItem>,
}

/// Users followed by the users the caller follows, most first: never the caller, anyone the
/// caller follows or asked to follow, blocks either way, mutes, dismissed, or banned; built
/// only from followees whose graph the caller may see.
#[utoipa::path(get, path = "/api/v1/me/suggestions", tag = "queries", security(("bearer" = [])),
    params(SuggestionsQuery),
    responses((status = 200, body = SuggestionList), BearerQueryErrors))]
pub async fn suggestions(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(query): ApiQuery<SuggestionsQuery>,
) -> Result<Json<SuggestionList>, ApiError> {
    let limit = limit_within(query.limit, 10, 50)?;
    let source = graph_source(&state, query.min_position).await?;
    let found = source.suggestions(actor.user, limit, Utc::now()).await?;
    Ok(Json(SuggestionList {
        items: found
            .into_iter()
            .map(|s| SuggestionItem {
                user: s.user,
                count: s.count,
                followed_by: s.followed_by,
            })
            .collect(),
    }))
}
