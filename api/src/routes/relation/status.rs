//! `GET /api/v1/relation/status?from=A&to=B` and `GET /api/v1/relation/batch?from=C&to=1,2,3`.

use axum::extract::State;
use axum::Json;
use chrono::{DateTime, Utc};
use relations_domain::{Relation, UserId};
use relations_projections::history;
use relations_store::LogPosition;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiQuery;
use crate::routes::query::{graph_source, wait_for_projectors};
use crate::state::AppState;

/// Mutes are private: shown (as of now) only when the bearer is `from`.
fn mutes_at(bearer: Option<&Actor>, from: UserId) -> Option<DateTime<Utc>> {
    bearer.filter(|a| a.user == from).map(|_| Utc::now())
}

/// `from`'s relations to `to`: now (from the graph, `muting` for `from` themselves), or as
/// they stood at `as_of` (from projector `history`, `muting` false).
async fn relations(
    state: &AppState,
    bearer: Option<&Actor>,
    from: UserId,
    to: &[UserId],
    min_position: Option<LogPosition>,
    as_of: Option<DateTime<Utc>>,
) -> Result<Vec<Relation>, ApiError> {
    if let Some(at) = as_of {
        wait_for_projectors(state, &[history::NAME], min_position).await?;
        return Ok(history::query::relations_as_of(&state.pool, from, to, at).await?);
    }
    let source = graph_source(state, min_position).await?;
    Ok(source.relations(from, to, mutes_at(bearer, from)).await?)
}

/// Most ids one batch may ask about.
pub const MAX_BATCH: usize = 200;

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
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<LogPosition>,
    /// The relation as it stood at this moment (RFC 3339), folded from the log: follows,
    /// blocks and requests as they were; `muting` false.
    #[param(value_type = Option<String>, format = DateTime)]
    as_of: Option<DateTime<Utc>>,
}

/// A's relation to B.
#[utoipa::path(get, path = "/api/v1/relation/status", tag = "queries", params(StatusParams),
    responses((status = 200, body = Relation), (status = 400, body = ErrorBody),
              (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
pub async fn status(
    State(state): State<AppState>,
    bearer: Option<Actor>,
    ApiQuery(p): ApiQuery<StatusParams>,
) -> Result<Json<Relation>, ApiError> {
    let mut relations = relations(
        &state,
        bearer.as_ref(),
        p.from,
        &[p.to],
        p.min_position,
        p.as_of,
    )
    .await?;
    Ok(Json(relations.remove(0)))
}

/// `batch` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BatchParams {
    /// The user whose side the answers take.
    #[param(value_type = i64, minimum = 1)]
    from: UserId,
    /// Comma-separated user ids, at most 200.
    #[param(pattern = r"^[1-9][0-9]{0,17}(,[1-9][0-9]{0,17}){0,199}$")]
    to: String,
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    min_position: Option<LogPosition>,
    /// The relation as it stood at this moment (RFC 3339), folded from the log: follows,
    /// blocks and requests as they were; `muting` false.
    #[param(value_type = Option<String>, format = DateTime)]
    as_of: Option<DateTime<Utc>>,
}

/// `batch`'s answer: `{relations}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct RelationBatch {
    /// One per id asked, in the order asked.
    pub relations: Vec<Relation>,
}

/// C's relation to each of up to 200 users, in the order asked.
#[utoipa::path(get, path = "/api/v1/relation/batch", tag = "queries", params(BatchParams),
    responses((status = 200, body = RelationBatch), (status = 400, body = ErrorBody),
              (status = 503, body = ErrorBody, description = "NOT_CAUGHT_UP")))]
pub async fn batch(
    State(state): State<AppState>,
    bearer: Option<Actor>,
    ApiQuery(p): ApiQuery<BatchParams>,
) -> Result<Json<RelationBatch>, ApiError> {
    let to =
        p.to.split(',')
            .map(|id| id.trim().parse::<UserId>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ApiError::InvalidInput(format!("to: {e}")))?;
    if to.len() > MAX_BATCH {
        return Err(ApiError::InvalidInput(format!(
            "to: at most {MAX_BATCH} ids"
        )));
    }
    let relations = relations(
        &state,
        bearer.as_ref(),
        p.from,
        &to,
        p.min_position,
        p.as_of,
    )
    .await?;
    Ok(Json(RelationBatch { relations }))
}
