//! Filters (issue 47): a user's muted words. One stream per user, `filters:{user}`, holds every
//! filter of theirs, so the limit of [`MAX_LIVE`] live filters is decided on one stream. A
//! filter ends by itself at its expiry, with no event: a filter is live at a moment while it is
//! not deleted and its `expires_at` is after that moment, and every reader judges it so.

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::UserId;
use crate::PostContent;

/// The most live filters a user has at once (an expired one no longer counts).
pub const MAX_LIVE: usize = 100;

crate::ids::uuid_id!(
    /// A filter's id: a UUID the service makes (version 7).
    FilterId,
    BadFilterId,
    "a filter id"
);

/// A filter's phrase: 1 to 100 characters (SPEC's rule), none of them NUL. Made only by
/// [`Phrase::parse`] (no deserializer skips its check); the event carries it as content,
/// sealed like a post's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phrase(PostContent);

/// Why a text is not a phrase.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a phrase is 1 to 100 characters, none of them NUL")]
pub struct BadPhrase;

impl Phrase {
    /// The longest phrase, in characters.
    pub const MAX_CHARS: usize = 100;

    /// `text` as a phrase.
    pub fn parse(text: &str) -> Result<Self, BadPhrase> {
        match crate::ids::short_text(text, Self::MAX_CHARS) {
            true => PostContent::try_from(text.to_owned())
                .map(Self)
                .map_err(|_| BadPhrase),
            false => Err(BadPhrase),
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

/// Where a filter applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum FilterContext {
    /// The home feed, `new_count` and the live feed stream.
    Home,
    /// List feeds.
    Lists,
    /// Notifications about a matching post or comment.
    Notifications,
    /// Comments and replies.
    Comments,
}

/// What a filter does to what it matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum FilterAction {
    /// Left out.
    Hide,
    /// Kept, marked with the filters it matches.
    Warn,
}

impl FilterContext {
    /// The name the API, the events and the read models use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Home => "home",
            Self::Lists => "lists",
            Self::Notifications => "notifications",
            Self::Comments => "comments",
        }
    }
}

/// A string that is not a filter's context or action.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a filter's context or action: {0:?}")]
pub struct BadFilterName(String);

impl FromStr for FilterContext {
    type Err = BadFilterName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "home" => Ok(Self::Home),
            "lists" => Ok(Self::Lists),
            "notifications" => Ok(Self::Notifications),
            "comments" => Ok(Self::Comments),
            _ => Err(BadFilterName(s.to_owned())),
        }
    }
}

impl FilterAction {
    /// The name the API, the events and the read models use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hide => "hide",
            Self::Warn => "warn",
        }
    }
}

impl FromStr for FilterAction {
    type Err = BadFilterName;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "hide" => Ok(Self::Hide),
            "warn" => Ok(Self::Warn),
            _ => Err(BadFilterName(s.to_owned())),
        }
    }
}

/// A filter as its user asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterSpec {
    /// What it matches.
    pub phrase: Phrase,
    /// Only at word boundaries.
    pub whole_word: bool,
    /// Where it applies (at least one).
    pub contexts: BTreeSet<FilterContext>,
    /// What it does.
    pub action: FilterAction,
    /// When it ends by itself (none: never).
    pub expires_at: Option<DateTime<Utc>>,
}

/// What a user does to their filters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterCommand {
    /// Makes a filter (its id made by the caller), at `at`.
    Create {
        /// Whose.
        user: UserId,
        /// Its id.
        filter: FilterId,
        /// What it is.
        spec: FilterSpec,
        /// Now.
        at: DateTime<Utc>,
    },
    /// Deletes a live filter, at `at`.
    Delete {
        /// Whose.
        user: UserId,
        /// Which.
        filter: FilterId,
        /// Now.
        at: DateTime<Utc>,
    },
}

impl FilterCommand {
    /// The user: the stream's and the command's actor.
    pub fn user(&self) -> UserId {
        match self {
            Self::Create { user, .. } | Self::Delete { user, .. } => *user,
        }
    }

    /// The verb, as logs and idempotency fingerprints name it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Create { .. } => "create_filter",
            Self::Delete { .. } => "delete_filter",
        }
    }
}

/// The facts a user's filters stream holds. Version 1 of each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum FilterEvent {
    /// `user` made `filter`.
    FilterCreated {
        /// Whose: the phrase's author, whose data key seals it in the log as a post's content
        /// is sealed (the store's content path keys on `author` and `content`).
        author: UserId,
        /// Which.
        filter: FilterId,
        /// The phrase: always set when decided; `None` until revealed, and after it when the
        /// user's key was destroyed by an erasure.
        #[serde(default)]
        content: Option<PostContent>,
        /// Only at word boundaries.
        whole_word: bool,
        /// Where it applies.
        contexts: BTreeSet<FilterContext>,
        /// What it does.
        action: FilterAction,
        /// When it ends by itself (none: never).
        expires_at: Option<DateTime<Utc>>,
        /// When.
        created_at: DateTime<Utc>,
    },
    /// `user` deleted `filter`, live; or, decided with a `FilterCreated` of theirs, `filter`
    /// had ended by itself (its expiry passed) and is cleared away.
    FilterDeleted {
        /// Whose.
        user: UserId,
        /// Which.
        filter: FilterId,
    },
}

impl FilterEvent {
    /// The event's type name, as stored in the log's `event_type` column.
    pub fn event_type(&self) -> &'static str {
        match self {
            Self::FilterCreated { .. } => "FilterCreated",
            Self::FilterDeleted { .. } => "FilterDeleted",
        }
    }

    /// Its payload's version as decided (the store stores `FilterCreated` sealed, as version
    /// 2, as it does content: docs/events.md).
    pub fn event_version(&self) -> &'static str {
        "1"
    }

    /// The filters' user.
    pub fn user(&self) -> UserId {
        match self {
            Self::FilterCreated { author: user, .. } | Self::FilterDeleted { user, .. } => *user,
        }
    }
}

/// Why a filter command was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    /// The user has no such live filter (another user's is none of theirs; an expired one
    /// ended).
    #[error("no such filter")]
    NotFound,
    /// The user has [`MAX_LIVE`] live filters.
    #[error("a user has at most 100 live filters")]
    LimitReached,
    /// A filter with no context, or one that ends before it is made.
    #[error("a filter applies somewhere and ends after it is made")]
    Invalid,
}

/// A user's filters, folded from their stream: each one's expiry (none: never), deleted ones
/// gone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserFilters {
    filters: BTreeMap<FilterId, Option<DateTime<Utc>>>,
}

impl UserFilters {
    /// The aggregate's type, as the event store names its streams.
    pub const TYPE: &'static str = "filters";

    /// Whether `filter` is live at `at`.
    pub fn live(&self, filter: FilterId, at: DateTime<Utc>) -> bool {
        self.filters
            .get(&filter)
            .is_some_and(|expires| expires.is_none_or(|e| e > at))
    }

    /// How many filters are live at `at`.
    pub fn live_count(&self, at: DateTime<Utc>) -> usize {
        (self.filters.keys())
            .filter(|&&filter| self.live(filter, at))
            .count()
    }

    /// Decides a command: its events (none when it changes nothing), or a refusal.
    pub fn decide(&self, command: FilterCommand) -> Result<Vec<FilterEvent>, FilterError> {
        match command {
            FilterCommand::Create {
                user,
                filter,
                spec,
                at,
            } => {
                if self.filters.contains_key(&filter) {
                    return Ok(vec![]);
                }
                if spec.contexts.is_empty() || spec.expires_at.is_some_and(|e| e <= at) {
                    return Err(FilterError::Invalid);
                }
                if self.live_count(at) >= MAX_LIVE {
                    return Err(FilterError::LimitReached);
                }
                // The filters that have ended by themselves go with it, so that a user's
                // stream (and every read model) holds at most the live ones and those ended
                // since their last creation: never more than twice the limit.
                let ended = self
                    .filters
                    .keys()
                    .filter(|&&f| !self.live(f, at))
                    .map(|&filter| FilterEvent::FilterDeleted { user, filter });
                let mut events: Vec<FilterEvent> = ended.collect();
                events.push(FilterEvent::FilterCreated {
                    author: user,
                    filter,
                    content: Some(spec.phrase.0),
                    whole_word: spec.whole_word,
                    contexts: spec.contexts,
                    action: spec.action,
                    expires_at: spec.expires_at,
                    created_at: at,
                });
                Ok(events)
            }
            FilterCommand::Delete { user, filter, at } => match self.live(filter, at) {
                true => Ok(vec![FilterEvent::FilterDeleted { user, filter }]),
                false => Err(FilterError::NotFound),
            },
        }
    }

    /// Folds one event into the state.
    pub fn apply(&mut self, event: FilterEvent) {
        match event {
            FilterEvent::FilterCreated {
                filter, expires_at, ..
            } => {
                self.filters.insert(filter, expires_at);
            }
            FilterEvent::FilterDeleted { filter, .. } => {
                self.filters.remove(&filter);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u() -> UserId {
        UserId::try_from(7).unwrap()
    }

    fn id(n: u128) -> FilterId {
        FilterId::from_uuid(uuid::Uuid::from_u128(n))
    }

    fn at(secs: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + secs, 0).unwrap()
    }

    fn spec(expires_at: Option<DateTime<Utc>>) -> FilterSpec {
        FilterSpec {
            phrase: Phrase::parse("spoiler").unwrap(),
            whole_word: true,
            contexts: BTreeSet::from([FilterContext::Home]),
            action: FilterAction::Hide,
            expires_at,
        }
    }

    fn create(n: u128, expires_at: Option<DateTime<Utc>>, now: i64) -> FilterCommand {
        FilterCommand::Create {
            user: u(),
            filter: id(n),
            spec: spec(expires_at),
            at: at(now),
        }
    }

    fn run(filters: &mut UserFilters, command: FilterCommand) -> Result<usize, FilterError> {
        let events = filters.decide(command)?;
        let n = events.len();
        events.into_iter().for_each(|e| filters.apply(e));
        Ok(n)
    }

    #[test]
    fn at_most_a_hundred_live_and_an_expired_one_no_longer_counts() {
        let mut filters = UserFilters::default();
        // One that expires at 10 s, then 99 for good: the limit.
        assert_eq!(run(&mut filters, create(0, Some(at(10)), 0)), Ok(1));
        for n in 1..100 {
            assert_eq!(run(&mut filters, create(n, None, 1)), Ok(1));
        }
        assert_eq!(
            run(&mut filters, create(100, None, 5)),
            Err(FilterError::LimitReached)
        );
        // Once the first has expired, there is room again, and the ended one is cleared away
        // with the creation; the same id again changes nothing.
        let events = filters.decide(create(100, None, 10)).unwrap();
        assert_eq!(
            events[0],
            FilterEvent::FilterDeleted {
                user: u(),
                filter: id(0)
            }
        );
        assert!(matches!(events[1], FilterEvent::FilterCreated { .. }));
        assert_eq!(events.len(), 2);
        events.into_iter().for_each(|e| filters.apply(e));
        assert_eq!(filters.filters.len(), 100);
        assert_eq!(run(&mut filters, create(100, None, 11)), Ok(0));
        assert_eq!(filters.live_count(at(11)), 100);
    }

    #[test]
    fn only_a_live_filter_is_deleted_and_bad_filters_are_refused() {
        let mut filters = UserFilters::default();
        run(&mut filters, create(1, Some(at(10)), 0)).unwrap();
        run(&mut filters, create(2, None, 0)).unwrap();
        let delete = |n, now| FilterCommand::Delete {
            user: u(),
            filter: id(n),
            at: at(now),
        };
        assert_eq!(run(&mut filters, delete(1, 10)), Err(FilterError::NotFound));
        assert_eq!(run(&mut filters, delete(3, 0)), Err(FilterError::NotFound));
        assert_eq!(run(&mut filters, delete(2, 0)), Ok(1));
        assert_eq!(run(&mut filters, delete(2, 1)), Err(FilterError::NotFound));
        // An expiry not after now, or no context: refused.
        assert_eq!(
            run(&mut filters, create(4, Some(at(5)), 5)),
            Err(FilterError::Invalid)
        );
        let mut none = create(5, None, 0);
        if let FilterCommand::Create { spec, .. } = &mut none {
            spec.contexts.clear();
        }
        assert_eq!(run(&mut filters, none), Err(FilterError::Invalid));
    }

    #[test]
    fn a_phrase_is_one_to_a_hundred_characters_and_the_event_keeps_its_fields() {
        assert!(Phrase::parse("").is_err());
        assert!(Phrase::parse(&"字".repeat(100)).is_ok());
        assert!(Phrase::parse(&"字".repeat(101)).is_err());
        assert!(Phrase::parse("a\0b").is_err());
        let events = UserFilters::default().decide(create(1, None, 0)).unwrap();
        let json = serde_json::to_value(&events[0]).unwrap();
        let body = &json["FilterCreated"];
        assert_eq!(body["content"], "spoiler");
        assert_eq!(body["author"], 7);
        assert_eq!(body["contexts"], serde_json::json!(["home"]));
        assert_eq!(body["action"], "hide");
        let back: FilterEvent = serde_json::from_value(json).unwrap();
        assert_eq!(back, events[0]);
        assert_eq!("nope".parse::<FilterId>(), Err(BadFilterId));
        for context in [
            FilterContext::Home,
            FilterContext::Lists,
            FilterContext::Notifications,
            FilterContext::Comments,
        ] {
            assert_eq!(serde_json::to_value(context).unwrap(), context.as_str());
            assert_eq!(context.as_str().parse(), Ok(context));
        }
        for action in [FilterAction::Hide, FilterAction::Warn] {
            assert_eq!(serde_json::to_value(action).unwrap(), action.as_str());
            assert_eq!(action.as_str().parse(), Ok(action));
        }
        assert!("public".parse::<FilterContext>().is_err());
        assert_eq!(id(5).to_string().parse::<FilterId>(), Ok(id(5)));
    }
}
