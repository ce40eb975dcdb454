//! `GET /api/v1/relation/batch?from=C&to=1,2,3`: one user's relation to each of up to 200.

use axum::extract::State;
use axum::Json;
use relations_domain::{Relation, UserId};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::status::{relations, AsOfParams};
use crate::auth::Actor;
use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::contract::RelationQueryErrors;
use crate::state::AppState;

/// Most ids one batch may ask about.
pub const MAX_BATCH: usize = 200;

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
}

/// `batch`'s answer: `{relations}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct RelationBatch {
    /// One per id asked, in the order asked.
    pub relations: Vec<Relation>,
}

/// C's relation to each of up to 200 users, in the order asked.
#[utoipa::path(get, path = "/api/v1/relation/batch", tag = "queries", params(BatchParams, AsOfParams),
    responses((status = 200, body = RelationBatch), RelationQueryErrors))]
pub async fn batch(
    State(state): State<AppState>,
    bearer: Option<Actor>,
    ApiQuery(p): ApiQuery<BatchParams>,
    ApiQuery(when): ApiQuery<AsOfParams>,
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
    let relations = relations(&state, bearer.as_ref(), p.from, &to, when).await?;
    Ok(Json(RelationBatch { relations }))
}
