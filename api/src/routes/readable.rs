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
    let seen = state.posts.peek(id).await?;
    judge(state, viewer, id, seen, min_position).await
}

/// [`readable_post`] for a command by `actor`: judged on the graph as it is.
pub async fn live_post(
    state: &AppState,
    actor: UserId,
    id: PostId,
) -> Result<PostAccess, ApiError> {
    readable_post(state, Some(actor), id, None).await
}

/// [`live_post`] for a like or an unlike, judged on the post as this process last knew it
/// (no round trip when it is cached): the like's guard checks again under lock that it was
/// not deleted since (`relations_store::PostAccess`), and refuses the like as not found if it
/// was.
pub async fn likable_post(
    state: &AppState,
    actor: UserId,
    id: PostId,
) -> Result<PostAccess, ApiError> {
    let seen = state.posts.known(id).await?;
    judge(state, Some(actor), id, seen, None).await
}

/// Post `id`, seen as `post` at version `seen` of its stream: its access while it is live, its
/// author is not erased and `viewer` may read it (on the graph once it reflects
/// `min_position`); else 404.
async fn judge(
    state: &AppState,
    viewer: Option<UserId>,
    id: PostId,
    (post, seen): (Post, usize),
    min_position: Option<LogPosition>,
) -> Result<PostAccess, ApiError> {
    let (author, visibility) = match post {
        Post::Live { author, visibility } => (live_user(state, author).await?, visibility),
        Post::Unpublished | Post::Deleted { .. } => return Err(ApiError::NotFound),
    };
    let source = graph_source(state, min_position).await?;
    match privacy::may_read(source, viewer, author, visibility).await? {
        true => Ok(PostAccess {
            post: id,
            author,
            visibility,
            seen,
        }),
        false => Err(ApiError::NotFound),
    }
}

/// A live comment, as a command on it needs it.
pub struct LiveComment {
    /// Its post (the post's author and visibility).
    pub post: PostAccess,
    /// The comment's own author.
    pub author: UserId,
    /// The version of the post's thread it was found live at.
    pub seen: usize,
}

/// A comment, while both the post and the comment are live, the comment's author is not
/// erased and `viewer` may read the post (the caller of a command); else 404.
pub async fn live_comment(
    state: &AppState,
    actor: UserId,
    id: CommentId,
) -> Result<LiveComment, ApiError> {
    let post = live_post(state, actor, id.post).await?;
    let (thread, seen) = state.engagement.thread(id.post).await?;
    match thread.comment(id.n) {
        Some(c) if !c.deleted => Ok(LiveComment {
            post,
            author: live_user(state, c.author).await?,
            seen,
        }),
        _ => Err(ApiError::NotFound),
    }
}
