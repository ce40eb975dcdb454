//! Every event the log holds, as one type (issue 43): the store decodes each stored event into
//! it once, and every reader matches it, so the compiler names each place a new event must be
//! handled. Only the store's decoder looks at a stream's type or an event's name as text.

use crate::{
    Account, AccountEvent, Bookmark, BookmarkEvent, FilterEvent, Like, LikeEvent, ListEvent, Post,
    PostEvent, RelationEvent, RelationPair, Repost, RepostEvent, Thread, ThreadEvent, UserFilters,
    UserId, UserLists,
};

/// An event of any stream of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEvent {
    /// Of a relation pair's stream.
    Relation(RelationEvent),
    /// Of a post's stream.
    Post(PostEvent),
    /// Of a post's comment thread.
    Thread(ThreadEvent),
    /// Of a like's stream (a user and what they like).
    Like(LikeEvent),
    /// Of a repost's stream (a user and a post they repost; issue 44).
    Repost(RepostEvent),
    /// Of a bookmark's stream (a user and a post they bookmark; issue 46).
    Bookmark(BookmarkEvent),
    /// Of an account's stream (tokens, bans, settings, erasure).
    Account(AccountEvent),
    /// Of an owner's lists stream (issue 46).
    Lists(ListEvent),
    /// Of a user's filters stream (issue 47).
    Filters(FilterEvent),
}

/// A stream type the log does not hold, or a payload that does not decode as its type.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// No aggregate of the log has this type.
    #[error("unknown stream type {0:?}")]
    StreamType(String),
    /// The payload does not decode as an event of its stream's type.
    #[error("{0}")]
    Payload(#[from] serde_json::Error),
    /// The payload decodes, but as another event than the row names.
    #[error("the payload is a {payload}, the row says {row}")]
    Mismatch {
        /// What the row's `event_type` says.
        row: String,
        /// What the payload holds.
        payload: &'static str,
    },
}

impl LogEvent {
    /// Decodes a stored payload (cqrs-es's externally tagged JSON) of a stream of
    /// `stream_type`, checking it is the `event_type` its row names: the one place the log's
    /// type names are read as text.
    pub fn decode(stream_type: &str, event_type: &str, payload: &str) -> Result<Self, DecodeError> {
        let event = match stream_type {
            RelationPair::TYPE => Self::Relation(serde_json::from_str(payload)?),
            Post::TYPE => Self::Post(serde_json::from_str(payload)?),
            Thread::TYPE => Self::Thread(serde_json::from_str(payload)?),
            Like::TYPE => Self::Like(serde_json::from_str(payload)?),
            Repost::TYPE => Self::Repost(serde_json::from_str(payload)?),
            Bookmark::TYPE => Self::Bookmark(serde_json::from_str(payload)?),
            Account::TYPE => Self::Account(serde_json::from_str(payload)?),
            UserLists::TYPE => Self::Lists(serde_json::from_str(payload)?),
            UserFilters::TYPE => Self::Filters(serde_json::from_str(payload)?),
            other => return Err(DecodeError::StreamType(other.to_owned())),
        };
        match event.event_type() == event_type {
            true => Ok(event),
            false => Err(DecodeError::Mismatch {
                row: event_type.to_owned(),
                payload: event.event_type(),
            }),
        }
    }

    /// The type of the stream the event belongs to, as the log names it.
    pub fn stream_type(&self) -> &'static str {
        match self {
            Self::Relation(_) => RelationPair::TYPE,
            Self::Post(_) => Post::TYPE,
            Self::Thread(_) => Thread::TYPE,
            Self::Like(_) => Like::TYPE,
            Self::Repost(_) => Repost::TYPE,
            Self::Bookmark(_) => Bookmark::TYPE,
            Self::Account(_) => Account::TYPE,
            Self::Lists(_) => UserLists::TYPE,
            Self::Filters(_) => UserFilters::TYPE,
        }
    }

    /// The event's name, as the log's `event_type` column holds it.
    pub fn event_type(&self) -> &'static str {
        match self {
            Self::Relation(e) => e.event_type(),
            Self::Post(e) => e.event_type(),
            Self::Thread(e) => e.event_type(),
            Self::Like(e) => e.event_type(),
            Self::Repost(e) => e.event_type(),
            Self::Bookmark(e) => e.event_type(),
            Self::Account(e) => e.event_type(),
            Self::Lists(e) => e.event_type(),
            Self::Filters(e) => e.event_type(),
        }
    }

    /// The user the event erases, if it is a `UserErased` (every reader folds it set-based,
    /// at its place in the log: docs/events.md).
    pub fn erased_user(&self) -> Option<UserId> {
        match self {
            Self::Account(AccountEvent::UserErased { user }) => Some(*user),
            Self::Account(
                AccountEvent::TokensRevoked { .. }
                | AccountEvent::UserBanned { .. }
                | AccountEvent::UserUnbanned { .. }
                | AccountEvent::AccountLocked { .. }
                | AccountEvent::AccountUnlocked { .. }
                | AccountEvent::GraphHidden { .. }
                | AccountEvent::GraphShown { .. }
                | AccountEvent::NotificationPolicyChanged { .. },
            )
            | Self::Relation(_)
            | Self::Post(_)
            | Self::Thread(_)
            | Self::Like(_)
            | Self::Repost(_)
            | Self::Bookmark(_)
            | Self::Lists(_)
            | Self::Filters(_) => None,
        }
    }

    /// Puts `content` into the event, if it carries content (a post's or comment's text, or a
    /// filter's phrase: issue 47) (the store's reveal: opened, or
    /// `None` once its author's key is destroyed).
    pub fn set_content(&mut self, content: Option<crate::PostContent>) {
        if let Self::Post(PostEvent::PostPublished { content: slot, .. })
        | Self::Thread(ThreadEvent::CommentAdded { content: slot, .. })
        | Self::Filters(FilterEvent::FilterCreated { content: slot, .. }) = self
        {
            *slot = content;
        }
    }

    /// The event's content, if it carries some and it is at hand.
    pub fn content(&self) -> Option<&crate::PostContent> {
        self.carried().and_then(|(content, _)| content.as_ref())
    }

    /// The author of the event's content, if it carries content.
    pub fn content_author(&self) -> Option<UserId> {
        self.carried().map(|(_, author)| author)
    }

    /// The content slot and its author, of an event that carries content.
    fn carried(&self) -> Option<(&Option<crate::PostContent>, UserId)> {
        match self {
            Self::Post(PostEvent::PostPublished {
                content, author, ..
            })
            | Self::Thread(ThreadEvent::CommentAdded {
                content, author, ..
            })
            | Self::Filters(FilterEvent::FilterCreated {
                content, author, ..
            }) => Some((content, *author)),
            Self::Post(
                PostEvent::PostDeleted { .. }
                | PostEvent::QuotePolicyChanged { .. }
                | PostEvent::CommentPolicyChanged { .. }
                | PostEvent::QuoteDetached { .. },
            )
            | Self::Thread(
                ThreadEvent::CommentDeleted { .. }
                | ThreadEvent::CommentPinned { .. }
                | ThreadEvent::CommentUnpinned { .. },
            )
            | Self::Relation(_)
            | Self::Like(_)
            | Self::Repost(_)
            | Self::Bookmark(_)
            | Self::Account(_)
            | Self::Lists(_)
            | Self::Filters(FilterEvent::FilterDeleted { .. }) => None,
        }
    }

    /// Whether the event carries content.
    pub fn carries_content(&self) -> bool {
        self.content_author().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_payload_decodes_as_its_rows_type_and_nothing_else() {
        let payload = r#"{"Unfollowed": {"follower": 3, "followee": 9, "cause": "block"}}"#;
        let event = LogEvent::decode("relation", "Unfollowed", payload).unwrap();
        assert_eq!(
            (event.stream_type(), event.event_type()),
            ("relation", "Unfollowed")
        );
        assert!(event.erased_user().is_none());
        assert!(matches!(
            LogEvent::decode("relation", "Followed", payload),
            Err(DecodeError::Mismatch { .. })
        ));
        assert!(matches!(
            LogEvent::decode("post", "Unfollowed", payload),
            Err(DecodeError::Payload(_))
        ));
        assert!(matches!(
            LogEvent::decode("list", "Unfollowed", payload),
            Err(DecodeError::StreamType(_))
        ));
        let erased = LogEvent::decode("account", "UserErased", r#"{"UserErased": {"user": 4}}"#);
        assert_eq!(erased.unwrap().erased_user(), UserId::try_from(4).ok());
    }

    #[test]
    fn a_bookmark_decodes_from_its_own_stream_type() {
        let payload = r#"{"Bookmarked": {"user": 2, "post": "0190f5a2-7b6c-7def-8123-456789abcdef", "author": 1}}"#;
        let event = LogEvent::decode("bookmark", "Bookmarked", payload).unwrap();
        assert_eq!(
            (event.stream_type(), event.event_type()),
            ("bookmark", "Bookmarked")
        );
        assert!(event.erased_user().is_none() && !event.carries_content());
        assert!(matches!(
            LogEvent::decode("repost", "Bookmarked", payload),
            Err(DecodeError::Payload(_))
        ));
    }
}
