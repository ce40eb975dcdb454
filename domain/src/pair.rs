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
//!   A pending follow request counts like a follow, so the limit holds under any concurrency.
//! - Follow requests (private accounts) live here too: a request, its approval, its rejection
//!   and a block between the same two users are decided on one stream, so no reader ever sees
//!   a pending request beside a block. Whether the target is locked comes, like the count, from
//!   a row the store reads under a shared lock in the command's transaction
//!   ([`FollowBudget::target_locked`]); unlocking takes that row's lock exclusively, so it sees
//!   every request that was decided against the lock.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::{PairId, SelfRelation, UserId};
use crate::relation::{Facts, FollowPrefs, PrefsChange, Relation};

/// A command on the relation between the actor and a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelationCommand {
    /// follows(actor, target) becomes true (rule 2, 3); or, when the target's account is
    /// locked, the actor asks to follow. Following again with other preferences changes them
    /// (issue 44).
    Follow {
        /// The user who asks.
        actor: UserId,
        /// The user to follow.
        target: UserId,
        /// The preferences given (an omitted one keeps its value).
        prefs: PrefsChange,
    },
    /// follows(actor, target) becomes false (rule 4), or the actor withdraws a pending request.
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
    /// The actor (a locked account) approves the target's pending request: follows(target,
    /// actor) becomes true.
    ApproveRequest {
        /// The user who asks (the one asked to be followed).
        actor: UserId,
        /// The requester.
        target: UserId,
    },
    /// The actor refuses the target's pending request.
    RejectRequest {
        /// The user who asks (the one asked to be followed).
        actor: UserId,
        /// The requester.
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
    /// The actor never wants the target suggested again (issue 46); for good.
    Dismiss {
        /// The user who asks.
        actor: UserId,
        /// The user not to suggest.
        target: UserId,
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
            | Self::ApproveRequest { actor, .. }
            | Self::RejectRequest { actor, .. }
            | Self::Mute { actor, .. }
            | Self::Unmute { actor, .. }
            | Self::Dismiss { actor, .. } => actor,
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
            | Self::ApproveRequest { target, .. }
            | Self::RejectRequest { target, .. }
            | Self::Mute { target, .. }
            | Self::Unmute { target, .. }
            | Self::Dismiss { target, .. } => target,
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
            Self::ApproveRequest { .. } => "approve",
            Self::RejectRequest { .. } => "reject",
            Self::Mute { .. } => "mute",
            Self::Unmute { .. } => "unmute",
            Self::Dismiss { .. } => "dismiss",
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

/// Why a pending follow request ended without an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestEndCause {
    /// The user asked for it: a reject or a withdraw (unfollow) command.
    Asked,
    /// One of the two blocked the other: a block ends requests both ways, like follows.
    Block,
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
    /// `requester` asked to follow `target`, whose account is locked. The request counts toward
    /// the requester's follow limit until it ends.
    FollowRequested {
        /// Who asks.
        requester: UserId,
        /// Whom they ask to follow.
        target: UserId,
        /// The preferences the follow its approval makes will have (issue 44; fields added
        /// in the fourth round, left out when they are the defaults: an event without them
        /// has the defaults, `true` and `false`).
        #[serde(default = "yes", skip_serializing_if = "is_yes")]
        show_reposts: bool,
        /// See `show_reposts`.
        #[serde(default, skip_serializing_if = "is_no")]
        notify: bool,
    },
    /// `target` (or the unlocking of their account) approved `requester`'s request. A
    /// `Followed` event of the same pair follows in the same transaction.
    FollowRequestApproved {
        /// Who asked.
        requester: UserId,
        /// Who approved.
        target: UserId,
    },
    /// `target` refused `requester`'s request, or blocked them.
    FollowRequestRejected {
        /// Who asked.
        requester: UserId,
        /// Who refused.
        target: UserId,
        /// A reject command, or a block by `target`.
        cause: RequestEndCause,
    },
    /// `requester` took back their request (an unfollow), or blocked `target`.
    FollowRequestWithdrawn {
        /// Who asked.
        requester: UserId,
        /// Whom they had asked.
        target: UserId,
        /// An unfollow command, or a block by `requester`.
        cause: RequestEndCause,
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
    /// `user` dismissed `dismissed` from their follow suggestions, for good (issue 46).
    SuggestionDismissed {
        /// Who dismissed.
        user: UserId,
        /// Whom they never want suggested again.
        dismissed: UserId,
    },
    /// `follower`'s preferences for following `followee` are these (issue 44): after a
    /// `Followed` whose preferences are not the defaults (a request's, carried by its
    /// `FollowRequested`, after its approval's `Followed`), or alone when a follow command
    /// changes them. Only ever of a follow that holds; an unfollow or a block ends them.
    FollowPreferencesChanged {
        /// Who follows (or asked to).
        follower: UserId,
        /// Whom.
        followee: UserId,
        /// The followee's reposts come into the follower's feed.
        show_reposts: bool,
        /// Each new post of the followee notifies the follower.
        notify: bool,
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
            Self::FollowRequested { .. } => "FollowRequested",
            Self::FollowRequestApproved { .. } => "FollowRequestApproved",
            Self::FollowRequestRejected { .. } => "FollowRequestRejected",
            Self::FollowRequestWithdrawn { .. } => "FollowRequestWithdrawn",
            Self::FollowPreferencesChanged { .. } => "FollowPreferencesChanged",
            Self::SuggestionDismissed { .. } => "SuggestionDismissed",
        }
    }

    /// The schema version of the event's payload.
    pub fn event_version(&self) -> &'static str {
        "1"
    }

    /// For an event of a follow request: `(requester, target)`, and whether the request is
    /// pending after it (one home for which events start and end requests).
    pub fn request(&self) -> Option<((UserId, UserId), bool)> {
        match *self {
            Self::FollowRequested {
                requester, target, ..
            } => Some(((requester, target), true)),
            Self::FollowRequestApproved { requester, target }
            | Self::FollowRequestRejected {
                requester, target, ..
            }
            | Self::FollowRequestWithdrawn {
                requester, target, ..
            } => Some(((requester, target), false)),
            _ => None,
        }
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
            Self::FollowRequested {
                requester, target, ..
            }
            | Self::FollowRequestApproved { requester, target }
            | Self::FollowRequestRejected {
                requester, target, ..
            }
            | Self::FollowRequestWithdrawn {
                requester, target, ..
            } => (requester, target),
            Self::FollowPreferencesChanged {
                follower, followee, ..
            } => (follower, followee),
            Self::SuggestionDismissed { user, dismissed } => (user, dismissed),
        }
    }

    /// The preferences the event gives a follow (or a request, for the follow its approval
    /// makes): `((follower, followee), prefs)`.
    pub fn prefs_given(&self) -> Option<((UserId, UserId), FollowPrefs)> {
        let (pair, show_reposts, notify) = match *self {
            Self::FollowPreferencesChanged {
                follower,
                followee,
                show_reposts,
                notify,
            } => ((follower, followee), show_reposts, notify),
            Self::FollowRequested {
                requester,
                target,
                show_reposts,
                notify,
            } => ((requester, target), show_reposts, notify),
            _ => return None,
        };
        let prefs = FollowPrefs {
            show_reposts,
            notify,
        };
        Some((pair, prefs))
    }

    /// The preferences event for `(follower, followee)`.
    fn prefs(follower: UserId, followee: UserId, prefs: FollowPrefs) -> Self {
        Self::FollowPreferencesChanged {
            follower,
            followee,
            show_reposts: prefs.show_reposts,
            notify: prefs.notify,
        }
    }
}

fn yes() -> bool {
    true
}

fn is_yes(value: &bool) -> bool {
    *value
}

fn is_no(value: &bool) -> bool {
    !*value
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

/// What the decision needs to know beyond the pair: the actor's following count (follows and
/// pending requests), read from the actor's guard row under lock, the limit in force (rule 3),
/// and whether the target's account is locked (read under a shared lock).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FollowBudget {
    /// How many users the actor follows or has asked to follow now.
    pub following: u32,
    /// `follow_limit`.
    pub limit: u32,
    /// Whether the target approves their followers (a follow becomes a request).
    pub target_locked: bool,
}

impl FollowBudget {
    /// A budget that never refuses; for folds and tests that do not exercise rule 3.
    pub fn unlimited() -> Self {
        Self {
            following: 0,
            limit: u32::MAX,
            target_locked: false,
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
    /// Pending follow requests (requester, target): at most one per direction, never beside a
    /// follow in the same direction or a block either way.
    #[serde(default)]
    requests: Vec<(UserId, UserId)>,
    /// The preferences of a follow or a pending request that are not the defaults (issue 44).
    #[serde(default)]
    prefs: Vec<(UserId, UserId, FollowPrefs)>,
    /// Dismissed suggestions (user, dismissed): at most one per direction, for good (issue
    /// 46).
    #[serde(default)]
    dismissals: Vec<(UserId, UserId)>,
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

    fn requested(&self, from: UserId, to: UserId) -> bool {
        self.requests.contains(&(from, to))
    }

    /// The facts, seen from `from`'s side.
    pub fn facts(&self, from: UserId, to: UserId) -> Facts {
        Facts {
            following: self.follows(from, to),
            followed_by: self.follows(to, from),
            blocking: self.blocks(from, to),
            blocked_by: self.blocks(to, from),
            requested: self.requested(from, to),
            requested_by: self.requested(to, from),
        }
    }

    /// `from`'s relation to `to`, with `muting` as it stands at `now` and the follow's
    /// preferences (for answers to `from`).
    pub fn relation(&self, from: UserId, to: UserId, now: DateTime<Utc>) -> Relation {
        let facts = self.facts(from, to);
        let prefs = facts.following.then(|| self.prefs(from, to));
        Relation::new(from, to, facts)
            .with_muting(self.muting(from, to, now))
            .with_prefs(prefs)
    }

    /// The preferences of `follower`'s follow (or request) of `followee`.
    pub fn prefs(&self, follower: UserId, followee: UserId) -> FollowPrefs {
        let found = self
            .prefs
            .iter()
            .find(|p| (p.0, p.1) == (follower, followee));
        found.map(|p| p.2).unwrap_or_default()
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
            RelationCommand::Follow { prefs, .. } => {
                let before = self.prefs(actor, target);
                return Self::decide_follow(facts, (actor, target), (before, prefs), budget);
            }
            RelationCommand::Unfollow { .. } if facts.following => {
                vec![RelationEvent::Unfollowed {
                    follower: actor,
                    followee: target,
                    cause: UnfollowCause::Unfollow,
                }]
            }
            RelationCommand::Unfollow { .. } if facts.requested => {
                vec![RelationEvent::FollowRequestWithdrawn {
                    requester: actor,
                    target,
                    cause: RequestEndCause::Asked,
                }]
            }
            RelationCommand::Block { .. } if !facts.blocking => {
                Self::decide_block(facts, actor, target)
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
            RelationCommand::ApproveRequest { .. } if facts.requested_by => {
                self.decide_approval(target, actor)
            }
            RelationCommand::RejectRequest { .. } if facts.requested_by => {
                vec![RelationEvent::FollowRequestRejected {
                    requester: target,
                    target: actor,
                    cause: RequestEndCause::Asked,
                }]
            }
            RelationCommand::Mute { until, now, .. } => self.decide_mute(actor, target, until, now),
            RelationCommand::Dismiss { .. } if !self.dismissals.contains(&(actor, target)) => {
                vec![RelationEvent::SuggestionDismissed {
                    user: actor,
                    dismissed: target,
                }]
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
            | RelationCommand::ApproveRequest { .. }
            | RelationCommand::RejectRequest { .. }
            | RelationCommand::Unmute { .. }
            | RelationCommand::Dismiss { .. } => vec![],
        };
        Ok(events)
    }

    /// An approval of `requester`'s request to follow `target`: the follow, with the request's
    /// preferences.
    fn decide_approval(&self, requester: UserId, target: UserId) -> Vec<RelationEvent> {
        let mut events = vec![
            RelationEvent::FollowRequestApproved { requester, target },
            RelationEvent::Followed {
                follower: requester,
                followee: target,
            },
        ];
        let prefs = self.prefs(requester, target);
        if prefs != FollowPrefs::default() {
            events.push(RelationEvent::prefs(requester, target, prefs));
        }
        events
    }

    /// A follow: refused across a block or past the limit; when it holds, only a change of
    /// its preferences (`prefs`: before, and as the command gives them); nothing when it is
    /// asked already (a request keeps the preferences it was made with); a request, with its
    /// preferences, when the target is locked; a new follow followed by its preferences when
    /// they are not the defaults.
    fn decide_follow(
        facts: Facts,
        (actor, target): (UserId, UserId),
        (before, change): (FollowPrefs, PrefsChange),
        budget: FollowBudget,
    ) -> Result<Vec<RelationEvent>, RelationError> {
        if facts.blocked_by {
            return Err(RelationError::Blocked);
        }
        if facts.blocking {
            return Err(RelationError::BlockingTarget);
        }
        if facts.requested {
            return Ok(vec![]);
        }
        if facts.following {
            let after = change.applied_to(before);
            return Ok(match after == before {
                true => vec![],
                false => vec![RelationEvent::prefs(actor, target, after)],
            });
        }
        // A pending request counts toward the limit like a follow.
        if budget.following >= budget.limit {
            return Err(RelationError::FollowLimitReached {
                limit: budget.limit,
            });
        }
        // A new follow starts from the defaults.
        let prefs = change.applied_to(FollowPrefs::default());
        if budget.target_locked {
            return Ok(vec![RelationEvent::FollowRequested {
                requester: actor,
                target,
                show_reposts: prefs.show_reposts,
                notify: prefs.notify,
            }]);
        }
        let mut events = vec![RelationEvent::Followed {
            follower: actor,
            followee: target,
        }];
        if prefs != FollowPrefs::default() {
            events.push(RelationEvent::prefs(actor, target, prefs));
        }
        Ok(events)
    }

    /// A block: the follows both ways and the requests both ways end first, then the block.
    fn decide_block(facts: Facts, actor: UserId, target: UserId) -> Vec<RelationEvent> {
        // Unfollows and ended requests first: a reader that sees a prefix of this
        // transaction may see neither follow nor block, never both.
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
        if facts.requested {
            events.push(RelationEvent::FollowRequestWithdrawn {
                requester: actor,
                target,
                cause: RequestEndCause::Block,
            });
        }
        if facts.requested_by {
            events.push(RelationEvent::FollowRequestRejected {
                requester: target,
                target: actor,
                cause: RequestEndCause::Block,
            });
        }
        events.push(RelationEvent::Blocked {
            blocker: actor,
            blocked: target,
        });
        events
    }

    /// A mute, `until` a time or for good.
    fn decide_mute(
        &self,
        actor: UserId,
        target: UserId,
        until: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Vec<RelationEvent> {
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

    /// Folds one event into the state. Never fails: events are facts.
    pub fn apply(&mut self, event: RelationEvent) {
        self.apply_prefs(&event);
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
            RelationEvent::FollowRequested { .. }
            | RelationEvent::FollowRequestApproved { .. }
            | RelationEvent::FollowRequestRejected { .. }
            | RelationEvent::FollowRequestWithdrawn { .. } => {
                if let Some((request, pending)) = event.request() {
                    self.requests.retain(|&r| r != request);
                    if pending {
                        self.requests.push(request);
                    }
                }
            }
            RelationEvent::SuggestionDismissed { user, dismissed } => {
                if !self.dismissals.contains(&(user, dismissed)) {
                    self.dismissals.push((user, dismissed));
                }
            }
            RelationEvent::FollowPreferencesChanged { .. } => {}
        }
    }

    /// What `event` does to the preferences: set by their event, ended with the follow or the
    /// request they belong to (an approval keeps them: the follow is the request's).
    fn apply_prefs(&mut self, event: &RelationEvent) {
        if let Some((pair, prefs)) = event.prefs_given() {
            self.keep_prefs(pair, prefs);
            return;
        }
        let ended = match *event {
            RelationEvent::Unfollowed {
                follower, followee, ..
            } => (follower, followee),
            RelationEvent::FollowRequestRejected {
                requester, target, ..
            }
            | RelationEvent::FollowRequestWithdrawn {
                requester, target, ..
            } => (requester, target),
            RelationEvent::Followed { .. }
            | RelationEvent::Blocked { .. }
            | RelationEvent::Unblocked { .. }
            | RelationEvent::Muted { .. }
            | RelationEvent::Unmuted { .. }
            | RelationEvent::FollowRequested { .. }
            | RelationEvent::FollowPreferencesChanged { .. }
            | RelationEvent::SuggestionDismissed { .. }
            | RelationEvent::FollowRequestApproved { .. } => return,
        };
        self.prefs.retain(|p| (p.0, p.1) != ended);
    }

    /// Keeps `prefs` for `pair` (the defaults: nothing kept).
    fn keep_prefs(&mut self, pair: (UserId, UserId), prefs: FollowPrefs) {
        self.prefs.retain(|p| (p.0, p.1) != pair);
        if prefs != FollowPrefs::default() {
            self.prefs.push((pair.0, pair.1, prefs));
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
        // The follower's (or requester's) count goes down.
        RelationCommand::RemoveFollower { target, .. }
        | RelationCommand::RejectRequest { target, .. } => vec![target],
        RelationCommand::Block { actor, target } => {
            let mut users = vec![actor, target];
            users.sort_unstable();
            users
        }
        // An approval turns a request into a follow: the requester's count stays.
        RelationCommand::Unblock { .. }
        | RelationCommand::ApproveRequest { .. }
        | RelationCommand::Mute { .. }
        | RelationCommand::Unmute { .. }
        | RelationCommand::Dismiss { .. } => vec![],
    }
}

/// How each user's following count (follows and pending requests) changes with these events,
/// in ascending user order.
pub fn following_deltas(events: &[RelationEvent]) -> Vec<(UserId, i32)> {
    let mut deltas: Vec<(UserId, i32)> = Vec::new();
    for event in events {
        let (user, delta) = match *event {
            RelationEvent::Followed { follower, .. } => (follower, 1),
            RelationEvent::Unfollowed { follower, .. } => (follower, -1),
            RelationEvent::FollowRequested { requester, .. } => (requester, 1),
            RelationEvent::FollowRequestApproved { requester, .. }
            | RelationEvent::FollowRequestRejected { requester, .. }
            | RelationEvent::FollowRequestWithdrawn { requester, .. } => (requester, -1),
            RelationEvent::Blocked { .. }
            | RelationEvent::Unblocked { .. }
            | RelationEvent::Muted { .. }
            | RelationEvent::Unmuted { .. }
            | RelationEvent::FollowPreferencesChanged { .. }
            | RelationEvent::SuggestionDismissed { .. } => continue,
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
