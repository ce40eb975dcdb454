//! `GET /api/v1/relation/status?from=A&to=B` and `GET /api/v1/relation/batch?from=C&to=1,2,3`.

use axum::extract::State;
use axum::Json;
use relations_domain::{Relation, UserId};
use relations_projections::following::query as read;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::extract::ApiQuery;
use crate::routes::query::catch_up;
use crate::state::AppState;

/// Most ids one batch may ask about.
pub const MAX_BATCH: usize = 200;

/// `status` parameters.
#[derive(Debug, Deserialize)]
pub struct StatusParams {
    from: UserId,
    to: UserId,
    min_position: Option<String>,
}

/// A's relation to B.
pub async fn status(
    State(state): State<AppState>,
    ApiQuery(p): ApiQuery<StatusParams>,
) -> Result<Json<Relation>, ApiError> {
    catch_up(&state, p.min_position.as_deref()).await?;
    let mut relations = read::relations(&state.pool, p.from, &[p.to]).await?;
    Ok(Json(relations.remove(0)))
}

/// `batch` parameters.
#[derive(Debug, Deserialize)]
pub struct BatchParams {
    from: UserId,
    to: String,
    min_position: Option<String>,
}

/// C's relation to each of up to 200 users, in the order asked.
pub async fn batch(
    State(state): State<AppState>,
    ApiQuery(p): ApiQuery<BatchParams>,
) -> Result<Json<Value>, ApiError> {
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
    catch_up(&state, p.min_position.as_deref()).await?;
    let relations = read::relations(&state.pool, p.from, &to).await?;
    Ok(Json(json!({ "relations": relations })))
}
