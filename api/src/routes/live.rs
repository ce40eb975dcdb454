//! The `{id}` of a user while it is live: an erased user is 404 `NOT_FOUND` on every route
//! (SPEC.md); posts and comments are in [`super::readable`].

use relations_domain::UserId;

use crate::error::ApiError;
use crate::state::AppState;

/// `user`, unless erased (404: an erased user is gone, and nothing tells more).
pub async fn live_user(state: &AppState, user: UserId) -> Result<UserId, ApiError> {
    match crate::auth::erased(state, user).await? {
        true => Err(ApiError::NotFound),
        false => Ok(user),
    }
}
