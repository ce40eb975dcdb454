//! A post's comments (seed 002's comment system): the `thread` aggregate, one stream per post
//! (`thread` / the post's id), so a comment, its replies, deletions and pins are decided
//! together: a reply's parent is checked against the thread as it stands, and a deletion knows
//! whether the comment still has replies.
//!
//! What the thread cannot know is decided elsewhere and handed in: the post's author (read from
//! the post's stream before the command; it never changes) and whether a block stands between
//! the commenter and that author (the pair's stream, locked in the command's transaction, so a
//! block and a comment never pass each other).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::UserId;
use crate::post::{PostContent, PostId};

/// A comment's id: its post and its number in the post's thread (1, 2, ...), written
/// `"{post id}.{n}"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CommentId {
    /// The post commented on.
    pub post: PostId,
    /// Its number in the thread.
    pub n: u32,
}

/// A string that is not a comment id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a comment id")]
pub struct BadCommentId;

impl FromStr for CommentId {
    type Err = BadCommentId;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (post, n) = s.split_once('.').ok_or(BadCommentId)?;
        let post: PostId = post.parse().map_err(|_| BadCommentId)?;
        if n.is_empty() || n.starts_with('0') || !n.bytes().all(|b| b.is_ascii_digit()) {
            return Err(BadCommentId);
        }
        let n = n.parse().map_err(|_| BadCommentId)?;
        Ok(Self { post, n })
    }
}

impl fmt::Display for CommentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.post, self.n)
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for CommentId {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(r"^[0-9a-fA-F-]{36}\.[1-9][0-9]{0,9}$"))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for CommentId {}

impl Serialize for CommentId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CommentId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A command on a post's thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThreadCommand {
    /// Add a comment, or a reply to `parent`.
    Add {
        /// The post.
        post_id: PostId,
        /// Who writes it.
        author: UserId,
        /// The post's author.
        post_author: UserId,
        /// The comment replied to (a live comment of this post), if any.
        parent: Option<u32>,
        /// Who wrote the comment replied to (read before the command, to lock the pair: a
        /// block between the two refuses the reply); checked against the thread.
        parent_author: Option<UserId>,
        /// Its text (the rules of a post's).
        content: PostContent,
        /// When it was written.
        created_at: DateTime<Utc>,
    },
    /// Delete a comment: its author or the post's author.
    Delete {
        /// The comment.
        comment: CommentId,
        /// Who asks.
        actor: UserId,
        /// The post's author.
        post_author: UserId,
        /// Who wrote the comment (read before the command, so the store refuses it when that
        /// user is erased); checked against the thread.
        comment_author: UserId,
    },
    /// Pin or unpin a comment: the post's author only.
    Pin {
        /// The comment.
        comment: CommentId,
        /// Who asks.
        actor: UserId,
        /// The post's author.
        post_author: UserId,
        /// Who wrote the comment, as for a deletion.
        comment_author: UserId,
        /// Pinned or not.
        pinned: bool,
    },
}

impl ThreadCommand {
    /// The post whose thread the command acts on.
    pub fn post_id(&self) -> PostId {
        match self {
            Self::Add { post_id, .. } => *post_id,
            Self::Delete { comment, .. } | Self::Pin { comment, .. } => comment.post,
        }
    }

    /// Who issued it.
    pub fn actor(&self) -> UserId {
        match self {
            Self::Add { author, .. } => *author,
            Self::Delete { actor, .. } | Self::Pin { actor, .. } => *actor,
        }
    }

    /// The post's author.
    pub fn post_author(&self) -> UserId {
        match self {
            Self::Add { post_author, .. }
            | Self::Delete { post_author, .. }
            | Self::Pin { post_author, .. } => *post_author,
        }
    }

    /// Every user the command names: who asks, the post's author, and the author of the comment
    /// it acts on or replies to.
    pub fn users(&self) -> Vec<UserId> {
        let mut users = vec![self.actor(), self.post_author()];
        match self {
            Self::Add { parent_author, .. } => users.extend(*parent_author),
            Self::Delete { comment_author, .. } | Self::Pin { comment_author, .. } => {
                users.push(*comment_author)
            }
        }
        users
    }

    /// The users a block with whom refuses the command: the post's author, and for a reply
    /// the author of the comment replied to. Deleting and pinning interact with nobody.
    pub fn interacts_with(&self) -> Vec<UserId> {
        match self {
            Self::Add {
                post_author,
                parent_author,
                ..
            } => std::iter::once(*post_author)
                .chain(*parent_author)
                .collect(),
            Self::Delete { .. } | Self::Pin { .. } => Vec::new(),
        }
    }

    /// The verb, as logs and idempotency fingerprints name it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Add { .. } => "comment",
            Self::Delete { .. } => CommentAct::Delete.name(),
            Self::Pin { pinned, .. } => CommentAct::Pin(*pinned).name(),
        }
    }
}

/// What is done to a comment that exists: deleted, or pinned (`true`) or unpinned. Named
/// before the comment is found (a command is keyed first), made a command once it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommentAct {
    /// Delete it: its author or the post's author.
    Delete,
    /// Pin or unpin it: the post's author only.
    Pin(bool),
}

impl CommentAct {
    /// The verb, as [`ThreadCommand::name`] names the command.
    pub fn name(self) -> &'static str {
        match self {
            Self::Delete => "delete_comment",
            Self::Pin(true) => "pin_comment",
            Self::Pin(false) => "unpin_comment",
        }
    }

    /// The command: `actor` acts on `comment`, written by `comment_author` under a post by
    /// `post_author`.
    pub fn command(
        self,
        comment: CommentId,
        actor: UserId,
        post_author: UserId,
        comment_author: UserId,
    ) -> ThreadCommand {
        match self {
            Self::Delete => ThreadCommand::Delete {
                comment,
                actor,
                post_author,
                comment_author,
            },
            Self::Pin(pinned) => ThreadCommand::Pin {
                comment,
                actor,
                post_author,
                comment_author,
                pinned,
            },
        }
    }
}

/// The facts a thread holds. `CommentAdded` is stored as version 2 (its content sealed by
/// the store); version 1 (plain content) stays readable.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ThreadEvent {
    /// `author` commented on the post (a reply when `parent` is set).
    CommentAdded {
        /// The post.
        post_id: PostId,
        /// The comment's number in the thread.
        comment: u32,
        /// Who wrote it.
        author: UserId,
        /// The post's author.
        post_author: UserId,
        /// The comment replied to.
        parent: Option<u32>,
        /// Its text: always set when decided; `None` when read back without it (the author's
        /// key was destroyed by an erasure, or a sealed payload was not opened).
        #[serde(default)]
        content: Option<PostContent>,
        /// When it was written.
        created_at: DateTime<Utc>,
    },
    /// The comment was deleted, by its author or the post's. With replies it stays as a
    /// tombstone (no content); without, it disappears.
    CommentDeleted {
        /// The post.
        post_id: PostId,
        /// The comment.
        comment: u32,
        /// Who wrote it.
        author: UserId,
        /// Who deleted it.
        by: UserId,
    },
    /// The post's author pinned the comment.
    CommentPinned {
        /// The post.
        post_id: PostId,
        /// The comment.
        comment: u32,
    },
    /// The post's author unpinned it.
    CommentUnpinned {
        /// The post.
        post_id: PostId,
        /// The comment.
        comment: u32,
    },
}

impl ThreadEvent {
    /// The event's type name, as stored in the log's `event_type` column.
    pub fn event_type(&self) -> &'static str {
        match self {
            Self::CommentAdded { .. } => "CommentAdded",
            Self::CommentDeleted { .. } => "CommentDeleted",
            Self::CommentPinned { .. } => "CommentPinned",
            Self::CommentUnpinned { .. } => "CommentUnpinned",
        }
    }

    /// The schema version of the event's payload.
    pub fn event_version(&self) -> &'static str {
        "1"
    }

    /// The comment the event is about.
    pub fn comment(&self) -> CommentId {
        let (post, n) = match self {
            Self::CommentAdded {
                post_id, comment, ..
            }
            | Self::CommentDeleted {
                post_id, comment, ..
            }
            | Self::CommentPinned { post_id, comment }
            | Self::CommentUnpinned { post_id, comment } => (*post_id, *comment),
        };
        CommentId { post, n }
    }
}

/// Why a thread command was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ThreadError {
    /// A block stands between the actor and the post's author, either way.
    #[error("a block stands between you and the post's author")]
    Blocked,
    /// The comment (or the parent replied to) does not exist or was deleted.
    #[error("no such comment")]
    NotFound,
    /// Only the comment's author or the post's may delete it; only the post's may pin.
    #[error("only the comment's author or the post's author may do this")]
    NotAllowed,
    /// The post's comment policy (issue 47) does not let the actor comment or reply.
    #[error("the post's author limits who may comment on it")]
    CommentsRestricted,
}

/// What a thread decision needs beyond the thread.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadServices {
    /// Whether the actor blocks the post's author or is blocked by them.
    pub blocked: bool,
    /// Whether the actor may not read the post ([`crate::privacy::may_read`]): to them it
    /// does not exist.
    pub unreadable: bool,
    /// Whether the post's comment policy, as it stands, keeps the actor out (issue 47).
    pub restricted: bool,
}

/// One comment as the thread knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommentState {
    /// Who wrote it.
    pub author: UserId,
    /// The comment replied to.
    pub parent: Option<u32>,
    /// Deleted.
    pub deleted: bool,
    /// Pinned by the post's author.
    pub pinned: bool,
}

/// A post's comments, folded from its thread.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thread {
    /// Comment `n` at index `n - 1`.
    comments: Vec<CommentState>,
}

impl Thread {
    /// The aggregate's type, as the event store names its streams.
    pub const TYPE: &'static str = "thread";

    /// How many comments the thread has had (deleted ones included): the last one's number.
    pub fn len(&self) -> usize {
        self.comments.len()
    }

    /// Whether nobody has commented yet.
    pub fn is_empty(&self) -> bool {
        self.comments.is_empty()
    }

    /// Comment `n`, deleted or not.
    pub fn comment(&self, n: u32) -> Option<&CommentState> {
        self.comments.get((n as usize).checked_sub(1)?)
    }

    fn live(&self, n: u32) -> Result<&CommentState, ThreadError> {
        self.comment(n)
            .filter(|c| !c.deleted)
            .ok_or(ThreadError::NotFound)
    }

    /// Live comment `n`, if `author` wrote it (the command read its author before it was
    /// decided: a stale read names nothing).
    fn live_by(&self, n: u32, author: UserId) -> Result<&CommentState, ThreadError> {
        self.live(n).and_then(|c| {
            (c.author == author)
                .then_some(c)
                .ok_or(ThreadError::NotFound)
        })
    }

    /// A new comment (replying to `parent`, numbered, by its author as the caller found it),
    /// judged in SPEC's order: not found (the post unreadable, or the parent not live by that
    /// author), blocked, then restricted by the post's comment policy (issue 47).
    fn judge_add(
        &self,
        parent: Option<(u32, Option<UserId>)>,
        services: ThreadServices,
    ) -> Result<(), ThreadError> {
        if services.unreadable {
            return Err(ThreadError::NotFound);
        }
        if let Some((parent, parent_author)) = parent {
            let replied = self.live(parent)?;
            if Some(replied.author) != parent_author {
                return Err(ThreadError::NotFound);
            }
        }
        if services.blocked {
            return Err(ThreadError::Blocked);
        }
        if services.restricted {
            return Err(ThreadError::CommentsRestricted);
        }
        Ok(())
    }

    /// Decides a command: the events it appends (none when nothing changes), or why it is
    /// refused.
    pub fn decide(
        &self,
        command: ThreadCommand,
        services: ThreadServices,
    ) -> Result<Vec<ThreadEvent>, ThreadError> {
        Ok(match command {
            ThreadCommand::Add {
                post_id,
                author,
                post_author,
                parent,
                parent_author,
                content,
                created_at,
            } => {
                self.judge_add(parent.map(|n| (n, parent_author)), services)?;
                vec![ThreadEvent::CommentAdded {
                    post_id,
                    comment: self.comments.len() as u32 + 1,
                    author,
                    post_author,
                    parent,
                    content: Some(content),
                    created_at,
                }]
            }
            ThreadCommand::Delete {
                comment,
                actor,
                post_author,
                comment_author,
            } => {
                let state = self.live_by(comment.n, comment_author)?;
                if actor != state.author && actor != post_author {
                    return Err(ThreadError::NotAllowed);
                }
                vec![ThreadEvent::CommentDeleted {
                    post_id: comment.post,
                    comment: comment.n,
                    author: state.author,
                    by: actor,
                }]
            }
            ThreadCommand::Pin {
                comment,
                actor,
                post_author,
                comment_author,
                pinned,
            } => {
                let state = self.live_by(comment.n, comment_author)?;
                if actor != post_author {
                    return Err(ThreadError::NotAllowed);
                }
                let (post_id, n) = (comment.post, comment.n);
                match (state.pinned, pinned) {
                    (false, true) => vec![ThreadEvent::CommentPinned {
                        post_id,
                        comment: n,
                    }],
                    (true, false) => vec![ThreadEvent::CommentUnpinned {
                        post_id,
                        comment: n,
                    }],
                    _ => vec![],
                }
            }
        })
    }

    /// Folds one event into the state.
    pub fn apply(&mut self, event: ThreadEvent) {
        match event {
            ThreadEvent::CommentAdded { author, parent, .. } => self.comments.push(CommentState {
                author,
                parent,
                deleted: false,
                pinned: false,
            }),
            ThreadEvent::CommentDeleted { comment, .. } => {
                if let Some(c) = self.comments.get_mut(comment as usize - 1) {
                    c.deleted = true;
                    c.pinned = false;
                }
            }
            ThreadEvent::CommentPinned { comment, .. }
            | ThreadEvent::CommentUnpinned { comment, .. } => {
                let pinned = matches!(event, ThreadEvent::CommentPinned { .. });
                if let Some(c) = self.comments.get_mut(comment as usize - 1) {
                    c.pinned = pinned;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(id: i64) -> UserId {
        UserId::try_from(id).unwrap()
    }

    fn post() -> PostId {
        "0190f5a2-7b6c-7def-8123-456789abcdef".parse().unwrap()
    }

    fn add(author: i64, parent: Option<u32>) -> ThreadCommand {
        ThreadCommand::Add {
            post_id: post(),
            author: u(author),
            post_author: u(1),
            parent,
            // Comments 1 and 3 are by 2 and 5 in these histories; 2 by 3.
            parent_author: parent.map(|n| u([2, 3, 5].get(n as usize - 1).copied().unwrap_or(9))),
            content: PostContent::try_from("hi".to_owned()).unwrap(),
            created_at: DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
        }
    }

    fn run(thread: &mut Thread, command: ThreadCommand) -> Result<usize, ThreadError> {
        let events = thread.decide(command, ThreadServices::default())?;
        let n = events.len();
        for event in events {
            thread.apply(event);
        }
        Ok(n)
    }

    fn comment(n: u32) -> CommentId {
        CommentId { post: post(), n }
    }

    #[test]
    fn comments_replies_deletions_and_pins_follow_the_rules() {
        let mut t = Thread::default();
        assert_eq!(run(&mut t, add(2, None)), Ok(1));
        assert_eq!(run(&mut t, add(3, Some(1))), Ok(1));
        assert_eq!(run(&mut t, add(3, Some(9))), Err(ThreadError::NotFound));
        let blocked = ThreadServices {
            blocked: true,
            restricted: true,
            ..ThreadServices::default()
        };
        assert_eq!(t.decide(add(4, None), blocked), Err(ThreadError::Blocked));
        // Issue 47: a comment or a reply the post's policy keeps out.
        let restricted = ThreadServices {
            restricted: true,
            ..ThreadServices::default()
        };
        for parent in [None, Some(1)] {
            let refused = t.decide(add(4, parent), restricted);
            assert_eq!(refused, Err(ThreadError::CommentsRestricted));
        }
        // Issue 26: a post the actor may not read does not exist for them.
        let unreadable = ThreadServices {
            blocked: true,
            unreadable: true,
            restricted: true,
        };
        assert_eq!(
            t.decide(add(4, Some(1)), unreadable),
            Err(ThreadError::NotFound)
        );
        // Deletion: the comment's author or the post's, once.
        let delete = |actor, n: u32| ThreadCommand::Delete {
            comment: comment(n),
            actor: u(actor),
            post_author: u(1),
            comment_author: u([2, 3, 5][n as usize - 1]),
        };
        assert_eq!(run(&mut t, delete(3, 1)), Err(ThreadError::NotAllowed));
        assert_eq!(run(&mut t, delete(2, 1)), Ok(1));
        assert_eq!(run(&mut t, delete(2, 1)), Err(ThreadError::NotFound));
        assert_eq!(
            run(&mut t, add(3, Some(1))),
            Err(ThreadError::NotFound),
            "no reply to a deleted comment"
        );
        assert_eq!(run(&mut t, delete(1, 2)), Ok(1), "the post's author");
        // Pins: the post's author only; again is no change.
        run(&mut t, add(5, None)).unwrap();
        let pin = |actor, pinned| ThreadCommand::Pin {
            comment: comment(3),
            actor: u(actor),
            post_author: u(1),
            comment_author: u(5),
            pinned,
        };
        let stale = ThreadCommand::Pin {
            comment: comment(3),
            actor: u(1),
            post_author: u(1),
            comment_author: u(4),
            pinned: true,
        };
        assert_eq!(
            run(&mut t, stale),
            Err(ThreadError::NotFound),
            "a stale author"
        );
        assert_eq!(run(&mut t, pin(5, true)), Err(ThreadError::NotAllowed));
        assert_eq!(run(&mut t, pin(1, true)), Ok(1));
        assert_eq!(run(&mut t, pin(1, true)), Ok(0));
        assert_eq!(run(&mut t, pin(1, false)), Ok(1));
        assert!(!t.comment(3).unwrap().pinned);
    }

    #[test]
    fn comment_ids_read_back_what_they_write() {
        let id = comment(12);
        assert_eq!(id.to_string().parse::<CommentId>(), Ok(id));
        for bad in [
            "",
            "x.1",
            "0190f5a2-7b6c-7def-8123-456789abcdef",
            "0190f5a2-7b6c-7def-8123-456789abcdef.0",
            "0190f5a2-7b6c-7def-8123-456789abcdef.01",
            "0190f5a2-7b6c-7def-8123-456789abcdef.-1",
            "0190f5a2-7b6c-7def-8123-456789abcdef.99999999999",
        ] {
            assert_eq!(bad.parse::<CommentId>(), Err(BadCommentId), "{bad}");
        }
    }
}
