//! Reposts (issue 44): a user brings a post into their followers' feeds. One stream per
//! (post, user), `repost:{post}:{user}`, holds the user's reposts of the post and their ends,
//! as a like stream holds likes.

use serde::{Deserialize, Serialize};

use crate::ids::UserId;
use crate::post::PostId;

/// A repost or an unrepost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RepostCommand {
    /// Who reposts.
    pub user: UserId,
    /// What.
    pub post: PostId,
    /// Who wrote it.
    pub author: UserId,
    /// Repost (`true`) or unrepost.
    pub repost: bool,
}

impl RepostCommand {
    /// The stream of the user's reposts of the post.
    pub fn stream(&self) -> String {
        format!("{}:{}", self.post, self.user)
    }

    /// The verb, as logs and idempotency fingerprints name it.
    pub fn name(&self) -> &'static str {
        Self::name_of(self.repost)
    }

    /// The name of a repost (`true`) or an unrepost, before the command is made.
    pub fn name_of(repost: bool) -> &'static str {
        match repost {
            true => "repost",
            false => "unrepost",
        }
    }
}

/// The facts a repost stream holds. Version 1 of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RepostEvent {
    /// `user` reposted `post`, written by `author`.
    Reposted {
        /// Who.
        user: UserId,
        /// What.
        post: PostId,
        /// Its author.
        author: UserId,
    },
    /// `user` took their repost of `post` back.
    Unreposted {
        /// Who.
        user: UserId,
        /// What.
        post: PostId,
        /// Its author.
        author: UserId,
    },
}

impl RepostEvent {
    /// The event's type name, as stored in the log's `event_type` column.
    pub fn event_type(&self) -> &'static str {
        match self {
            Self::Reposted { .. } => "Reposted",
            Self::Unreposted { .. } => "Unreposted",
        }
    }

    /// The schema version of the event's payload.
    pub fn event_version(&self) -> &'static str {
        "1"
    }

    /// `(user, post, author, reposted)`: who, what, whose, and whether it is a repost (else
    /// its end). Every fold of reposts reads them so.
    pub fn parts(self) -> (UserId, PostId, UserId, bool) {
        match self {
            Self::Reposted { user, post, author } => (user, post, author, true),
            Self::Unreposted { user, post, author } => (user, post, author, false),
        }
    }
}

/// Why a repost or unrepost was refused, in the order they are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RepostError {
    /// The user may not read the post (issue 26): to them it does not exist.
    #[error("no such post")]
    NotFound,
    /// A block stands between the user and the author, either way.
    #[error("a block stands between you and the author")]
    Blocked,
    /// Only a `public` or `unlisted` post of an author who is not locked can be reposted.
    #[error("this post cannot be reposted")]
    NotRepostable,
}

/// What a repost decision needs beyond the stream, read under the pair's lock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RepostServices {
    /// Whether the user may not read the post ([`crate::privacy::may_read`]).
    pub unreadable: bool,
    /// Whether the user blocks the author or is blocked by them.
    pub blocked: bool,
    /// Whether the post is `followers` only or its author locked.
    pub not_repostable: bool,
}

/// Whether the user reposts the post, folded from the stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repost {
    /// Reposted now.
    pub reposted: bool,
}

impl Repost {
    /// The aggregate's type, as the event store names its streams.
    pub const TYPE: &'static str = "repost";

    /// Decides a repost or an unrepost: the event (none when it changes nothing), or a
    /// refusal, judged as SPEC orders them, an unrepost as a repost (as likes are), but that
    /// a post no longer repostable (made `followers` only, its author locked since) can still
    /// be unreposted.
    pub fn decide(
        &self,
        command: RepostCommand,
        services: RepostServices,
    ) -> Result<Vec<RepostEvent>, RepostError> {
        if services.unreadable {
            return Err(RepostError::NotFound);
        }
        let RepostCommand {
            user,
            post,
            author,
            repost,
        } = command;
        if services.blocked {
            return Err(RepostError::Blocked);
        }
        if repost && services.not_repostable {
            return Err(RepostError::NotRepostable);
        }
        Ok(match (self.reposted, repost) {
            (false, true) => vec![RepostEvent::Reposted { user, post, author }],
            (true, false) => vec![RepostEvent::Unreposted { user, post, author }],
            _ => vec![],
        })
    }

    /// Folds one event into the state.
    pub fn apply(&mut self, event: RepostEvent) {
        self.reposted = matches!(event, RepostEvent::Reposted { .. });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(repost: bool) -> RepostCommand {
        RepostCommand {
            user: UserId::try_from(2).unwrap(),
            post: "0190f5a2-7b6c-7def-8123-456789abcdef".parse().unwrap(),
            author: UserId::try_from(1).unwrap(),
            repost,
        }
    }

    #[test]
    fn reposts_toggle_and_repeats_change_nothing() {
        let mut state = Repost::default();
        let mut appended = Vec::new();
        for repost in [false, true, true, false] {
            let events = state
                .decide(command(repost), RepostServices::default())
                .unwrap();
            appended.push(events.len());
            for event in events {
                state.apply(event);
            }
        }
        assert_eq!(appended, vec![0, 1, 0, 1]);
        assert_eq!(
            command(true).stream(),
            "0190f5a2-7b6c-7def-8123-456789abcdef:2"
        );
        let event = command(true);
        let event = RepostEvent::Reposted {
            user: event.user,
            post: event.post,
            author: event.author,
        };
        assert_eq!(
            serde_json::to_value(event).unwrap(),
            serde_json::json!({"Reposted": {"user": 2, "post": "0190f5a2-7b6c-7def-8123-456789abcdef", "author": 1}})
        );
    }

    #[test]
    fn refusals_come_in_the_spec_order() {
        let state = Repost::default();
        let all = RepostServices {
            unreadable: true,
            blocked: true,
            not_repostable: true,
        };
        assert_eq!(state.decide(command(true), all), Err(RepostError::NotFound));
        let all = RepostServices {
            unreadable: false,
            ..all
        };
        assert_eq!(state.decide(command(true), all), Err(RepostError::Blocked));
        let only = RepostServices {
            not_repostable: true,
            ..RepostServices::default()
        };
        assert_eq!(
            state.decide(command(true), only),
            Err(RepostError::NotRepostable)
        );
        // A repost already made can be taken back once its author locks, not across a block.
        let reposted = Repost { reposted: true };
        assert_eq!(
            reposted.decide(command(false), only).map(|e| e.len()),
            Ok(1)
        );
        let blocked = RepostServices {
            blocked: true,
            ..RepostServices::default()
        };
        assert_eq!(
            reposted.decide(command(false), blocked),
            Err(RepostError::Blocked)
        );
    }
}
