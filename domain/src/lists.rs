//! Lists (issue 46): a user's named sets of the users they follow, read as a feed of their
//! own. One stream per owner, `lists:{owner}`, holds every list of theirs, so the limit of
//! [`MAX_LISTS`] is decided on one stream, and each list's members as the owner added and
//! removed them.
//!
//! A membership is a fact about a follow: it lasts while the follow does. An unfollow, a block
//! either way (it ends the follow) and an erasure of either user end it without an event here;
//! every fold of lists ends it at that event (docs/events.md). So this stream alone does not
//! know who is a member now: the store reads it under the owner's lock, beside whom the owner
//! follows ([`ListServices`]), and a member is only ever added while followed.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::ids::UserId;

/// The most lists a user has at once.
pub const MAX_LISTS: usize = 100;

/// The most users one members call names.
pub const MAX_NAMED: usize = 100;

crate::ids::uuid_id!(
    /// A list's id: a UUID the service makes (version 7).
    ListId,
    BadListId,
    "a list id"
);

/// A list's title: 1 to 100 characters (SPEC's rule), none of them NUL (PostgreSQL's `text`
/// holds none).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ListTitle(String);

/// Why a text is not a list's title.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a list's title is 1 to 100 characters, none of them NUL")]
pub struct BadListTitle;

impl ListTitle {
    /// The longest title, in characters.
    pub const MAX_CHARS: usize = 100;

    /// `text` as a title.
    pub fn parse(text: &str) -> Result<Self, BadListTitle> {
        match crate::ids::short_text(text, Self::MAX_CHARS) {
            true => Ok(Self(text.to_owned())),
            false => Err(BadListTitle),
        }
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What an owner does to their lists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListCommand {
    /// Makes a list (its id made by the caller).
    Create {
        /// Whose.
        owner: UserId,
        /// Its id.
        list: ListId,
        /// Its title.
        title: ListTitle,
        /// Whether its members leave the owner's home feed.
        exclusive: bool,
        /// Now.
        at: DateTime<Utc>,
    },
    /// Renames a list or changes whether it is exclusive (each omitted stays).
    Update {
        /// Whose.
        owner: UserId,
        /// Which.
        list: ListId,
        /// A new title.
        title: Option<ListTitle>,
        /// A new exclusiveness.
        exclusive: Option<bool>,
    },
    /// Deletes a list, its members with it.
    Delete {
        /// Whose.
        owner: UserId,
        /// Which.
        list: ListId,
    },
    /// Adds (`add`) or removes users as members.
    Members {
        /// Whose.
        owner: UserId,
        /// Which.
        list: ListId,
        /// Whom (at most [`MAX_NAMED`], no repeats: the caller dedups).
        users: Vec<UserId>,
        /// Add (`true`) or remove.
        add: bool,
    },
}

impl ListCommand {
    /// The owner: the stream's user and the command's actor.
    pub fn owner(&self) -> UserId {
        match self {
            Self::Create { owner, .. }
            | Self::Update { owner, .. }
            | Self::Delete { owner, .. }
            | Self::Members { owner, .. } => *owner,
        }
    }

    /// The list it is about.
    pub fn list(&self) -> ListId {
        match self {
            Self::Create { list, .. }
            | Self::Update { list, .. }
            | Self::Delete { list, .. }
            | Self::Members { list, .. } => *list,
        }
    }

    /// The users it names besides the owner (the members a members call adds or removes).
    pub fn named(&self) -> &[UserId] {
        match self {
            Self::Members { users, .. } => users,
            Self::Create { .. } | Self::Update { .. } | Self::Delete { .. } => &[],
        }
    }

    /// The stream of the owner's lists.
    pub fn stream(&self) -> String {
        self.owner().to_string()
    }

    /// The verb, as logs and idempotency fingerprints name it.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Create { .. } => "create_list",
            Self::Update { .. } => "update_list",
            Self::Delete { .. } => "delete_list",
            Self::Members { add: true, .. } => "add_list_members",
            Self::Members { add: false, .. } => "remove_list_members",
        }
    }
}

/// The facts an owner's lists stream holds. Version 1 of each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ListEvent {
    /// `owner` made `list`.
    ListCreated {
        /// Whose.
        owner: UserId,
        /// Which.
        list: ListId,
        /// Its title.
        title: String,
        /// Whether its members leave the owner's home feed.
        exclusive: bool,
        /// When.
        created_at: DateTime<Utc>,
    },
    /// `owner` renamed `list` or changed its exclusiveness: both as they are now.
    ListUpdated {
        /// Whose.
        owner: UserId,
        /// Which.
        list: ListId,
        /// Its title.
        title: String,
        /// Whether its members leave the owner's home feed.
        exclusive: bool,
    },
    /// `owner` deleted `list`, and its members with it.
    ListDeleted {
        /// Whose.
        owner: UserId,
        /// Which.
        list: ListId,
    },
    /// `owner` added `members` (each followed by them, none a member before) to `list`.
    ListMembersAdded {
        /// Whose.
        owner: UserId,
        /// Which.
        list: ListId,
        /// Whom.
        members: Vec<UserId>,
    },
    /// `owner` removed `members` (each a member before) from `list`.
    ListMembersRemoved {
        /// Whose.
        owner: UserId,
        /// Which.
        list: ListId,
        /// Whom.
        members: Vec<UserId>,
    },
}

impl ListEvent {
    /// The event's type name, as stored in the log's `event_type` column.
    pub fn event_type(&self) -> &'static str {
        match self {
            Self::ListCreated { .. } => "ListCreated",
            Self::ListUpdated { .. } => "ListUpdated",
            Self::ListDeleted { .. } => "ListDeleted",
            Self::ListMembersAdded { .. } => "ListMembersAdded",
            Self::ListMembersRemoved { .. } => "ListMembersRemoved",
        }
    }

    /// The schema version of the event's payload.
    pub fn event_version(&self) -> &'static str {
        "1"
    }

    /// The owner of the list.
    pub fn owner(&self) -> UserId {
        match self {
            Self::ListCreated { owner, .. }
            | Self::ListUpdated { owner, .. }
            | Self::ListDeleted { owner, .. }
            | Self::ListMembersAdded { owner, .. }
            | Self::ListMembersRemoved { owner, .. } => *owner,
        }
    }
}

/// Why a list command was refused, in the order they are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ListError {
    /// The owner has no such list (another user's is none of theirs).
    #[error("no such list")]
    NotFound,
    /// The owner has [`MAX_LISTS`] lists.
    #[error("a user has at most 100 lists")]
    LimitReached,
    /// A user named to be added is not followed by the owner.
    #[error("only users you follow can be added to a list")]
    NotFollowing,
}

/// What a members call is decided with beyond the stream, read under the owner's lock: of the
/// users it names, those the owner follows and those in the list now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListServices {
    /// Named users the owner follows.
    pub follows: Vec<UserId>,
    /// Named users in the list.
    pub members: Vec<UserId>,
}

/// One live list, as its stream leaves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListState {
    /// Its title.
    pub title: String,
    /// Whether its members leave the owner's home feed.
    pub exclusive: bool,
    /// When it was made.
    pub created_at: DateTime<Utc>,
}

/// An owner's live lists, folded from their stream.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserLists {
    lists: BTreeMap<ListId, ListState>,
}

impl UserLists {
    /// The aggregate's type, as the event store names its streams.
    pub const TYPE: &'static str = "lists";

    /// A live list of the owner's.
    pub fn get(&self, list: ListId) -> Option<&ListState> {
        self.lists.get(&list)
    }

    /// Decides a command: its events (none when it changes nothing), or a refusal.
    pub fn decide(
        &self,
        command: ListCommand,
        services: ListServices,
    ) -> Result<Vec<ListEvent>, ListError> {
        let list = command.list();
        if let ListCommand::Create {
            owner,
            title,
            exclusive,
            at,
            ..
        } = command
        {
            if self.lists.contains_key(&list) {
                return Ok(vec![]);
            }
            if self.lists.len() >= MAX_LISTS {
                return Err(ListError::LimitReached);
            }
            return Ok(vec![ListEvent::ListCreated {
                owner,
                list,
                title: title.0,
                exclusive,
                created_at: at,
            }]);
        }
        let state = self.lists.get(&list).ok_or(ListError::NotFound)?;
        Ok(match command {
            ListCommand::Create { .. } => unreachable!("decided above"),
            ListCommand::Update {
                owner,
                title,
                exclusive,
                ..
            } => {
                let title = title.map_or_else(|| state.title.clone(), |t| t.0);
                let exclusive = exclusive.unwrap_or(state.exclusive);
                let same = title == state.title && exclusive == state.exclusive;
                match same {
                    true => vec![],
                    false => vec![ListEvent::ListUpdated {
                        owner,
                        list,
                        title,
                        exclusive,
                    }],
                }
            }
            ListCommand::Delete { owner, .. } => vec![ListEvent::ListDeleted { owner, list }],
            ListCommand::Members {
                owner, users, add, ..
            } => Self::members(owner, list, users, add, &services)?,
        })
    }

    /// A members call: every user named to be added must be followed; the event names those
    /// whose membership it changes.
    fn members(
        owner: UserId,
        list: ListId,
        users: Vec<UserId>,
        add: bool,
        services: &ListServices,
    ) -> Result<Vec<ListEvent>, ListError> {
        if add && users.iter().any(|u| !services.follows.contains(u)) {
            return Err(ListError::NotFollowing);
        }
        let members: Vec<UserId> = users
            .into_iter()
            .filter(|u| services.members.contains(u) != add)
            .collect();
        Ok(match (members.is_empty(), add) {
            (true, _) => vec![],
            (false, true) => vec![ListEvent::ListMembersAdded {
                owner,
                list,
                members,
            }],
            (false, false) => vec![ListEvent::ListMembersRemoved {
                owner,
                list,
                members,
            }],
        })
    }

    /// Folds one event into the state.
    pub fn apply(&mut self, event: ListEvent) {
        match event {
            ListEvent::ListCreated {
                list,
                title,
                exclusive,
                created_at,
                ..
            } => {
                let state = ListState {
                    title,
                    exclusive,
                    created_at,
                };
                self.lists.insert(list, state);
            }
            ListEvent::ListUpdated {
                list,
                title,
                exclusive,
                ..
            } => {
                if let Some(state) = self.lists.get_mut(&list) {
                    state.title = title;
                    state.exclusive = exclusive;
                }
            }
            ListEvent::ListDeleted { list, .. } => {
                self.lists.remove(&list);
            }
            ListEvent::ListMembersAdded { .. } | ListEvent::ListMembersRemoved { .. } => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(id: i64) -> UserId {
        UserId::try_from(id).unwrap()
    }

    fn id(n: u128) -> ListId {
        ListId::from_uuid(uuid::Uuid::from_u128(n))
    }

    fn at() -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000, 0).unwrap()
    }

    fn create(state: &mut UserLists, n: u128) -> Result<usize, ListError> {
        let command = ListCommand::Create {
            owner: u(1),
            list: id(n),
            title: ListTitle::parse("friends").unwrap(),
            exclusive: false,
            at: at(),
        };
        let events = state.decide(command, ListServices::default())?;
        let count = events.len();
        events.into_iter().for_each(|e| state.apply(e));
        Ok(count)
    }

    #[test]
    fn an_owner_has_at_most_a_hundred_lists_and_a_deleted_one_frees_its_place() {
        let mut state = UserLists::default();
        for n in 0..MAX_LISTS as u128 {
            assert_eq!(create(&mut state, n), Ok(1));
        }
        assert_eq!(create(&mut state, 5), Ok(0), "made already: nothing");
        assert_eq!(create(&mut state, 1000), Err(ListError::LimitReached));
        let delete = ListCommand::Delete {
            owner: u(1),
            list: id(3),
        };
        for event in state
            .decide(delete.clone(), ListServices::default())
            .unwrap()
        {
            state.apply(event);
        }
        assert_eq!(
            state.decide(delete, ListServices::default()),
            Err(ListError::NotFound),
            "a deleted list is gone"
        );
        assert_eq!(create(&mut state, 1000), Ok(1));
    }

    #[test]
    fn members_are_added_only_when_followed_and_name_only_what_changes() {
        let mut state = UserLists::default();
        create(&mut state, 1).unwrap();
        let members = |users: &[i64], add| ListCommand::Members {
            owner: u(1),
            list: id(1),
            users: users.iter().map(|&n| u(n)).collect(),
            add,
        };
        let services = ListServices {
            follows: vec![u(2), u(3)],
            members: vec![u(3)],
        };
        assert_eq!(
            state.decide(members(&[2, 4], true), services.clone()),
            Err(ListError::NotFollowing),
            "one stranger refuses the call"
        );
        assert_eq!(
            state.decide(members(&[2, 3], true), services.clone()),
            Ok(vec![ListEvent::ListMembersAdded {
                owner: u(1),
                list: id(1),
                members: vec![u(2)]
            }])
        );
        assert_eq!(
            state.decide(members(&[2, 3, 4], false), services.clone()),
            Ok(vec![ListEvent::ListMembersRemoved {
                owner: u(1),
                list: id(1),
                members: vec![u(3)]
            }]),
            "a removal needs no follow"
        );
        let other = ListCommand::Members {
            owner: u(1),
            list: id(9),
            users: vec![u(2)],
            add: true,
        };
        assert_eq!(state.decide(other, services), Err(ListError::NotFound));
    }

    #[test]
    fn an_update_names_both_values_and_a_same_one_changes_nothing() {
        let mut state = UserLists::default();
        create(&mut state, 1).unwrap();
        let update = |title: Option<&str>, exclusive| ListCommand::Update {
            owner: u(1),
            list: id(1),
            title: title.map(|t| ListTitle::parse(t).unwrap()),
            exclusive,
        };
        let none = ListServices::default();
        assert_eq!(
            state.decide(update(Some("friends"), Some(false)), none.clone()),
            Ok(vec![])
        );
        assert_eq!(
            state.decide(update(None, Some(true)), none),
            Ok(vec![ListEvent::ListUpdated {
                owner: u(1),
                list: id(1),
                title: "friends".into(),
                exclusive: true
            }])
        );
        assert!(ListTitle::parse("").is_err() && ListTitle::parse("a\0").is_err());
        assert!(
            ListTitle::parse("   ").is_ok(),
            "SPEC asks 1 to 100 characters, nothing more"
        );
        assert!(ListTitle::parse(&"é".repeat(100)).is_ok());
        assert!(ListTitle::parse(&"é".repeat(101)).is_err());
    }
}
