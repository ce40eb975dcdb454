//! The relation of one user to another, as SPEC.md's `Relation` shape names it.

use serde::{Deserialize, Serialize};

use crate::ids::UserId;

/// The one-word summary of a relation, from `from`'s side (seed 002's enumeration).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum RelationState {
    /// No follow and no block either way.
    None,
    /// `from` follows `to`, not the other way.
    Following,
    /// `to` follows `from`, not the other way.
    FollowedBy,
    /// Both follow each other.
    Friends,
    /// `from` blocks `to`, not the other way.
    Blocking,
    /// `to` blocks `from`, not the other way.
    BlockedBy,
    /// Both block each other.
    MutualBlock,
    /// `from` and `to` are the same user (queries only).
    #[serde(rename = "self")]
    Myself,
}

/// The directed facts between two users, seen from `from`'s side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Facts {
    /// follows(from, to)
    pub following: bool,
    /// follows(to, from)
    pub followed_by: bool,
    /// blocks(from, to)
    pub blocking: bool,
    /// blocks(to, from)
    pub blocked_by: bool,
    /// `from` has asked to follow `to` (pending).
    pub requested: bool,
    /// `to` has asked to follow `from` (pending).
    pub requested_by: bool,
}

impl Facts {
    /// The same facts seen from the other side.
    pub fn reversed(self) -> Self {
        Self {
            following: self.followed_by,
            followed_by: self.following,
            blocking: self.blocked_by,
            blocked_by: self.blocking,
            requested: self.requested_by,
            requested_by: self.requested,
        }
    }
}

/// What a follower keeps of a followee (issue 44): one follow's preferences, private to the
/// follower. A follow starts from the defaults; an unfollow ends them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FollowPrefs {
    /// The followee's reposts come into the follower's feed.
    pub show_reposts: bool,
    /// Each new post of the followee notifies the follower (`posted`).
    pub notify: bool,
}

impl Default for FollowPrefs {
    fn default() -> Self {
        Self {
            show_reposts: true,
            notify: false,
        }
    }
}

/// The preferences a follow command gives: each given one set, an omitted one kept.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PrefsChange {
    /// `show_reposts`, if given.
    pub show_reposts: Option<bool>,
    /// `notify`, if given.
    pub notify: Option<bool>,
}

impl PrefsChange {
    /// `prefs` with the given ones set.
    pub fn applied_to(self, prefs: FollowPrefs) -> FollowPrefs {
        FollowPrefs {
            show_reposts: self.show_reposts.unwrap_or(prefs.show_reposts),
            notify: self.notify.unwrap_or(prefs.notify),
        }
    }
}

/// SPEC.md's `Relation`: `from`'s relation to `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Relation {
    /// The user whose side this is.
    pub from: UserId,
    /// The other user.
    pub to: UserId,
    /// The one-word summary.
    pub state: RelationState,
    /// follows(from, to)
    pub following: bool,
    /// follows(to, from)
    pub followed_by: bool,
    /// Both follow each other.
    pub friends: bool,
    /// blocks(from, to)
    pub blocking: bool,
    /// blocks(to, from)
    pub blocked_by: bool,
    /// `from` has asked to follow `to`, who has not answered yet (a locked account).
    pub requested: bool,
    /// `to` has asked to follow `from`, who has not answered yet.
    pub requested_by: bool,
    /// `from` mutes `to` now. Private: true only in answers to `from` (their commands, and
    /// status or batch queries whose bearer is `from`); false for everyone else.
    pub muting: bool,
    /// `from` keeps `to`'s reposts in their feed (issue 44): their follow's preference (a
    /// pending request's show once it is approved). Private as `muting`; false without a
    /// follow.
    pub show_reposts: bool,
    /// `from` is notified of each new post of `to` (issue 44). Private as `muting`.
    pub notify: bool,
}

impl Relation {
    /// The same relation with `muting` set (for answers to `from`).
    pub fn with_muting(mut self, muting: bool) -> Self {
        self.muting = muting && self.from != self.to;
        self
    }

    /// The same relation with the follow's preferences `(show_reposts, notify)` (for answers
    /// to `from`; `None`: no follow, both false).
    pub fn with_prefs(mut self, prefs: Option<FollowPrefs>) -> Self {
        let prefs = prefs.filter(|_| self.from != self.to);
        self.show_reposts = prefs.is_some_and(|p| p.show_reposts);
        self.notify = prefs.is_some_and(|p| p.notify);
        self
    }

    /// The relation that `facts` describe. `from == to` answers `self` with every flag false.
    pub fn new(from: UserId, to: UserId, facts: Facts) -> Self {
        if from == to {
            return Self {
                from,
                to,
                state: RelationState::Myself,
                following: false,
                followed_by: false,
                friends: false,
                blocking: false,
                blocked_by: false,
                requested: false,
                requested_by: false,
                muting: false,
                show_reposts: false,
                notify: false,
            };
        }
        let friends = facts.following && facts.followed_by;
        let state = match facts {
            Facts {
                blocking: true,
                blocked_by: true,
                ..
            } => RelationState::MutualBlock,
            Facts { blocking: true, .. } => RelationState::Blocking,
            Facts {
                blocked_by: true, ..
            } => RelationState::BlockedBy,
            _ if friends => RelationState::Friends,
            Facts {
                following: true, ..
            } => RelationState::Following,
            Facts {
                followed_by: true, ..
            } => RelationState::FollowedBy,
            _ => RelationState::None,
        };
        Self {
            from,
            to,
            state,
            following: facts.following,
            followed_by: facts.followed_by,
            friends,
            blocking: facts.blocking,
            blocked_by: facts.blocked_by,
            requested: facts.requested,
            requested_by: facts.requested_by,
            muting: false,
            show_reposts: false,
            notify: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(id: i64) -> UserId {
        UserId::try_from(id).unwrap()
    }

    fn state(
        following: bool,
        followed_by: bool,
        blocking: bool,
        blocked_by: bool,
    ) -> RelationState {
        let facts = Facts {
            following,
            followed_by,
            blocking,
            blocked_by,
            ..Facts::default()
        };
        Relation::new(user(1), user(2), facts).state
    }

    #[test]
    fn the_one_word_state_follows_the_enumeration() {
        assert_eq!(state(false, false, false, false), RelationState::None);
        assert_eq!(state(true, false, false, false), RelationState::Following);
        assert_eq!(state(false, true, false, false), RelationState::FollowedBy);
        assert_eq!(state(true, true, false, false), RelationState::Friends);
        assert_eq!(state(false, false, true, false), RelationState::Blocking);
        assert_eq!(state(false, false, false, true), RelationState::BlockedBy);
        assert_eq!(state(false, false, true, true), RelationState::MutualBlock);
    }

    #[test]
    fn a_user_and_themselves_is_self_with_every_flag_false() {
        let facts = Facts {
            following: true,
            ..Facts::default()
        };
        let relation = Relation::new(user(5), user(5), facts);
        assert_eq!(relation.state, RelationState::Myself);
        assert!(!relation.following && !relation.friends);
        assert_eq!(
            serde_json::to_value(relation).unwrap()["state"],
            serde_json::json!("self")
        );
    }

    #[test]
    fn serialises_as_the_contract_says() {
        let relation = Relation::new(
            user(1),
            user(2),
            Facts {
                following: true,
                followed_by: true,
                ..Facts::default()
            },
        );
        assert_eq!(
            serde_json::to_value(relation).unwrap(),
            serde_json::json!({
                "from": 1, "to": 2, "state": "friends", "following": true,
                "followed_by": true, "friends": true, "blocking": false, "blocked_by": false,
                "requested": false, "requested_by": false, "muting": false,
                "show_reposts": false, "notify": false
            })
        );
    }
}
