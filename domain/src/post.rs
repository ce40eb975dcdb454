//! The post: the aggregate behind the follow feed (rule 8).
//!
//! Each post is its own stream (`post` / the post's id). Publishing starts the stream;
//! only the author may delete it, once. A deleted post stays deleted: its stream refuses every
//! later command, and every read model drops it.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::UserId;

mod comment;
mod quote;
pub use comment::{BadCommentPolicy, CommentPolicy};
pub use quote::{BadQuotePolicy, QuoteJudged, QuotePolicy};

/// The post a post quotes, and its author (issue 44).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct QuoteOf {
    /// The quoted post.
    pub post: PostId,
    /// Its author.
    pub author: UserId,
}

/// A post's id: a UUID (version 7, so ids sort roughly by creation), made by the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(value_type = String, format = "uuid"))]
#[serde(transparent)]
pub struct PostId(uuid::Uuid);

impl PostId {
    /// Wraps a UUID the caller made (the service makes version-7 ones).
    pub fn from_uuid(id: uuid::Uuid) -> Self {
        Self(id)
    }

    /// The UUID, as PostgreSQL stores it.
    pub fn uuid(self) -> uuid::Uuid {
        self.0
    }
}

/// A string that is not a post id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a post id")]
pub struct BadPostId;

impl FromStr for PostId {
    type Err = BadPostId;

    /// Only the hyphenated lowercase or uppercase form the API hands out.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.len() != 36 {
            return Err(BadPostId);
        }
        uuid::Uuid::try_parse(s).map(Self).map_err(|_| BadPostId)
    }
}

impl fmt::Display for PostId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.hyphenated().fmt(f)
    }
}

/// Why a text is not a post's content.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PostContentError {
    /// Empty.
    #[error("a post's content must not be empty")]
    Empty,
    /// Holds U+0000, which PostgreSQL's text cannot store.
    #[error("a post's content must not contain the NUL character (U+0000)")]
    Nul,
    /// Over the limit.
    #[error("a post's content is at most {max} characters, got {got}")]
    TooLong {
        /// The limit.
        max: usize,
        /// The length given.
        got: usize,
    },
}

/// A post's text: 1 to 2000 characters (Unicode scalar values), rule 8.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct PostContent(String);

impl PostContent {
    /// The most characters a post may have.
    pub const MAX_CHARS: usize = 2000;

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for PostContent {
    type Error = PostContentError;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        let chars = value.chars().count();
        if chars == 0 {
            Err(PostContentError::Empty)
        } else if value.contains('\0') {
            Err(PostContentError::Nul)
        } else if chars > Self::MAX_CHARS {
            Err(PostContentError::TooLong {
                max: Self::MAX_CHARS,
                got: chars,
            })
        } else {
            Ok(Self(value))
        }
    }
}

impl From<PostContent> for String {
    fn from(content: PostContent) -> Self {
        content.0
    }
}

/// Who may read a post (issue 26): `public` (anyone), `unlisted` (anyone, but never in the
/// recommended feed) or `followers` (the author and their followers at the moment of reading).
/// A locked author's posts are all followers-only while the lock lasts, whatever this says
/// ([`crate::privacy::may_read`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Visibility {
    /// Anyone (the default, and every post published before issue 26).
    #[default]
    Public,
    /// Anyone who asks for it, never the recommended feed.
    Unlisted,
    /// The author and their followers.
    Followers,
}

impl Visibility {
    /// The name the API, the events and the read models use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Unlisted => "unlisted",
            Self::Followers => "followers",
        }
    }
}

/// A string that is not a visibility.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("visibility: public, unlisted or followers")]
pub struct BadVisibility;

impl FromStr for Visibility {
    type Err = BadVisibility;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "public" => Ok(Self::Public),
            "unlisted" => Ok(Self::Unlisted),
            "followers" => Ok(Self::Followers),
            _ => Err(BadVisibility),
        }
    }
}

/// A command on one post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostCommand {
    /// Start the post's stream.
    Publish {
        /// The new post's id.
        post_id: PostId,
        /// The user who writes it.
        author: UserId,
        /// Its text.
        content: PostContent,
        /// Who may read it.
        visibility: Visibility,
        /// When it was written (the service's clock; the domain has none).
        created_at: DateTime<Utc>,
        /// The post it quotes (issue 44), as the caller found it live.
        quote_of: Option<QuoteOf>,
        /// Who may quote it.
        quote_policy: QuotePolicy,
        /// Who may comment on it (issue 47).
        comment_policy: CommentPolicy,
    },
    /// Change who may quote the post (its author only).
    SetQuotePolicy {
        /// The post.
        post_id: PostId,
        /// The user who asks.
        actor: UserId,
        /// The new policy.
        quote_policy: QuotePolicy,
    },
    /// Change who may comment on the post (its author only; issue 47).
    SetCommentPolicy {
        /// The post.
        post_id: PostId,
        /// The user who asks.
        actor: UserId,
        /// The new policy.
        comment_policy: CommentPolicy,
    },
    /// Detach the post's quote (issue 44): only the quoted post's author may.
    Detach {
        /// The quoting post.
        post_id: PostId,
        /// The user who asks.
        actor: UserId,
    },
    /// Delete the post (rule 8: only its author).
    Delete {
        /// The post.
        post_id: PostId,
        /// The user who asks.
        actor: UserId,
    },
}

impl PostCommand {
    /// The verb, as logs and idempotency fingerprints name it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Publish { .. } => "publish_post",
            Self::SetQuotePolicy { .. } => "set_quote_policy",
            Self::SetCommentPolicy { .. } => "set_comment_policy",
            Self::Detach { .. } => "detach_quote",
            Self::Delete { .. } => "delete_post",
        }
    }

    /// The post the command acts on.
    pub fn post_id(&self) -> PostId {
        match self {
            Self::Publish { post_id, .. }
            | Self::SetQuotePolicy { post_id, .. }
            | Self::SetCommentPolicy { post_id, .. }
            | Self::Detach { post_id, .. }
            | Self::Delete { post_id, .. } => *post_id,
        }
    }

    /// The user who issued it.
    pub fn actor(&self) -> UserId {
        match self {
            Self::Publish { author, .. } => *author,
            Self::SetQuotePolicy { actor, .. }
            | Self::SetCommentPolicy { actor, .. }
            | Self::Detach { actor, .. }
            | Self::Delete { actor, .. } => *actor,
        }
    }
}

/// The facts a post's stream holds. `PostPublished` is stored as version 2 (its content
/// sealed by the store); version 1 (plain content) stays readable. The others are version 1.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PostEvent {
    /// `author` published the post.
    PostPublished {
        /// The post.
        post_id: PostId,
        /// Who wrote it.
        author: UserId,
        /// Its text: always set when decided; `None` when read back without it (the author's
        /// key was destroyed by an erasure, or a sealed payload was not opened).
        #[serde(default)]
        content: Option<PostContent>,
        /// When it was written.
        created_at: DateTime<Utc>,
        /// Who may read it (issue 26); absent from events stored before it: `public`.
        #[serde(default)]
        visibility: Visibility,
        /// The post it quotes (issue 44); absent when it quotes none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        quote_of: Option<PostId>,
        /// The quoted post's author, beside `quote_of` ([`PostEvent::quote`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        quote_author: Option<UserId>,
        /// Who may quote it (issue 44); absent when `anyone`, as in every event before it.
        #[serde(default, skip_serializing_if = "QuotePolicy::is_anyone")]
        quote_policy: QuotePolicy,
        /// Who may comment on it (issue 47); absent when `everyone`, as in every event before
        /// it.
        #[serde(default, skip_serializing_if = "CommentPolicy::is_everyone")]
        comment_policy: CommentPolicy,
    },
    /// The author changed who may quote the post (issue 44); quotes made before stay.
    QuotePolicyChanged {
        /// The post.
        post_id: PostId,
        /// Its author.
        author: UserId,
        /// The new policy.
        quote_policy: QuotePolicy,
    },
    /// The author changed who may comment on the post (issue 47); comments made before stay.
    CommentPolicyChanged {
        /// The post.
        post_id: PostId,
        /// Its author.
        author: UserId,
        /// The new policy.
        comment_policy: CommentPolicy,
    },
    /// The quoted post's author detached the post's quote (issue 44): it shows the quote as
    /// `detached` from now on, and no longer counts among the quoted post's quotes.
    QuoteDetached {
        /// The quoting post.
        post_id: PostId,
        /// The quoting post's author.
        author: UserId,
        /// The quoted post.
        quote_of: PostId,
        /// Its author, who detached the quote.
        quote_author: UserId,
    },
    /// The author deleted the post; it never appears again anywhere.
    PostDeleted {
        /// The post.
        post_id: PostId,
        /// Its author (who deleted it).
        author: UserId,
    },
}

impl PostEvent {
    /// The event's type name, as stored in the log's `event_type` column.
    pub fn event_type(&self) -> &'static str {
        match self {
            Self::PostPublished { .. } => "PostPublished",
            Self::QuotePolicyChanged { .. } => "QuotePolicyChanged",
            Self::CommentPolicyChanged { .. } => "CommentPolicyChanged",
            Self::QuoteDetached { .. } => "QuoteDetached",
            Self::PostDeleted { .. } => "PostDeleted",
        }
    }

    /// The schema version of the event's payload.
    pub fn event_version(&self) -> &'static str {
        "1"
    }

    /// The post a published post quotes, or whose quote was detached, with its author.
    pub fn quote(&self) -> Option<QuoteOf> {
        match *self {
            Self::PostPublished {
                quote_of: Some(post),
                quote_author: Some(author),
                ..
            }
            | Self::QuoteDetached {
                quote_of: post,
                quote_author: author,
                ..
            } => Some(QuoteOf { post, author }),
            Self::PostPublished { .. }
            | Self::QuotePolicyChanged { .. }
            | Self::CommentPolicyChanged { .. }
            | Self::PostDeleted { .. } => None,
        }
    }
}

/// Why a post command was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PostError {
    /// No such post, or it was deleted.
    #[error("no such post")]
    NotFound,
    /// Rule 8: someone other than the author tried to delete it.
    #[error("only the author may delete a post")]
    NotAuthor,
    /// The id is taken (a publish on an existing stream).
    #[error("a post with this id exists")]
    AlreadyExists,
    /// A quote of a post the author may not read (issue 26): to them it does not exist.
    #[error("no such post to quote")]
    QuotedNotFound,
    /// A quote across a block, either way, with the quoted post's author.
    #[error("a block stands between you and the quoted post's author")]
    Blocked,
    /// A quote the quoted post's policy does not allow.
    #[error("this post cannot be quoted")]
    NotQuotable,
    /// A detach by anyone but the quoted post's author, or of a post that quotes none.
    #[error("only the quoted post's author may detach a quote")]
    NotQuotedAuthor,
}

/// A post's state, folded from its stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Post {
    /// The stream is empty.
    #[default]
    Unpublished,
    /// Published by `author`, not deleted.
    Live {
        /// Who wrote it.
        author: UserId,
        /// Who may read it.
        #[serde(default)]
        visibility: Visibility,
        /// Who may quote it.
        #[serde(default)]
        quote_policy: QuotePolicy,
        /// Who may comment on it (issue 47).
        #[serde(default)]
        comment_policy: CommentPolicy,
        /// The post it quotes, while its quote is not detached.
        #[serde(default)]
        quote_of: Option<QuoteOf>,
        /// Who detached its quote (the quoted post's author), once one did.
        #[serde(default)]
        detached_by: Option<UserId>,
    },
    /// Deleted by its author.
    Deleted {
        /// Who wrote it.
        author: UserId,
    },
}

impl Post {
    /// The aggregate's type, as the event store names its streams.
    pub const TYPE: &'static str = "post";

    /// Decides a command: the events it appends, or why it is refused. A quote is judged
    /// in SPEC's order against `quote` (read under lock): not found, blocked, not quotable.
    pub fn decide(
        &self,
        command: PostCommand,
        quote: QuoteJudged,
    ) -> Result<Vec<PostEvent>, PostError> {
        match (self, command) {
            (
                Post::Unpublished,
                PostCommand::Publish {
                    post_id,
                    author,
                    content,
                    visibility,
                    created_at,
                    quote_of,
                    quote_policy,
                    comment_policy,
                },
            ) => {
                if quote_of.is_some() {
                    judge_quote(quote)?;
                }
                Ok(vec![PostEvent::PostPublished {
                    post_id,
                    author,
                    content: Some(content),
                    created_at,
                    visibility,
                    quote_of: quote_of.map(|q| q.post),
                    quote_author: quote_of.map(|q| q.author),
                    quote_policy,
                    comment_policy,
                }])
            }
            (_, PostCommand::Publish { .. }) => Err(PostError::AlreadyExists),
            (Post::Unpublished | Post::Deleted { .. }, _) => Err(PostError::NotFound),
            (Post::Live { author, .. }, PostCommand::Delete { post_id, actor }) => {
                if *author != actor {
                    return Err(PostError::NotAuthor);
                }
                Ok(vec![PostEvent::PostDeleted {
                    post_id,
                    author: *author,
                }])
            }
            (
                Post::Live { .. },
                command @ (PostCommand::SetQuotePolicy { .. }
                | PostCommand::SetCommentPolicy { .. }),
            ) => Ok(self.set_policy(command)?.into_iter().collect()),
            (Post::Live { .. }, PostCommand::Detach { post_id, actor }) => {
                Ok(self.detach(post_id, actor)?.into_iter().collect())
            }
        }
    }

    /// A policy change, of who may quote the post or who may comment on it: by the author
    /// only; the same policy changes nothing.
    fn set_policy(&self, command: PostCommand) -> Result<Option<PostEvent>, PostError> {
        let Post::Live {
            author,
            quote_policy,
            comment_policy,
            ..
        } = self
        else {
            return Err(PostError::NotFound);
        };
        if *author != command.actor() {
            return Err(PostError::NotAuthor);
        }
        let author = *author;
        Ok(match command {
            PostCommand::SetQuotePolicy {
                post_id,
                quote_policy: new,
                ..
            } => (new != *quote_policy).then_some(PostEvent::QuotePolicyChanged {
                post_id,
                author,
                quote_policy: new,
            }),
            PostCommand::SetCommentPolicy {
                post_id,
                comment_policy: new,
                ..
            } => (new != *comment_policy).then_some(PostEvent::CommentPolicyChanged {
                post_id,
                author,
                comment_policy: new,
            }),
            // Not policy changes: `decide` sends none here.
            PostCommand::Publish { .. }
            | PostCommand::Detach { .. }
            | PostCommand::Delete { .. } => None,
        })
    }

    /// A detach: by the quoted post's author only, once (again: nothing); a post quoting
    /// none has nothing to detach.
    fn detach(&self, post_id: PostId, actor: UserId) -> Result<Option<PostEvent>, PostError> {
        let Post::Live {
            author, quote_of, ..
        } = self
        else {
            return Err(PostError::NotFound);
        };
        match quote_of {
            Some(quote_of) if quote_of.author == actor => Ok(Some(PostEvent::QuoteDetached {
                post_id,
                author: *author,
                quote_of: quote_of.post,
                quote_author: quote_of.author,
            })),
            None if self.quoted_by(actor) => Ok(None),
            _ => Err(PostError::NotQuotedAuthor),
        }
    }

    /// Whether this post's quote was detached by `actor`, the author of the post it quoted.
    fn quoted_by(&self, actor: UserId) -> bool {
        matches!(self, Post::Live { detached_by: Some(by), .. } if *by == actor)
    }

    /// Folds one event into the state.
    pub fn apply(&mut self, event: PostEvent) {
        let quote = event.quote();
        match event {
            PostEvent::PostPublished {
                author,
                visibility,
                quote_policy,
                comment_policy,
                ..
            } => {
                *self = Post::Live {
                    author,
                    visibility,
                    quote_policy,
                    comment_policy,
                    quote_of: quote,
                    detached_by: None,
                }
            }
            PostEvent::QuotePolicyChanged {
                quote_policy: new, ..
            } => {
                if let Post::Live { quote_policy, .. } = self {
                    *quote_policy = new;
                }
            }
            PostEvent::CommentPolicyChanged {
                comment_policy: new,
                ..
            } => {
                if let Post::Live { comment_policy, .. } = self {
                    *comment_policy = new;
                }
            }
            PostEvent::QuoteDetached { quote_author, .. } => {
                if let Post::Live {
                    quote_of,
                    detached_by,
                    ..
                } = self
                {
                    *quote_of = None;
                    *detached_by = Some(quote_author);
                }
            }
            PostEvent::PostDeleted { author, .. } => *self = Post::Deleted { author },
        }
    }
}

/// A quote's judgement, in SPEC's order.
fn judge_quote(quote: QuoteJudged) -> Result<(), PostError> {
    if quote.unreadable {
        Err(PostError::QuotedNotFound)
    } else if quote.blocked {
        Err(PostError::Blocked)
    } else if quote.not_quotable {
        Err(PostError::NotQuotable)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
