//! Bookmarks (issue 46): a user keeps a post to read again, privately. One stream per
//! (post, user), `bookmark:{post}:{user}`, holds the user's bookmarks of the post and their
//! ends, as a repost stream holds reposts. Nobody else ever learns of one: no count, no
//! notification.

use serde::{Deserialize, Serialize};

use crate::ids::UserId;
use crate::post::PostId;

/// A bookmark or an unbookmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BookmarkCommand {
    /// Who bookmarks.
    pub user: UserId,
    /// What.
    pub post: PostId,
    /// Who wrote it.
    pub author: UserId,
    /// Bookmark (`true`) or unbookmark.
    pub bookmark: bool,
}

impl BookmarkCommand {
    /// The stream of the user's bookmarks of the post.
    pub fn stream(&self) -> String {
        format!("{}:{}", self.post, self.user)
    }

    /// The verb, as logs and idempotency fingerprints name it.
    pub fn name(&self) -> &'static str {
        Self::name_of(self.bookmark)
    }

    /// The name of a bookmark (`true`) or an unbookmark, before the command is made.
    pub fn name_of(bookmark: bool) -> &'static str {
        match bookmark {
            true => "bookmark",
            false => "unbookmark",
        }
    }
}

/// The facts a bookmark stream holds. Version 1 of each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BookmarkEvent {
    /// `user` bookmarked `post`, written by `author`.
    Bookmarked {
        /// Who.
        user: UserId,
        /// What.
        post: PostId,
        /// Its author.
        author: UserId,
    },
    /// `user` took their bookmark of `post` back.
    Unbookmarked {
        /// Who.
        user: UserId,
        /// What.
        post: PostId,
        /// Its author.
        author: UserId,
    },
}

impl BookmarkEvent {
    /// The event's type name, as stored in the log's `event_type` column.
    pub fn event_type(&self) -> &'static str {
        match self {
            Self::Bookmarked { .. } => "Bookmarked",
            Self::Unbookmarked { .. } => "Unbookmarked",
        }
    }

    /// The schema version of the event's payload.
    pub fn event_version(&self) -> &'static str {
        "1"
    }

    /// `(user, post, author, bookmarked)`: who, what, whose, and whether it is a bookmark
    /// (else its end). Every fold of bookmarks reads them so.
    pub fn parts(self) -> (UserId, PostId, UserId, bool) {
        match self {
            Self::Bookmarked { user, post, author } => (user, post, author, true),
            Self::Unbookmarked { user, post, author } => (user, post, author, false),
        }
    }
}

/// Why a bookmark or unbookmark was refused, in the order they are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BookmarkError {
    /// The user may not read the post (issue 26): to them it does not exist.
    #[error("no such post")]
    NotFound,
    /// A block stands between the user and the author, either way.
    #[error("a block stands between you and the author")]
    Blocked,
}

/// What a bookmark decision needs beyond the stream, read under the pair's lock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BookmarkServices {
    /// Whether the user may not read the post ([`crate::privacy::may_read`]).
    pub unreadable: bool,
    /// Whether the user blocks the author or is blocked by them.
    pub blocked: bool,
}

/// Whether the user bookmarks the post, folded from the stream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bookmark {
    /// Bookmarked now.
    pub bookmarked: bool,
}

impl Bookmark {
    /// The aggregate's type, as the event store names its streams.
    pub const TYPE: &'static str = "bookmark";

    /// Decides a bookmark or an unbookmark: the event (none when it changes nothing), or a
    /// refusal, judged as a like is (SPEC's order: not readable, then a block either way).
    ///
    /// An unbookmark is judged as a bookmark, as an unlike and an unrepost are: of a post the
    /// user may no longer read (deleted, its author erased, a `followers` post of someone
    /// they no longer follow) or across a block, it is refused, and the bookmark stays, left
    /// out of the user's bookmarks while the post is unreadable and back when it is readable
    /// again (an unblock, a new follow). An unbookmark of a post still readable always works.
    pub fn decide(
        &self,
        command: BookmarkCommand,
        services: BookmarkServices,
    ) -> Result<Vec<BookmarkEvent>, BookmarkError> {
        if services.unreadable {
            return Err(BookmarkError::NotFound);
        }
        if services.blocked {
            return Err(BookmarkError::Blocked);
        }
        let BookmarkCommand {
            user,
            post,
            author,
            bookmark,
        } = command;
        Ok(match (self.bookmarked, bookmark) {
            (false, true) => vec![BookmarkEvent::Bookmarked { user, post, author }],
            (true, false) => vec![BookmarkEvent::Unbookmarked { user, post, author }],
            _ => vec![],
        })
    }

    /// Folds one event into the state.
    pub fn apply(&mut self, event: BookmarkEvent) {
        self.bookmarked = matches!(event, BookmarkEvent::Bookmarked { .. });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(bookmark: bool) -> BookmarkCommand {
        BookmarkCommand {
            user: UserId::try_from(2).unwrap(),
            post: "0190f5a2-7b6c-7def-8123-456789abcdef".parse().unwrap(),
            author: UserId::try_from(1).unwrap(),
            bookmark,
        }
    }

    #[test]
    fn bookmarks_toggle_and_repeats_change_nothing() {
        let mut state = Bookmark::default();
        let mut appended = Vec::new();
        for bookmark in [false, true, true, false, false] {
            let events = state
                .decide(command(bookmark), BookmarkServices::default())
                .unwrap();
            appended.push(events.len());
            for event in events {
                state.apply(event);
            }
        }
        assert_eq!(appended, vec![0, 1, 0, 1, 0]);
        assert_eq!(
            command(true).stream(),
            "0190f5a2-7b6c-7def-8123-456789abcdef:2"
        );
        assert_eq!(
            (command(true).name(), command(false).name()),
            ("bookmark", "unbookmark")
        );
        let event = command(true);
        let event = BookmarkEvent::Bookmarked {
            user: event.user,
            post: event.post,
            author: event.author,
        };
        assert_eq!(
            (event.event_type(), event.event_version()),
            ("Bookmarked", "1")
        );
        assert_eq!(
            serde_json::to_value(event).unwrap(),
            serde_json::json!({"Bookmarked": {"user": 2, "post": "0190f5a2-7b6c-7def-8123-456789abcdef", "author": 1}})
        );
    }

    #[test]
    fn refusals_come_in_the_spec_order_for_a_bookmark_and_its_end_alike() {
        let all = BookmarkServices {
            unreadable: true,
            blocked: true,
        };
        let blocked = BookmarkServices {
            unreadable: false,
            ..all
        };
        for state in [
            Bookmark { bookmarked: false },
            Bookmark { bookmarked: true },
        ] {
            for bookmark in [true, false] {
                assert_eq!(
                    state.decide(command(bookmark), all),
                    Err(BookmarkError::NotFound)
                );
                assert_eq!(
                    state.decide(command(bookmark), blocked),
                    Err(BookmarkError::Blocked)
                );
            }
        }
        // A bookmark of a post still readable is taken back.
        let bookmarked = Bookmark { bookmarked: true };
        let events = bookmarked.decide(command(false), BookmarkServices::default());
        assert_eq!(events.map(|e| e.len()), Ok(1));
    }
}
