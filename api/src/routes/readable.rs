//! A post or a comment, while it is live and the viewer may read it: an unknown, deleted or
//! malformed id, an erased author and anything of theirs, and a post the viewer may not read
//! (issue 26: `relations_projections::privacy`) with its likes, comments and replies, are 404
//! `NOT_FOUND` on every route (SPEC.md).

use relations_domain::{CommentId, Post, PostId, UserId};
use relations_projections::privacy;
use relations_store::{LogPosition, PostAccess};

use crate::error::ApiError;
use crate::routes::live::live_user;
use crate::routes::query::graph_source;
use crate::state::AppState;

/// A post's author and visibility while it is live and `viewer` (none without a token) may
/// read it (judged once the graph reflects `min_position`, when given); an unknown or deleted
/// post, one whose author is erased, or one the viewer may not read, is 404: to them it does
/// not exist.
pub async fn readable_post(
    state: &AppState,
    viewer: Option<UserId>,
    id: PostId,
    min_position: Option<LogPosition>,
) -> Result<PostAccess, ApiError> {
    let (author, visibility) = match state.posts.peek(id).await? {
        Post::Live { author, visibility } => (live_user(state, author).await?, visibility),
        Post::Unpublished | Post::Deleted { .. } => return Err(ApiError::NotFound),
    };
    let source = graph_source(state, min_position).await?;
    match privacy::may_read(source, viewer, author, visibility).await? {
        true => Ok(PostAccess { author, visibility }),
        false => Err(ApiError::NotFound),
    }
}

/// [`readable_post`] for a command by `actor`: judged on the graph as it is.
pub async fn live_post(
    state: &AppState,
    actor: UserId,
    id: PostId,
) -> Result<PostAccess, ApiError> {
    readable_post(state, Some(actor), id, None).await
}

/// A comment's post (its author and visibility) and the comment's own author, while both the
/// post and the comment are live, the comment's author is not erased and `viewer` may read
/// the post (the caller of a command); else 404.
pub async fn live_comment(
    state: &AppState,
    actor: UserId,
    id: CommentId,
) -> Result<(PostAccess, UserId), ApiError> {
    let post = live_post(state, actor, id.post).await?;
    let thread = state.engagement.thread(id.post).await?;
    match thread.comment(id.n) {
        Some(c) if !c.deleted => Ok((post, live_user(state, c.author).await?)),
        _ => Err(ApiError::NotFound),
    }
}
