//! The `{id}` of a post or a comment, while it is live: an unknown, deleted or malformed id is
//! 404 `NOT_FOUND` on every route (SPEC.md).

use relations_domain::{CommentId, Post, PostId, UserId};

use crate::error::ApiError;
use crate::state::AppState;

/// A post's author while it is live; an unknown or deleted post is 404.
pub async fn live_post(state: &AppState, id: PostId) -> Result<UserId, ApiError> {
    match state.posts.peek(id).await? {
        Post::Live { author } => Ok(author),
        Post::Unpublished | Post::Deleted { .. } => Err(ApiError::NotFound),
    }
}

/// A comment's post's author and its own author, while both the post and the comment are
/// live; else 404.
pub async fn live_comment(state: &AppState, id: CommentId) -> Result<(UserId, UserId), ApiError> {
    let post_author = live_post(state, id.post).await?;
    let thread = state.engagement.thread(id.post).await?;
    match thread.comment(id.n) {
        Some(c) if !c.deleted => Ok((post_author, c.author)),
        _ => Err(ApiError::NotFound),
    }
}
