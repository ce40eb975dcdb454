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
    judge(state, viewer, id, seen, Judged::ForRead(min_position)).await
}

/// [`readable_post`] for a command by `actor`: judged on the graph as it is, and never refused
/// for the graph's lag (see [`judge`]).
pub async fn live_post(
    state: &AppState,
    actor: UserId,
    id: PostId,
) -> Result<PostAccess, ApiError> {
    let seen = state.posts.peek(id).await?;
    judge(state, Some(actor), id, seen, Judged::ForCommand).await
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
    judge(state, Some(actor), id, seen, Judged::ForCommand).await
}

/// Who a post's readability is judged for.
#[derive(Clone, Copy)]
enum Judged {
    /// A read, on the graph once it reflects the position given (it may lag without one).
    ForRead(Option<LogPosition>),
    /// A command by the viewer: the graph of this process may lag behind what the actor's own
    /// transaction would see (a follow, an approval or an unlock just committed), so a
    /// refusal by it is asked again of what is committed (`RelationStore::may_read_now`); a
    /// lagging model may send a command to the log, never refuse it (issue 43). The like and
    /// comment guards judge it once more under lock.
    ForCommand,
}

/// Post `id`, seen as `post` at version `seen` of its stream: its access while it is live, its
/// author is not erased and `viewer` may read it (as [`Judged`] says); else 404.
async fn judge(
    state: &AppState,
    viewer: Option<UserId>,
    id: PostId,
    (post, seen): (Post, usize),
    judged: Judged,
) -> Result<PostAccess, ApiError> {
    let (author, visibility, quote_policy, comment_policy) = match post {
        Post::Live {
            author,
            visibility,
            quote_policy,
            comment_policy,
            ..
        } => {
            let author = live_user(state, author).await?;
            (author, visibility, quote_policy, comment_policy)
        }
        Post::Unpublished | Post::Deleted { .. } => return Err(ApiError::NotFound),
    };
    let min_position = match judged {
        Judged::ForRead(min_position) => min_position,
        Judged::ForCommand => None,
    };
    let source = graph_source(state, min_position).await?;
    let mut readable = privacy::may_read(source, viewer, author, visibility).await?;
    if let (false, Judged::ForCommand, Some(actor)) = (readable, judged, viewer) {
        // Refused by what may lag: asked again of what is committed.
        readable = state
            .relations
            .may_read_now(actor, author, visibility)
            .await?;
    }
    match readable {
        true => Ok(PostAccess {
            post: id,
            author,
            visibility,
            quote_policy,
            comment_policy,
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
