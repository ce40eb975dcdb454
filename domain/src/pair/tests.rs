//! Given prior events, when a command, then these events or this error: one test per rule of
//! SPEC.md, then a property test against a reference model of all the rules.

use std::collections::{BTreeSet, HashMap};

use proptest::prelude::*;

use super::*;
use crate::relation::RelationState;

fn u(id: i64) -> UserId {
    UserId::try_from(id).unwrap()
}

const A: i64 = 1;
const B: i64 = 2;

fn followed(follower: i64, followee: i64) -> RelationEvent {
    RelationEvent::Followed {
        follower: u(follower),
        followee: u(followee),
    }
}

fn unfollowed(follower: i64, followee: i64, cause: UnfollowCause) -> RelationEvent {
    RelationEvent::Unfollowed {
        follower: u(follower),
        followee: u(followee),
        cause,
    }
}

fn blocked(blocker: i64, blocked: i64) -> RelationEvent {
    RelationEvent::Blocked {
        blocker: u(blocker),
        blocked: u(blocked),
    }
}

fn unblocked(blocker: i64, blocked: i64) -> RelationEvent {
    RelationEvent::Unblocked {
        blocker: u(blocker),
        blocked: u(blocked),
    }
}

fn follow(actor: i64, target: i64) -> RelationCommand {
    follow_with(actor, target, None, None)
}

fn follow_with(
    actor: i64,
    target: i64,
    show_reposts: Option<bool>,
    notify: Option<bool>,
) -> RelationCommand {
    RelationCommand::Follow {
        actor: u(actor),
        target: u(target),
        prefs: PrefsChange {
            show_reposts,
            notify,
        },
    }
}

fn prefs(follower: i64, followee: i64, show_reposts: bool, notify: bool) -> RelationEvent {
    RelationEvent::FollowPreferencesChanged {
        follower: u(follower),
        followee: u(followee),
        show_reposts,
        notify,
    }
}

/// The pair after `events`.
fn pair_after(events: &[RelationEvent]) -> RelationPair {
    let mut pair = RelationPair::default();
    for &event in events {
        pair.apply(event);
    }
    pair
}

// Issue 44: per-follow preferences.
#[test]
fn a_follow_with_other_preferences_than_the_defaults_records_them_after_it() {
    assert_eq!(
        given(&[], follow_with(1, 2, None, Some(true))),
        Ok(vec![followed(1, 2), prefs(1, 2, true, true)])
    );
    assert_eq!(
        given(&[], follow_with(1, 2, Some(true), Some(false))),
        Ok(vec![followed(1, 2)]),
        "the defaults, given, are no change"
    );
}

#[test]
fn following_again_changes_the_preferences_given_and_keeps_the_omitted() {
    let history = [followed(1, 2), prefs(1, 2, true, true)];
    assert_eq!(
        given(&history, follow_with(1, 2, Some(false), None)),
        Ok(vec![prefs(1, 2, false, true)])
    );
    assert_eq!(
        given(&history, follow_with(1, 2, None, Some(true))),
        Ok(vec![])
    );
    assert_eq!(given(&history, follow(1, 2)), Ok(vec![]));
    let now = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
    let relation = pair_after(&history).relation(u(1), u(2), now);
    assert!(relation.show_reposts && relation.notify);
    let other_side = pair_after(&history).relation(u(2), u(1), now);
    assert!(
        !other_side.show_reposts && !other_side.notify,
        "private to the follower"
    );
}

#[test]
fn an_unfollow_ends_the_preferences_and_a_new_follow_starts_from_the_defaults() {
    let history = [
        followed(1, 2),
        prefs(1, 2, false, true),
        unfollowed(1, 2, UnfollowCause::Unfollow),
    ];
    assert_eq!(given(&history, follow(1, 2)), Ok(vec![followed(1, 2)]));
    let pair = pair_after(&[&history[..], &[followed(1, 2)]].concat());
    assert_eq!(pair.prefs(u(1), u(2)), FollowPrefs::default());
}

#[test]
fn a_requests_preferences_are_its_approved_follows() {
    let asked = given_with_budget(&[], follow_with(1, 2, Some(false), None), locked());
    let request = RelationEvent::FollowRequested {
        requester: u(1),
        target: u(2),
        show_reposts: false,
        notify: false,
    };
    assert_eq!(asked, Ok(vec![request]));
    let approve = RelationCommand::ApproveRequest {
        actor: u(2),
        target: u(1),
    };
    let approved = given(&[request], approve).unwrap();
    assert_eq!(approved[1..], [followed(1, 2), prefs(1, 2, false, false)]);
    // While pending, a follow command changes nothing: the request keeps what it was made with.
    let again = follow_with(1, 2, None, Some(true));
    assert_eq!(given(&[request], again), Ok(vec![]));
    // A rejected request's go with it.
    let reject = RelationCommand::RejectRequest {
        actor: u(2),
        target: u(1),
    };
    let rejected = given(&[request], reject).unwrap();
    let pair = pair_after(&[&[request][..], &rejected[..]].concat());
    assert_eq!(pair.prefs(u(1), u(2)), FollowPrefs::default());
    // A request stored before the fourth round has no preferences: the defaults.
    let old: RelationEvent =
        serde_json::from_str(r#"{"FollowRequested":{"requester":1,"target":2}}"#).unwrap();
    assert_eq!(pair_after(&[old]).prefs(u(1), u(2)), FollowPrefs::default());
    let json = serde_json::to_string(&requested(1, 2)).unwrap();
    assert_eq!(
        json, r#"{"FollowRequested":{"requester":1,"target":2}}"#,
        "defaults left out"
    );
}

fn unfollow(actor: i64, target: i64) -> RelationCommand {
    RelationCommand::Unfollow {
        actor: u(actor),
        target: u(target),
    }
}

fn block(actor: i64, target: i64) -> RelationCommand {
    RelationCommand::Block {
        actor: u(actor),
        target: u(target),
    }
}

fn unblock(actor: i64, target: i64) -> RelationCommand {
    RelationCommand::Unblock {
        actor: u(actor),
        target: u(target),
    }
}

/// Given these events, when this command (with room to follow), then this result.
fn given(
    events: &[RelationEvent],
    command: RelationCommand,
) -> Result<Vec<RelationEvent>, RelationError> {
    given_with_budget(events, command, FollowBudget::unlimited())
}

fn given_with_budget(
    events: &[RelationEvent],
    command: RelationCommand,
    budget: FollowBudget,
) -> Result<Vec<RelationEvent>, RelationError> {
    let mut pair = RelationPair::default();
    for &event in events {
        pair.apply(event);
    }
    pair.decide(command, budget)
}

// Rule 1
#[test]
fn no_command_on_oneself() {
    for command in [follow(A, A), unfollow(A, A), block(A, A), unblock(A, A)] {
        assert_eq!(given(&[], command), Err(RelationError::SelfRelation));
    }
}

// Rule 2
#[test]
fn follow_appends_followed() {
    assert_eq!(given(&[], follow(A, B)), Ok(vec![followed(A, B)]));
}

#[test]
fn follow_is_refused_when_the_target_blocks_you() {
    assert_eq!(
        given(&[blocked(B, A)], follow(A, B)),
        Err(RelationError::Blocked)
    );
}

#[test]
fn follow_is_refused_when_you_block_the_target() {
    assert_eq!(
        given(&[blocked(A, B)], follow(A, B)),
        Err(RelationError::BlockingTarget)
    );
}

#[test]
fn being_blocked_is_reported_before_blocking_when_both_hold() {
    assert_eq!(
        given(&[blocked(A, B), blocked(B, A)], follow(A, B)),
        Err(RelationError::Blocked)
    );
}

#[test]
fn following_again_changes_nothing() {
    assert_eq!(given(&[followed(A, B)], follow(A, B)), Ok(vec![]));
}

#[test]
fn following_back_makes_friends() {
    let mut pair = RelationPair::default();
    pair.apply(followed(B, A));
    for event in pair
        .decide(follow(A, B), FollowBudget::unlimited())
        .unwrap()
    {
        pair.apply(event);
    }
    assert_eq!(
        pair.relation(u(A), u(B), chrono::Utc::now()).state,
        RelationState::Friends
    );
    assert_eq!(
        pair.relation(u(B), u(A), chrono::Utc::now()).state,
        RelationState::Friends
    );
}

// Rule 3
#[test]
fn follow_is_refused_at_the_limit() {
    let full = FollowBudget {
        following: 1000,
        limit: 1000,
        target_locked: false,
    };
    assert_eq!(
        given_with_budget(&[], follow(A, B), full),
        Err(RelationError::FollowLimitReached { limit: 1000 })
    );
    let room = FollowBudget {
        following: 999,
        limit: 1000,
        target_locked: false,
    };
    assert_eq!(
        given_with_budget(&[], follow(A, B), room),
        Ok(vec![followed(A, B)])
    );
}

#[test]
fn following_again_at_the_limit_is_still_unchanged_not_refused() {
    let full = FollowBudget {
        following: 5,
        limit: 5,
        target_locked: false,
    };
    assert_eq!(
        given_with_budget(&[followed(A, B)], follow(A, B), full),
        Ok(vec![])
    );
}

// Rule 4
#[test]
fn unfollow_appends_unfollowed() {
    assert_eq!(
        given(&[followed(A, B)], unfollow(A, B)),
        Ok(vec![unfollowed(A, B, UnfollowCause::Unfollow)])
    );
}

#[test]
fn unfollow_of_someone_not_followed_changes_nothing() {
    assert_eq!(given(&[], unfollow(A, B)), Ok(vec![]));
    assert_eq!(given(&[followed(B, A)], unfollow(A, B)), Ok(vec![]));
}

// Rule 5
#[test]
fn block_removes_both_follows_before_it_blocks() {
    assert_eq!(
        given(&[followed(A, B), followed(B, A)], block(A, B)),
        Ok(vec![
            unfollowed(A, B, UnfollowCause::Block),
            unfollowed(B, A, UnfollowCause::Block),
            blocked(A, B)
        ])
    );
    assert_eq!(
        given(&[followed(B, A)], block(A, B)),
        Ok(vec![unfollowed(B, A, UnfollowCause::Block), blocked(A, B)])
    );
    assert_eq!(given(&[], block(A, B)), Ok(vec![blocked(A, B)]));
}

#[test]
fn blocking_again_changes_nothing() {
    assert_eq!(given(&[blocked(A, B)], block(A, B)), Ok(vec![]));
}

#[test]
fn blocking_back_makes_a_mutual_block() {
    let mut pair = RelationPair::default();
    pair.apply(blocked(B, A));
    for event in pair.decide(block(A, B), FollowBudget::unlimited()).unwrap() {
        pair.apply(event);
    }
    assert_eq!(
        pair.relation(u(A), u(B), chrono::Utc::now()).state,
        RelationState::MutualBlock
    );
}

// Rule 6
#[test]
fn unblock_appends_unblocked_and_restores_no_follow() {
    let history = [
        followed(A, B),
        unfollowed(A, B, UnfollowCause::Block),
        blocked(A, B),
    ];
    assert_eq!(given(&history, unblock(A, B)), Ok(vec![unblocked(A, B)]));
    let mut pair = RelationPair::default();
    for event in history.into_iter().chain([unblocked(A, B)]) {
        pair.apply(event);
    }
    assert_eq!(
        pair.relation(u(A), u(B), chrono::Utc::now()).state,
        RelationState::None
    );
}

#[test]
fn unblock_of_someone_not_blocked_changes_nothing() {
    assert_eq!(given(&[], unblock(A, B)), Ok(vec![]));
    // Only the blocker can lift a block.
    assert_eq!(given(&[blocked(B, A)], unblock(A, B)), Ok(vec![]));
}

#[test]
fn guard_rows_cover_every_user_whose_count_can_change() {
    assert_eq!(guarded_users(follow(7, 3)), vec![u(7)]);
    assert_eq!(guarded_users(unfollow(7, 3)), vec![u(7)]);
    assert_eq!(guarded_users(block(7, 3)), vec![u(3), u(7)]);
    assert_eq!(guarded_users(unblock(7, 3)), vec![]);
    assert_eq!(
        following_deltas(&[
            unfollowed(7, 3, UnfollowCause::Block),
            unfollowed(3, 7, UnfollowCause::Block),
            blocked(7, 3)
        ]),
        vec![(u(3), -1), (u(7), -1)]
    );
}

fn locked() -> FollowBudget {
    FollowBudget {
        target_locked: true,
        ..FollowBudget::unlimited()
    }
}

fn requested(requester: i64, target: i64) -> RelationEvent {
    RelationEvent::FollowRequested {
        requester: u(requester),
        target: u(target),
        show_reposts: true,
        notify: false,
    }
}

#[test]
fn a_follow_of_a_locked_account_is_a_request_that_counts_toward_the_limit() {
    assert_eq!(
        given_with_budget(&[], follow(A, B), locked()),
        Ok(vec![requested(A, B)])
    );
    // Asking again, or following while asked, changes nothing.
    assert_eq!(
        given_with_budget(&[requested(A, B)], follow(A, B), locked()),
        Ok(vec![])
    );
    let full = FollowBudget {
        following: 3,
        limit: 3,
        target_locked: true,
    };
    assert_eq!(
        given_with_budget(&[], follow(A, B), full),
        Err(RelationError::FollowLimitReached { limit: 3 })
    );
    assert_eq!(
        given_with_budget(&[blocked(B, A)], follow(A, B), locked()),
        Err(RelationError::Blocked)
    );
    // Following already: locking later asks nothing of existing followers.
    assert_eq!(
        given_with_budget(&[followed(A, B)], follow(A, B), locked()),
        Ok(vec![])
    );
    assert_eq!(following_deltas(&[requested(A, B)]), vec![(u(A), 1)]);
}

#[test]
fn requests_end_by_approval_rejection_withdrawal_or_a_block() {
    let approve = RelationCommand::ApproveRequest {
        actor: u(B),
        target: u(A),
    };
    let reject = RelationCommand::RejectRequest {
        actor: u(B),
        target: u(A),
    };
    let approved = RelationEvent::FollowRequestApproved {
        requester: u(A),
        target: u(B),
    };
    assert_eq!(
        given(&[requested(A, B)], approve),
        Ok(vec![approved, followed(A, B)])
    );
    // The requester's count stays: a request became a follow.
    assert_eq!(following_deltas(&[approved, followed(A, B)]), vec![]);
    assert_eq!(guarded_users(approve), vec![]);
    let rejected = |cause| RelationEvent::FollowRequestRejected {
        requester: u(A),
        target: u(B),
        cause,
    };
    let withdrawn = |cause| RelationEvent::FollowRequestWithdrawn {
        requester: u(A),
        target: u(B),
        cause,
    };
    assert_eq!(
        given(&[requested(A, B)], reject),
        Ok(vec![rejected(RequestEndCause::Asked)])
    );
    assert_eq!(guarded_users(reject), vec![u(A)]);
    assert_eq!(
        given(&[requested(A, B)], unfollow(A, B)),
        Ok(vec![withdrawn(RequestEndCause::Asked)])
    );
    // Only the one asked can answer; nothing pending: nothing changes.
    let wrong_side = RelationCommand::ApproveRequest {
        actor: u(A),
        target: u(B),
    };
    assert_eq!(given(&[requested(A, B)], wrong_side), Ok(vec![]));
    assert_eq!(given(&[], approve), Ok(vec![]));
    assert_eq!(given(&[], reject), Ok(vec![]));
    // A block ends requests both ways, before the block.
    assert_eq!(
        given(&[requested(A, B)], block(B, A)),
        Ok(vec![rejected(RequestEndCause::Block), blocked(B, A)])
    );
    assert_eq!(
        given(&[requested(A, B)], block(A, B)),
        Ok(vec![withdrawn(RequestEndCause::Block), blocked(A, B)])
    );
    let mut pair = RelationPair::default();
    pair.apply(requested(A, B));
    let relation = pair.relation(u(A), u(B), chrono::Utc::now());
    assert!(relation.requested && !relation.requested_by && !relation.following);
    assert!(pair.relation(u(B), u(A), chrono::Utc::now()).requested_by);
}

#[test]
fn events_serialise_as_versioned_json() {
    let event = unfollowed(A, B, UnfollowCause::Block);
    assert_eq!(event.event_type(), "Unfollowed");
    assert_eq!(event.event_version(), "1");
    assert_eq!(
        serde_json::to_value(event).unwrap(),
        serde_json::json!({"Unfollowed": {"follower": 1, "followee": 2, "cause": "block"}})
    );
    let event = RelationEvent::FollowRequestRejected {
        requester: u(A),
        target: u(B),
        cause: RequestEndCause::Block,
    };
    assert_eq!(event.event_type(), "FollowRequestRejected");
    assert_eq!(
        serde_json::to_value(event).unwrap(),
        serde_json::json!({"FollowRequestRejected": {"requester": 1, "target": 2, "cause": "block"}})
    );
}

// ---- The property: any sequence of commands over a few users, decided pair by pair with
// guard counts as the store keeps them, matches a reference model written from SPEC.md's rules.

/// The outcome of a command, without the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Changed(bool),
    Refused(RelationError),
}

/// SPEC.md's rules, stated over sets of directed edges and the locked accounts.
#[derive(Default)]
struct Reference {
    follows: BTreeSet<(i64, i64)>,
    blocks: BTreeSet<(i64, i64)>,
    requests: BTreeSet<(i64, i64)>,
    locked: BTreeSet<i64>,
    limit: usize,
}

impl Reference {
    /// Follows and pending requests: what rule 3 counts.
    fn following_count(&self, user: i64) -> usize {
        let from = |edges: &BTreeSet<(i64, i64)>| edges.iter().filter(|e| e.0 == user).count();
        from(&self.follows) + from(&self.requests)
    }

    fn run(&mut self, kind: u8, a: i64, b: i64) -> Outcome {
        // Locking (7, 8) is about one account; every other kind about two users.
        if a == b && kind < 7 {
            return Outcome::Refused(RelationError::SelfRelation);
        }
        let changed = match kind {
            0 => {
                if self.blocks.contains(&(b, a)) {
                    return Outcome::Refused(RelationError::Blocked);
                }
                if self.blocks.contains(&(a, b)) {
                    return Outcome::Refused(RelationError::BlockingTarget);
                }
                if self.follows.contains(&(a, b)) || self.requests.contains(&(a, b)) {
                    false
                } else if self.following_count(a) >= self.limit {
                    return Outcome::Refused(RelationError::FollowLimitReached {
                        limit: self.limit as u32,
                    });
                } else if self.locked.contains(&b) {
                    self.requests.insert((a, b))
                } else {
                    self.follows.insert((a, b))
                }
            }
            // Unfollow, or withdraw a request.
            1 => self.follows.remove(&(a, b)) || self.requests.remove(&(a, b)),
            2 => {
                let changed = self.blocks.insert((a, b));
                if changed {
                    for edge in [(a, b), (b, a)] {
                        self.follows.remove(&edge);
                        self.requests.remove(&edge);
                    }
                }
                changed
            }
            3 => self.blocks.remove(&(a, b)),
            // Remove follower b: follows(b, a) ends; nothing else changes.
            4 => self.follows.remove(&(b, a)),
            // a approves b's request.
            5 => self.requests.remove(&(b, a)) && self.follows.insert((b, a)),
            // a rejects b's request.
            6 => self.requests.remove(&(b, a)),
            // a locks their account.
            7 => self.locked.insert(a),
            // a unlocks: every request to a is approved.
            _ => {
                let pending: Vec<_> = self.requests.iter().filter(|r| r.1 == a).copied().collect();
                for request in pending {
                    self.requests.remove(&request);
                    self.follows.insert(request);
                }
                self.locked.remove(&a)
            }
        };
        Outcome::Changed(changed)
    }
}

/// The domain as the store runs it: one aggregate per pair, a guard count per user, the
/// locked accounts.
#[derive(Default)]
struct Store {
    pairs: HashMap<PairId, RelationPair>,
    guards: HashMap<UserId, i64>,
    locked: BTreeSet<UserId>,
    limit: u32,
}

impl Store {
    /// Locks or unlocks `user`'s account; unlocking approves every pending request to them,
    /// pair by pair, as the store's one transaction does.
    fn set_locked(&mut self, user: UserId, locked: bool) -> Outcome {
        if !locked {
            let requesters: Vec<UserId> = self
                .pairs
                .iter()
                .flat_map(|(id, pair)| {
                    let other = id.other(user)?;
                    pair.facts(user, other).requested_by.then_some(other)
                })
                .collect();
            for requester in requesters {
                let approve = RelationCommand::ApproveRequest {
                    actor: user,
                    target: requester,
                };
                assert_eq!(self.run(approve), Outcome::Changed(true));
            }
            return Outcome::Changed(self.locked.remove(&user));
        }
        Outcome::Changed(self.locked.insert(user))
    }

    fn run(&mut self, command: RelationCommand) -> Outcome {
        let Ok(pair_id) = command.pair() else {
            return Outcome::Refused(RelationError::SelfRelation);
        };
        let budget = FollowBudget {
            following: *self.guards.get(&command.actor()).unwrap_or(&0) as u32,
            limit: self.limit,
            target_locked: self.locked.contains(&command.target()),
        };
        let pair = self.pairs.entry(pair_id).or_default();
        match pair.decide(command, budget) {
            Err(error) => Outcome::Refused(error),
            Ok(events) => {
                for &(user, delta) in &following_deltas(&events) {
                    assert!(
                        guarded_users(command).contains(&user),
                        "{command:?} changed the count of unguarded {user}"
                    );
                    *self.guards.entry(user).or_default() += i64::from(delta);
                }
                for &event in &events {
                    pair.apply(event);
                }
                Outcome::Changed(!events.is_empty())
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_command_sequences_follow_the_rules(
        limit in 1usize..4,
        steps in prop::collection::vec((0u8..9, 1i64..6, 1i64..6), 1..160),
    ) {
        let mut reference = Reference { limit, ..Reference::default() };
        let mut store = Store { limit: limit as u32, ..Store::default() };
        for (kind, a, b) in steps {
            let (actor, target) = (u(a), u(b));
            let command = match kind {
                0 => follow(a, b),
                1 => unfollow(a, b),
                2 => block(a, b),
                3 => unblock(a, b),
                4 => RelationCommand::RemoveFollower { actor, target },
                5 => RelationCommand::ApproveRequest { actor, target },
                6 => RelationCommand::RejectRequest { actor, target },
                _ => {
                    let locked = kind == 7;
                    prop_assert_eq!(store.set_locked(actor, locked), reference.run(kind, a, b));
                    continue;
                }
            };
            let expected = reference.run(kind, a, b);
            prop_assert_eq!(store.run(command), expected, "{:?}", command);
            for x in 1..6 {
                prop_assert_eq!(
                    store.guards.get(&u(x)).copied().unwrap_or(0),
                    reference.following_count(x) as i64
                );
                prop_assert!(reference.following_count(x) <= limit);
                for y in 1..6 {
                    let Ok(pair_id) = PairId::new(u(x), u(y)) else { continue };
                    let facts = store.pairs.get(&pair_id).map(|p| p.facts(u(x), u(y))).unwrap_or_default();
                    prop_assert_eq!(facts.following, reference.follows.contains(&(x, y)));
                    prop_assert_eq!(facts.blocking, reference.blocks.contains(&(x, y)));
                    prop_assert_eq!(facts.requested, reference.requests.contains(&(x, y)));
                    // Rule 5: never a follow or a pending request beside a block.
                    let asked = facts.following || facts.followed_by || facts.requested || facts.requested_by;
                    prop_assert!(!(asked && (facts.blocking || facts.blocked_by)));
                    // Never a request beside a follow of the same direction.
                    prop_assert!(!(facts.following && facts.requested));
                }
            }
        }
    }
}

#[test]
fn removing_a_follower_ends_their_follow_without_a_block() {
    let mut pair = RelationPair::default();
    for event in [followed(2, 1), followed(1, 2)] {
        pair.apply(event);
    }
    let remove = RelationCommand::RemoveFollower {
        actor: u(1),
        target: u(2),
    };
    let events = pair.decide(remove, FollowBudget::unlimited()).unwrap();
    assert_eq!(events, vec![unfollowed(2, 1, UnfollowCause::Removed)]);
    assert_eq!(guarded_users(remove), vec![u(2)]);
    let mut after = pair.clone();
    for event in events {
        after.apply(event);
    }
    let facts = after.facts(u(1), u(2));
    assert!(facts.following && !facts.followed_by && !facts.blocking && !facts.blocked_by);
    // Not a follower: nothing to remove.
    assert_eq!(
        after.decide(remove, FollowBudget::unlimited()).unwrap(),
        vec![]
    );
    // They may follow again.
    let again = after
        .decide(follow(2, 1), FollowBudget::unlimited())
        .unwrap();
    assert_eq!(again, vec![followed(2, 1)]);
}

#[test]
fn mutes_replace_their_end_and_lapse_by_themselves() {
    let t0 = chrono::DateTime::<chrono::Utc>::from_timestamp(1_000_000, 0).unwrap();
    let later = |secs| t0 + chrono::Duration::seconds(secs);
    let mute = |until: Option<i64>, now: i64| RelationCommand::Mute {
        actor: u(1),
        target: u(2),
        until: until.map(later),
        now: later(now),
    };
    let unmute = |now: i64| RelationCommand::Unmute {
        actor: u(1),
        target: u(2),
        now: later(now),
    };
    let mut pair = RelationPair::default();
    let run = |pair: &mut RelationPair, command| {
        let events = pair.decide(command, FollowBudget::unlimited()).unwrap();
        let changed = !events.is_empty();
        for event in events {
            pair.apply(event);
        }
        changed
    };
    assert!(run(&mut pair, mute(None, 0)));
    assert!(
        !run(&mut pair, mute(None, 1)),
        "the same endless mute again"
    );
    assert!(run(&mut pair, mute(Some(60), 2)), "a new end replaces it");
    assert!(pair.muting(u(1), u(2), later(59)));
    assert!(!pair.muting(u(1), u(2), later(60)), "it ends by itself");
    assert!(!pair.muting(u(2), u(1), later(10)), "one direction only");
    assert!(!run(&mut pair, unmute(61)), "nothing to lift once it ended");
    assert!(
        run(&mut pair, mute(None, 62)),
        "a mute after one that ended"
    );
    assert!(pair.relation(u(1), u(2), later(63)).muting);
    assert!(!pair.relation(u(2), u(1), later(63)).muting);
    assert!(run(&mut pair, unmute(64)));
    assert!(!pair.muting(u(1), u(2), later(65)));
    assert_eq!(guarded_users(mute(None, 0)), vec![]);
    // A mute changes no follow and no block.
    let facts = pair.facts(u(1), u(2));
    assert_eq!(facts, Facts::default());
}

#[test]
fn a_dismissal_is_kept_once_one_way_and_changes_no_relation() {
    let dismiss = |actor: i64, target: i64| RelationCommand::Dismiss {
        actor: u(actor),
        target: u(target),
    };
    let mut pair = RelationPair::default();
    let mut decided = Vec::new();
    for command in [dismiss(A, B), dismiss(A, B), dismiss(B, A)] {
        let events = pair.decide(command, FollowBudget::unlimited()).unwrap();
        decided.push(events.clone());
        for event in events {
            pair.apply(event);
        }
    }
    let dismissed = |user: i64, dismissed: i64| RelationEvent::SuggestionDismissed {
        user: u(user),
        dismissed: u(dismissed),
    };
    assert_eq!(
        decided,
        vec![vec![dismissed(A, B)], vec![], vec![dismissed(B, A)]],
        "once per direction, and again changes nothing"
    );
    assert_eq!(pair.facts(u(A), u(B)), Facts::default());
    assert_eq!(
        pair.decide(dismiss(A, A), FollowBudget::unlimited()),
        Err(RelationError::SelfRelation)
    );
    // Across a block too: a dismissal is the dismisser's own business.
    let mut blocked_pair = RelationPair::default();
    blocked_pair.apply(blocked(B, A));
    assert_eq!(
        blocked_pair.decide(dismiss(A, B), FollowBudget::unlimited()),
        Ok(vec![dismissed(A, B)])
    );
    assert_eq!(guarded_users(dismiss(A, B)), vec![]);
    assert!(following_deltas(&[dismissed(A, B)]).is_empty());
    assert_eq!(dismissed(A, B).event_type(), "SuggestionDismissed");
    assert_eq!(dismissed(A, B).users(), (u(A), u(B)));
}
