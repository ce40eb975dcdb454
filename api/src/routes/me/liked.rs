//! `GET /api/v1/me/liked?ids=a,b,c`: which of these posts the caller likes.

use axum::extract::State;
use axum::Json;
use relations_domain::PostId;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Actor;
use crate::error::{ApiError, ErrorBody};
use crate::extract::ApiQuery;
use crate::state::AppState;

/// `me/liked` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LikedParams {
    /// Comma-separated post ids, at most 100.
    #[param(
        pattern = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(,[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}){0,99}$"
    )]
    ids: String,
}

/// `me/liked`'s answer: `{liked}`.
#[derive(Debug, Serialize, ToSchema)]
pub struct LikedAnswer {
    /// One per id asked, in the order asked.
    pub liked: Vec<bool>,
}

/// Most ids one `me/liked` may ask about.
const MAX_LIKED: usize = 100;

/// Which of these posts the caller likes, in the order asked (the like-state cache answers
/// for recent posts without a database round trip).
#[utoipa::path(get, path = "/api/v1/me/liked", tag = "queries", security(("bearer" = [])),
    params(LikedParams),
    responses((status = 200, body = LikedAnswer), (status = 400, body = ErrorBody),
              (status = 401, body = ErrorBody),
              (status = 403, body = ErrorBody, description = "USER_BANNED"), (status = 503, body = ErrorBody)))]
pub async fn liked(
    State(state): State<AppState>,
    actor: Actor,
    ApiQuery(p): ApiQuery<LikedParams>,
) -> Result<Json<LikedAnswer>, ApiError> {
    let ids = p
        .ids
        .split(',')
        .map(|id| id.trim().parse::<PostId>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| ApiError::InvalidInput("ids: comma-separated post ids".into()))?;
    if ids.len() > MAX_LIKED {
        return Err(ApiError::InvalidInput(format!(
            "ids: at most {MAX_LIKED} post ids"
        )));
    }
    // The primary: the like-state cache fills from what it reads (see the feed's inbox fills).
    let liked = state.likes.liked(&state.pool, actor.user, &ids).await?;
    Ok(Json(LikedAnswer { liked }))
}
