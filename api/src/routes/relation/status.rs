//! `GET /api/v1/relation/status?from=A&to=B`, and what it shares with `batch`: relations now
//! or as they stood.

use axum::extract::State;
use axum::Json;
use chrono::{DateTime, Utc};
use relations_domain::{Relation, UserId};
use relations_projections::history;
use relations_projections::privacy;
use relations_projections::relations::reads::Source;
use relations_store::LogPosition;
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::contract::RelationQueryErrors;
use crate::routes::query::{graph_source, wait_for_projectors};
use crate::state::AppState;

/// Mutes are private: shown (as of now) only when the bearer is `from`.
fn mutes_at(bearer: Option<&Actor>, from: UserId) -> Option<DateTime<Utc>> {
    bearer.filter(|a| a.user == from).map(|_| Utc::now())
}

/// `from`'s relations to `to`: now (from the graph, `muting` for `from` themselves), or as
/// they stood at `as_of` (the pairs' relation streams in the log, folded; `muting` false).
pub(super) async fn relations(
    state: &AppState,
    bearer: Option<&Actor>,
    from: UserId,
    to: &[UserId],
    when: AsOfParams,
) -> Result<Vec<Relation>, ApiError> {
    let AsOfParams {
        min_position,
        as_of,
    } = when;
    if let Some(at) = as_of {
        // Whose graph is hidden is judged now, whatever moment is asked about.
        hidden_pairs(graph_source(state, None).await?, bearer, from, to).await?;
        // The read pool holds the log up to `min_position` once projector `history` has
        // passed it there (its checkpoint is written after the events it folds).
        let pool = wait_for_projectors(state, &[history::NAME], min_position).await?;
        return Ok(history::query::relations_as_of(pool, from, to, at).await?);
    }
    let source = graph_source(state, min_position).await?;
    hidden_pairs(source, bearer, from, to).await?;
    Ok(source.relations(from, to, mutes_at(bearer, from)).await?)
}

/// 403 `HIDDEN` when a user of a pair hides their graph from the bearer, who is not one of
/// the pair (issue 26's rule, `relations_projections::privacy`).
async fn hidden_pairs(
    source: Source<'_>,
    bearer: Option<&Actor>,
    from: UserId,
    to: &[UserId],
) -> Result<(), ApiError> {
    match privacy::pairs_hidden(source, bearer.map(|a| a.user), from, to).await? {
        true => Err(ApiError::Hidden),
        false => Ok(()),
    }
}

/// `status` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct StatusParams {
    /// The user whose side the answer takes.
    #[param(value_type = i64, minimum = 1)]
    from: UserId,
    /// The other user.
    #[param(value_type = i64, minimum = 1)]
    to: UserId,
}

/// When the relations are read: after `min_position` now, or as they stood at `as_of`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AsOfParams {
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<LogPosition>,
    /// The relation as it stood at this moment (RFC 3339), folded from the log: follows,
    /// blocks and requests as they were; `muting` false.
    #[param(value_type = Option<String>, format = DateTime)]
    as_of: Option<DateTime<Utc>>,
}

/// A's relation to B.
#[utoipa::path(get, path = "/api/v1/relation/status", tag = "queries", params(StatusParams, AsOfParams),
    responses((status = 200, body = Relation), RelationQueryErrors))]
pub async fn status(
    State(state): State<AppState>,
    bearer: Option<Actor>,
    ApiQuery(p): ApiQuery<StatusParams>,
    ApiQuery(when): ApiQuery<AsOfParams>,
) -> Result<Json<Relation>, ApiError> {
    let mut relations = relations(&state, bearer.as_ref(), p.from, &[p.to], when).await?;
    Ok(Json(relations.remove(0)))
}
