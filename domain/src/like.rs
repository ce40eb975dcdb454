//! Likes (seed 002's like system): one stream per user and liked item (`like` /
//! `"{target}:{user}"`), so likes and unlikes of one item by many users never contend, and a
//! like count is a fold of independent streams that cannot drift.
//!
//! Whether a block stands between the liker and the item's author comes from the pair's stream,
//! locked in the command's transaction (rule of seed 002: a block either way refuses every
//! interaction, liking and unliking included).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::ids::UserId;
use crate::post::PostId;
use crate::thread::CommentId;

/// What can be liked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LikeTarget {
    /// A post.
    Post(PostId),
    /// A comment.
    Comment(CommentId),
}

impl LikeTarget {
    /// The post the target is, or is on.
    pub fn post(self) -> PostId {
        match self {
            Self::Post(post) => post,
            Self::Comment(comment) => comment.post,
        }
    }
}

/// `"post:{id}"` or `"comment:{id}"`: how read models and events name a target.
impl fmt::Display for LikeTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Post(post) => write!(f, "post:{post}"),
            Self::Comment(comment) => write!(f, "comment:{comment}"),
        }
    }
}

/// A string that is not a like target.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a like target")]
pub struct BadLikeTarget;

impl FromStr for LikeTarget {
    type Err = BadLikeTarget;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once(':') {
            Some(("post", id)) => id.parse().map(Self::Post).map_err(|_| BadLikeTarget),
            Some(("comment", id)) => id.parse().map(Self::Comment).map_err(|_| BadLikeTarget),
            _ => Err(BadLikeTarget),
        }
    }
}

impl Serialize for LikeTarget {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for LikeTarget {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// A like or an unlike.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LikeCommand {
    /// Who likes.
    pub user: UserId,
    /// What.
    pub target: LikeTarget,
    /// Who wrote it.
    pub author: UserId,
    /// Like (`true`) or unlike.
    pub like: bool,
}

impl LikeCommand {
    /// The stream of the user's like of the target.
    pub fn stream(&self) -> String {
        format!("{}:{}", self.target, self.user)
    }

    /// The verb, as logs and idempotency fingerprints name it.
    pub fn name(&self) -> &'static str {
        Self::name_of(self.like)
    }

    /// The name of a like (`true`) or an unlike, before the command is made.
    pub fn name_of(like: bool) -> &'static str {
        match like {
            true => "like",
            false => "unlike",
        }
    }
}

/// The facts a like stream holds. Version 1 of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LikeEvent {
    /// `user` liked `target`, written by `author`.
    Liked {
        /// Who.
        user: UserId,
        /// What: `"post:{id}"` or `"comment:{id}"`.
        target: LikeTarget,
        /// Its author.
        author: UserId,
    },
    /// `user` took their like of `target` back.
    Unliked {
        /// Who.
        user: UserId,
        /// What.
        target: LikeTarget,
        /// Its author.
        author: UserId,
    },
}

impl LikeEvent {
    /// The event's type name, as stored in the log's `event_type` column.
    pub fn event_type(&self) -> &'static str {
        match self {
            Self::Liked { .. } => "Liked",
            Self::Unliked { .. } => "Unliked",
        }
    }

    /// The schema version of the event's payload.
    pub fn event_version(&self) -> &'static str {
        "1"
    }

    /// `(user, target, author, liked)`: who, what, whose, and whether it is a like (else its
    /// end). Every fold of likes reads them so.
    pub fn parts(self) -> (UserId, LikeTarget, UserId, bool) {
        match self {
            Self::Liked {
                user,
                target,
                author,
            } => (user, target, author, true),
            Self::Unliked {
                user,
                target,
                author,
            } => (user, target, author, false),
        }
    }
}

/// Why a like or unlike was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LikeError {
    /// A block stands between the user and the author, either way.
    #[error("a block stands between you and the author")]
    Blocked,
    /// The user may not read the post (issue 26): to them it does not exist.
    #[error("no such post")]
    NotFound,
}

/// What a like decision needs beyond the stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LikeServices {
    /// Whether the user blocks the author or is blocked by them.
    pub blocked: bool,
    /// Whether the user may not read the post liked, or the post of the comment liked
    /// ([`crate::privacy::may_read`]), or the comment liked is deleted.
    pub unreadable: bool,
}

/// Whether the user likes the target, folded from the stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Like {
    /// Liked now.
    pub liked: bool,
}

impl Like {
    /// The aggregate's type, as the event store names its streams.
    pub const TYPE: &'static str = "like";

    /// Decides a like or an unlike: the event (none when it changes nothing), or a refusal.
    pub fn decide(
        &self,
        command: LikeCommand,
        services: LikeServices,
    ) -> Result<Vec<LikeEvent>, LikeError> {
        // What the user may not read does not exist for them, block or none.
        if services.unreadable {
            return Err(LikeError::NotFound);
        }
        if services.blocked {
            return Err(LikeError::Blocked);
        }
        let LikeCommand {
            user,
            target,
            author,
            like,
        } = command;
        Ok(match (self.liked, like) {
            (false, true) => vec![LikeEvent::Liked {
                user,
                target,
                author,
            }],
            (true, false) => vec![LikeEvent::Unliked {
                user,
                target,
                author,
            }],
            _ => vec![],
        })
    }

    /// Folds one event into the state.
    pub fn apply(&mut self, event: LikeEvent) {
        self.liked = matches!(event, LikeEvent::Liked { .. });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> LikeTarget {
        LikeTarget::Comment("0190f5a2-7b6c-7def-8123-456789abcdef.3".parse().unwrap())
    }

    #[test]
    fn likes_toggle_repeat_as_no_change_and_stop_at_a_block() {
        let user = UserId::try_from(2).unwrap();
        let author = UserId::try_from(1).unwrap();
        let command = |like| LikeCommand {
            user,
            target: target(),
            author,
            like,
        };
        let mut state = Like::default();
        let mut appended = Vec::new();
        for like in [false, true, true, false] {
            let events = state
                .decide(command(like), LikeServices::default())
                .unwrap();
            appended.push(events.len());
            for event in events {
                state.apply(event);
            }
        }
        assert_eq!(appended, vec![0, 1, 0, 1]);
        let blocked = LikeServices {
            blocked: true,
            unreadable: false,
        };
        assert_eq!(
            state.decide(command(true), blocked),
            Err(LikeError::Blocked)
        );
        // Issue 26: a post the user may not read does not exist for them, block or none.
        for blocked in [false, true] {
            let unreadable = LikeServices {
                blocked,
                unreadable: true,
            };
            assert_eq!(
                state.decide(command(false), unreadable),
                Err(LikeError::NotFound)
            );
        }
        assert_eq!(
            command(true).stream(),
            "comment:0190f5a2-7b6c-7def-8123-456789abcdef.3:2"
        );
        let event = LikeEvent::Liked {
            user,
            target: target(),
            author,
        };
        assert_eq!(
            serde_json::to_value(event).unwrap(),
            serde_json::json!({"Liked": {"user": 2, "target": "comment:0190f5a2-7b6c-7def-8123-456789abcdef.3", "author": 1}})
        );
        assert_eq!("post:x".parse::<LikeTarget>(), Err(BadLikeTarget));
    }
}
