//! The shapes the read models answer with: a post and a comment as a reader sees them (SPEC.md's
//! `Post` and `Comment`). The feed and engagement queries fill them; a new post's or comment's
//! answer shows one as it was just written.

use chrono::{DateTime, Utc};
use relations_domain::{CommentId, PostId, UserId, Visibility};
use serde::Serialize;

/// A post as a reader sees it (SPEC.md's `Post`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PostView {
    /// The post's id.
    pub id: PostId,
    /// Who wrote it.
    pub author: UserId,
    /// Its text.
    pub content: String,
    /// When it was written.
    pub created_at: DateTime<Utc>,
    /// Who may read it (issue 26).
    pub visibility: Visibility,
    /// Likes (projector `engagement`).
    pub like_count: i64,
    /// Live comments, replies included (projector `engagement`).
    pub comment_count: i64,
    /// Whether the bearer likes it (answers to a bearer token only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub liked: Option<bool>,
    /// Live reposts (projector `engagement`; issue 44).
    pub repost_count: i64,
    /// Whether the bearer reposts it (answers to a bearer token only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reposted: Option<bool>,
    /// A feed item's (issue 44): the followed users who reposted it, newest first, at most 3;
    /// empty when the reader sees it only as a follower of its author. Only on feed items.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reposted_by: Option<Vec<UserId>>,
}

/// SPEC.md's `Comment`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CommentView {
    /// `"{post id}.{n}"`.
    pub id: CommentId,
    /// The post.
    pub post: PostId,
    /// Who wrote it.
    pub author: UserId,
    /// The comment replied to.
    pub parent: Option<CommentId>,
    /// Its text; null once deleted.
    pub content: Option<String>,
    /// When it was written.
    pub created_at: DateTime<Utc>,
    /// Likes.
    pub like_count: i64,
    /// Replies the replies list shows.
    pub reply_count: i64,
    /// Pinned by the post's author.
    pub pinned: bool,
    /// Deleted (shown only while replies remain).
    pub deleted: bool,
    /// Whether the bearer likes it (answers to a bearer token only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub liked: Option<bool>,
}
