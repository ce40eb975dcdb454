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
    RelationCommand::Follow {
        actor: u(actor),
        target: u(target),
    }
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
    };
    assert_eq!(
        given_with_budget(&[], follow(A, B), full),
        Err(RelationError::FollowLimitReached { limit: 1000 })
    );
    let room = FollowBudget {
        following: 999,
        limit: 1000,
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

#[test]
fn events_serialise_as_versioned_json() {
    let event = unfollowed(A, B, UnfollowCause::Block);
    assert_eq!(event.event_type(), "Unfollowed");
    assert_eq!(event.event_version(), "1");
    assert_eq!(
        serde_json::to_value(event).unwrap(),
        serde_json::json!({"Unfollowed": {"follower": 1, "followee": 2, "cause": "block"}})
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

/// SPEC.md's rules, stated over two sets of directed edges.
#[derive(Default)]
struct Reference {
    follows: BTreeSet<(i64, i64)>,
    blocks: BTreeSet<(i64, i64)>,
    limit: usize,
}

impl Reference {
    fn following_count(&self, user: i64) -> usize {
        self.follows
            .iter()
            .filter(|(from, _)| *from == user)
            .count()
    }

    fn run(&mut self, kind: u8, a: i64, b: i64) -> Outcome {
        if a == b {
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
                if self.follows.contains(&(a, b)) {
                    false
                } else if self.following_count(a) >= self.limit {
                    return Outcome::Refused(RelationError::FollowLimitReached {
                        limit: self.limit as u32,
                    });
                } else {
                    self.follows.insert((a, b))
                }
            }
            1 => self.follows.remove(&(a, b)),
            2 => {
                let changed = self.blocks.insert((a, b));
                if changed {
                    self.follows.remove(&(a, b));
                    self.follows.remove(&(b, a));
                }
                changed
            }
            3 => self.blocks.remove(&(a, b)),
            // Remove follower b: follows(b, a) ends; nothing else changes.
            _ => self.follows.remove(&(b, a)),
        };
        Outcome::Changed(changed)
    }
}

/// The domain as the store runs it: one aggregate per pair, a guard count per user.
#[derive(Default)]
struct Store {
    pairs: HashMap<PairId, RelationPair>,
    guards: HashMap<UserId, i64>,
    limit: u32,
}

impl Store {
    fn run(&mut self, command: RelationCommand) -> Outcome {
        let Ok(pair_id) = command.pair() else {
            return Outcome::Refused(RelationError::SelfRelation);
        };
        let budget = FollowBudget {
            following: *self.guards.get(&command.actor()).unwrap_or(&0) as u32,
            limit: self.limit,
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
        steps in prop::collection::vec((0u8..5, 1i64..6, 1i64..6), 1..120),
    ) {
        let mut reference = Reference { limit, ..Reference::default() };
        let mut store = Store { limit: limit as u32, ..Store::default() };
        for (kind, a, b) in steps {
            let command = match kind {
                0 => follow(a, b),
                1 => unfollow(a, b),
                2 => block(a, b),
                3 => unblock(a, b),
                _ => RelationCommand::RemoveFollower { actor: u(a), target: u(b) },
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
                    // Rule 5: never a follow beside a block.
                    prop_assert!(!((facts.following || facts.followed_by) && (facts.blocking || facts.blocked_by)));
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
