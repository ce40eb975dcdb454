//! The shapes the read models answer with: a post and a comment as a reader sees them (SPEC.md's
//! `Post` and `Comment`). The feed and engagement queries fill them; a new post's or comment's
//! answer shows one as it was just written.

use crate::filters::screen::FilterHit;
use chrono::{DateTime, Utc};
use relations_domain::{CommentId, CommentPolicy, PostId, QuotePolicy, UserId, Visibility};
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
    /// Whether the bearer bookmarks it (answers to a bearer token only; issue 46: private,
    /// so no count beside it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bookmarked: Option<bool>,
    /// A feed item's (issue 44): the followed users who reposted it, newest first, at most 3;
    /// empty when the reader sees it only as a follower of its author. Only on feed items.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reposted_by: Option<Vec<UserId>>,
    /// Who may quote it (issue 44).
    pub quote_policy: QuotePolicy,
    /// Who besides its author may comment on it or reply under it (issue 47).
    pub comment_policy: CommentPolicy,
    /// Live quotes of it that are not detached (projector `engagement`).
    pub quote_count: i64,
    /// The post it quotes, as this reader may see it at the moment of reading: null when it
    /// quotes none; left out of a quoted post (one level).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<QuoteView>, nullable))]
    pub quote: Option<Option<QuoteView>>,
    /// The reader's `warn` filters its text matches (issue 47), in the order they were made;
    /// left out when none does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filtered: Option<Vec<FilterHit>>,
}

impl PostView {
    /// The quoted post not yet looked up: shown as `unavailable` until it is
    /// ([`QuoteView::pending`]), never with content the reader may not read.
    pub fn quoting(&self) -> Option<PostId> {
        match &self.quote {
            Some(Some(QuoteView::Gone {
                id,
                state: QuoteState::Unavailable,
            })) => Some(*id),
            _ => None,
        }
    }
}

/// What a post shows of the post it quotes (issue 44).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(no_recursion))]
#[serde(untagged)]
pub enum QuoteView {
    /// The quoted post as the reader may see it, its own `quote` left out.
    Post(Box<PostView>),
    /// The quoted post is not shown: `{id, state}`.
    Gone {
        /// The quoted post's id.
        id: PostId,
        /// Why not.
        state: QuoteState,
    },
}

impl QuoteView {
    /// What a post shows of a quoted post the reader may see: the post itself.
    pub fn shown(quoted: PostView) -> Option<Option<Self>> {
        Some(Some(Self::Post(Box::new(quoted))))
    }

    /// What a post quoting `quote_of` (`detached` or not) shows before the quoted post is
    /// looked up for a reader: a detached quote stays so; any other is `unavailable` until
    /// the lookup finds it readable.
    pub fn pending(quote_of: Option<PostId>, detached: bool) -> Option<Option<Self>> {
        Some(quote_of.map(|id| Self::Gone {
            id,
            state: match detached {
                true => QuoteState::Detached,
                false => QuoteState::Unavailable,
            },
        }))
    }
}

/// Why a quoted post is not shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum QuoteState {
    /// Deleted, its author erased or banned, or the reader may not read it or is separated
    /// from its author by a block.
    Unavailable,
    /// Its author detached the quote.
    Detached,
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
    /// The bearer's `warn` filters of context `comments` its text matches (issue 47); left
    /// out when none does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filtered: Option<Vec<FilterHit>>,
}
