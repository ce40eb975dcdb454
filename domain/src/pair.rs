//! The relation pair: the aggregate that holds every follow and block fact between two users.
//!
//! Consistency boundaries, and why they are these:
//! - Rule 5 (a block removes both follows atomically, never a follow beside a block) needs the
//!   four facts between A and B decided together, so they live in one stream per unordered pair
//!   ([`PairId`]). Two commands on the same pair race on that stream's version; one wins.
//! - Rule 3 (at most `limit` followings) spans every pair of the follower. The store holds a
//!   guard row per user, locked in the same transaction as the append ([`guarded_users`]), and
//!   hands its count to [`RelationPair::decide`] as a [`FollowBudget`]. The count is derived
//!   from this aggregate's events ([`following_deltas`]) and written in the same transaction.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::{PairId, SelfRelation, UserId};
use crate::relation::{Facts, Relation};

/// A command on the relation between the actor and a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelationCommand {
    /// follows(actor, target) becomes true (rule 2, 3).
    Follow {
        /// The user who asks.
        actor: UserId,
        /// The user to follow.
        target: UserId,
    },
    /// follows(actor, target) becomes false (rule 4).
    Unfollow {
        /// The user who asks.
        actor: UserId,
        /// The user to stop following.
        target: UserId,
    },
    /// blocks(actor, target) becomes true and both follows false (rule 5).
    Block {
        /// The user who asks.
        actor: UserId,
        /// The user to block.
        target: UserId,
    },
    /// blocks(actor, target) becomes false; follows stay as they are (rule 6).
    Unblock {
        /// The user who asks.
        actor: UserId,
        /// The user to unblock.
        target: UserId,
    },
    /// follows(target, actor) becomes false: the actor removes a follower without blocking
    /// them (they may follow again).
    RemoveFollower {
        /// The user who asks.
        actor: UserId,
        /// The follower to remove.
        target: UserId,
    },
    /// The actor mutes the target: their posts leave the actor's feed, until `until` (or for
    /// good). A new mute replaces the one in force.
    Mute {
        /// The user who asks.
        actor: UserId,
        /// The user to mute.
        target: UserId,
        /// When the mute ends by itself; `None`: never.
        until: Option<DateTime<Utc>>,
        /// The time of the decision (a mute past its end is no mute).
        now: DateTime<Utc>,
    },
    /// The actor lifts a mute in force.
    Unmute {
        /// The user who asks.
        actor: UserId,
        /// The muted user.
        target: UserId,
        /// The time of the decision.
        now: DateTime<Utc>,
    },
}

impl RelationCommand {
    /// The user who issued the command.
    pub fn actor(self) -> UserId {
        match self {
            Self::Follow { actor, .. }
            | Self::Unfollow { actor, .. }
            | Self::Block { actor, .. }
            | Self::Unblock { actor, .. }
            | Self::RemoveFollower { actor, .. }
            | Self::Mute { actor, .. }
            | Self::Unmute { actor, .. } => actor,
        }
    }

    /// The other user.
    pub fn target(self) -> UserId {
        match self {
            Self::Follow { target, .. }
            | Self::Unfollow { target, .. }
            | Self::Block { target, .. }
            | Self::Unblock { target, .. }
            | Self::RemoveFollower { target, .. }
            | Self::Mute { target, .. }
            | Self::Unmute { target, .. } => target,
        }
    }

    /// The stream the command acts on; a command on oneself has none (rule 1).
    pub fn pair(self) -> Result<PairId, SelfRelation> {
        PairId::new(self.actor(), self.target())
    }

    /// The verb, as the HTTP path and logs name it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Follow { .. } => "follow",
            Self::Unfollow { .. } => "unfollow",
            Self::Block { .. } => "block",
            Self::Unblock { .. } => "unblock",
            Self::RemoveFollower { .. } => "remove_follower",
            Self::Mute { .. } => "mute",
            Self::Unmute { .. } => "unmute",
        }
    }
}

/// Why an unfollow happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnfollowCause {
    /// The follower asked to unfollow.
    Unfollow,
    /// One of the two blocked the other (rule 5).
    Block,
    /// The followee removed the follower (no block; they may follow again).
    Removed,
}

/// The facts that commands on a pair leave in the log. Version 1 of each; a change of meaning
/// gets a new type or version, never an edit of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RelationEvent {
    /// `follower` started following `followee`.
    Followed {
        /// Who follows.
        follower: UserId,
        /// Who is followed.
        followee: UserId,
    },
    /// `follower` stopped following `followee`.
    Unfollowed {
        /// Who followed.
        follower: UserId,
        /// Who was followed.
        followee: UserId,
        /// What ended the follow.
        cause: UnfollowCause,
    },
    /// `blocker` blocked `blocked`. Any follow between them was ended by `Unfollowed` events
    /// earlier in the same transaction.
    Blocked {
        /// Who blocks.
        blocker: UserId,
        /// Who is blocked.
        blocked: UserId,
    },
    /// `blocker` lifted the block on `blocked`. Follows are not restored (rule 6).
    Unblocked {
        /// Who blocked.
        blocker: UserId,
        /// Who was blocked.
        blocked: UserId,
    },
    /// `muter` muted `muted` until `until` (`null`: for good), replacing any mute in force.
    /// The mute ends by itself at `until`; no event marks that.
    Muted {
        /// Who mutes.
        muter: UserId,
        /// Who is muted.
        muted: UserId,
        /// When it ends by itself.
        until: Option<DateTime<Utc>>,
    },
    /// `muter` lifted the mute on `muted` before its end.
    Unmuted {
        /// Who muted.
        muter: UserId,
        /// Who was muted.
        muted: UserId,
    },
}

impl RelationEvent {
    /// The event's type name, as stored in the log's `event_type` column.
    pub fn event_type(&self) -> &'static str {
        match self {
            Self::Followed { .. } => "Followed",
            Self::Unfollowed { .. } => "Unfollowed",
            Self::Blocked { .. } => "Blocked",
            Self::Unblocked { .. } => "Unblocked",
            Self::Muted { .. } => "Muted",
            Self::Unmuted { .. } => "Unmuted",
        }
    }

    /// The schema version of the event's payload.
    pub fn event_version(&self) -> &'static str {
        "1"
    }

    /// The two users the event is about: (subject, object).
    pub fn users(&self) -> (UserId, UserId) {
        match *self {
            Self::Followed { follower, followee }
            | Self::Unfollowed {
                follower, followee, ..
            } => (follower, followee),
            Self::Blocked { blocker, blocked } | Self::Unblocked { blocker, blocked } => {
                (blocker, blocked)
            }
            Self::Muted { muter, muted, .. } | Self::Unmuted { muter, muted } => (muter, muted),
        }
    }
}

/// Why a relation command was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RelationError {
    /// Rule 1.
    #[error("a user has no relation with themselves")]
    SelfRelation,
    /// Rule 2: the target blocks the actor.
    #[error("the target blocks you")]
    Blocked,
    /// Rule 2: the actor blocks the target.
    #[error("you block the target; unblock first")]
    BlockingTarget,
    /// Rule 3.
    #[error("you already follow the maximum of {limit} users")]
    FollowLimitReached {
        /// The limit in force.
        limit: u32,
    },
}

impl From<SelfRelation> for RelationError {
    fn from(_: SelfRelation) -> Self {
        Self::SelfRelation
    }
}

/// What the decision needs to know beyond the pair: the actor's following count, read from
/// the actor's guard row under lock, and the limit in force (rule 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowBudget {
    /// How many users the actor follows now.
    pub following: u32,
    /// `follow_limit`.
    pub limit: u32,
}

impl FollowBudget {
    /// A budget that never refuses; for folds and tests that do not exercise rule 3.
    pub fn unlimited() -> Self {
        Self {
            following: 0,
            limit: u32::MAX,
        }
    }
}

/// Every follow and block fact between two users. At most two of each (one per direction).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelationPair {
    follows: Vec<(UserId, UserId)>,
    blocks: Vec<(UserId, UserId)>,
    /// (muter, muted, until): at most one per direction, kept past its end until replaced.
    #[serde(default)]
    mutes: Vec<(UserId, UserId, Option<DateTime<Utc>>)>,
}

impl RelationPair {
    /// The aggregate's type, as the event store names its streams.
    pub const TYPE: &'static str = "relation";

    fn follows(&self, from: UserId, to: UserId) -> bool {
        self.follows.contains(&(from, to))
    }

    fn blocks(&self, from: UserId, to: UserId) -> bool {
        self.blocks.contains(&(from, to))
    }

    /// The four facts, seen from `from`'s side.
    pub fn facts(&self, from: UserId, to: UserId) -> Facts {
        Facts {
            following: self.follows(from, to),
            followed_by: self.follows(to, from),
            blocking: self.blocks(from, to),
            blocked_by: self.blocks(to, from),
        }
    }

    /// `from`'s relation to `to`, with `muting` as it stands at `now` (for answers to `from`).
    pub fn relation(&self, from: UserId, to: UserId, now: DateTime<Utc>) -> Relation {
        Relation::new(from, to, self.facts(from, to)).with_muting(self.muting(from, to, now))
    }

    /// The mute of `from` on `to`, if one was set and not lifted: its end (`None`: never).
    fn mute(&self, from: UserId, to: UserId) -> Option<Option<DateTime<Utc>>> {
        self.mutes
            .iter()
            .find(|m| (m.0, m.1) == (from, to))
            .map(|m| m.2)
    }

    /// Whether `from` mutes `to` at `now`.
    pub fn muting(&self, from: UserId, to: UserId, now: DateTime<Utc>) -> bool {
        self.mute(from, to)
            .is_some_and(|until| until.is_none_or(|until| until > now))
    }

    /// Decides a command: the events it appends (none when nothing changes), or why it is
    /// refused. Pure; `apply` the events to see the state they leave.
    pub fn decide(
        &self,
        command: RelationCommand,
        budget: FollowBudget,
    ) -> Result<Vec<RelationEvent>, RelationError> {
        command.pair()?;
        let (actor, target) = (command.actor(), command.target());
        let facts = self.facts(actor, target);
        let events = match command {
            RelationCommand::Follow { .. } => {
                if facts.blocked_by {
                    return Err(RelationError::Blocked);
                }
                if facts.blocking {
                    return Err(RelationError::BlockingTarget);
                }
                if facts.following {
                    return Ok(vec![]);
                }
                if budget.following >= budget.limit {
                    return Err(RelationError::FollowLimitReached {
                        limit: budget.limit,
                    });
                }
                vec![RelationEvent::Followed {
                    follower: actor,
                    followee: target,
                }]
            }
            RelationCommand::Unfollow { .. } if facts.following => {
                vec![RelationEvent::Unfollowed {
                    follower: actor,
                    followee: target,
                    cause: UnfollowCause::Unfollow,
                }]
            }
            RelationCommand::Block { .. } if !facts.blocking => {
                // Unfollows first: a reader that sees a prefix of this transaction may see
                // neither follow nor block, never both.
                let mut events = Vec::with_capacity(3);
                for (follower, followee, follows) in [
                    (actor, target, facts.following),
                    (target, actor, facts.followed_by),
                ] {
                    if follows {
                        events.push(RelationEvent::Unfollowed {
                            follower,
                            followee,
                            cause: UnfollowCause::Block,
                        });
                    }
                }
                events.push(RelationEvent::Blocked {
                    blocker: actor,
                    blocked: target,
                });
                events
            }
            RelationCommand::Unblock { .. } if facts.blocking => vec![RelationEvent::Unblocked {
                blocker: actor,
                blocked: target,
            }],
            RelationCommand::RemoveFollower { .. } if facts.followed_by => {
                vec![RelationEvent::Unfollowed {
                    follower: target,
                    followee: actor,
                    cause: UnfollowCause::Removed,
                }]
            }
            RelationCommand::Mute { until, now, .. } => {
                // The same endless mute again changes nothing; any other mute replaces the one
                // in force (a new end, or a mute after one that ended).
                let endless_already =
                    self.muting(actor, target, now) && self.mute(actor, target) == Some(None);
                if endless_already && until.is_none() {
                    vec![]
                } else {
                    vec![RelationEvent::Muted {
                        muter: actor,
                        muted: target,
                        until,
                    }]
                }
            }
            RelationCommand::Unmute { now, .. } if self.muting(actor, target, now) => {
                vec![RelationEvent::Unmuted {
                    muter: actor,
                    muted: target,
                }]
            }
            RelationCommand::Unfollow { .. }
            | RelationCommand::Block { .. }
            | RelationCommand::Unblock { .. }
            | RelationCommand::RemoveFollower { .. }
            | RelationCommand::Unmute { .. } => vec![],
        };
        Ok(events)
    }

    /// Folds one event into the state. Never fails: events are facts.
    pub fn apply(&mut self, event: RelationEvent) {
        match event {
            RelationEvent::Followed { follower, followee } => {
                if !self.follows(follower, followee) {
                    self.follows.push((follower, followee));
                }
            }
            RelationEvent::Unfollowed {
                follower, followee, ..
            } => self.follows.retain(|&edge| edge != (follower, followee)),
            RelationEvent::Blocked { blocker, blocked } => {
                if !self.blocks(blocker, blocked) {
                    self.blocks.push((blocker, blocked));
                }
            }
            RelationEvent::Unblocked { blocker, blocked } => {
                self.blocks.retain(|&edge| edge != (blocker, blocked))
            }
            RelationEvent::Muted {
                muter,
                muted,
                until,
            } => {
                self.mutes.retain(|m| (m.0, m.1) != (muter, muted));
                self.mutes.push((muter, muted, until));
            }
            RelationEvent::Unmuted { muter, muted } => {
                self.mutes.retain(|m| (m.0, m.1) != (muter, muted))
            }
        }
    }
}

/// The users whose guard rows a command must lock, in lock order (ascending id, so that two
/// transactions never wait on each other in a cycle). These are the users whose following
/// count the command may change.
pub fn guarded_users(command: RelationCommand) -> Vec<UserId> {
    match command {
        RelationCommand::Follow { actor, .. } | RelationCommand::Unfollow { actor, .. } => {
            vec![actor]
        }
        // The follower's count goes down.
        RelationCommand::RemoveFollower { target, .. } => vec![target],
        RelationCommand::Block { actor, target } => {
            let mut users = vec![actor, target];
            users.sort_unstable();
            users
        }
        RelationCommand::Unblock { .. }
        | RelationCommand::Mute { .. }
        | RelationCommand::Unmute { .. } => vec![],
    }
}

/// How each user's following count changes with these events, in ascending user order.
pub fn following_deltas(events: &[RelationEvent]) -> Vec<(UserId, i32)> {
    let mut deltas: Vec<(UserId, i32)> = Vec::new();
    for event in events {
        let (user, delta) = match *event {
            RelationEvent::Followed { follower, .. } => (follower, 1),
            RelationEvent::Unfollowed { follower, .. } => (follower, -1),
            RelationEvent::Blocked { .. }
            | RelationEvent::Unblocked { .. }
            | RelationEvent::Muted { .. }
            | RelationEvent::Unmuted { .. } => continue,
        };
        match deltas.iter_mut().find(|(u, _)| *u == user) {
            Some((_, d)) => *d += delta,
            None => deltas.push((user, delta)),
        }
    }
    deltas.retain(|&(_, d)| d != 0);
    deltas.sort_unstable();
    deltas
}

#[cfg(test)]
mod tests;
