//! The checker finds each kind of anomaly in a history made to hold it, and none in a clean
//! one (so that a trial reporting zero means something).

use std::time::Duration;

use super::check::{check, Change, Logged};
use super::history::{Facts, Op, Outcome, Position, PostRef, Verb};

fn op(verb: Verb, actor: i64, target: i64, key: &str, times: (u64, u64), outcome: Outcome) -> Op {
    Op {
        client: 0,
        instance: 0,
        verb,
        actor,
        target,
        key: verb.writes().then(|| key.to_owned()),
        min_position: None,
        post: None,
        invoked: Duration::from_millis(times.0),
        completed: Duration::from_millis(times.1),
        outcome,
    }
}

fn ok_at(at: Position, facts: Facts) -> Outcome {
    Outcome::Ok {
        changed: true,
        position: Some(at),
        facts: Some(facts),
    }
}

fn read(facts: Facts) -> Outcome {
    Outcome::Ok {
        changed: false,
        position: None,
        facts: Some(facts),
    }
}

fn logged(at: Position, request: &str, change: Change) -> Logged {
    Logged {
        at,
        request: request.to_owned(),
        change,
    }
}

const FOLLOWING: Facts = Facts {
    following: true,
    followed_by: false,
    blocking: false,
    blocked_by: false,
    requested: false,
    requested_by: false,
};

fn one(kind: &str, ops: &[Op], log: &[Logged], limit: usize) {
    let found = check(ops, log, limit);
    assert_eq!(found.count(kind), 1, "{kind}: {found:?}");
    assert_eq!(found.total(), 1, "{found:?}");
}

#[test]
fn a_clean_history_has_no_anomaly() {
    let ops = [
        op(Verb::Follow, 1, 2, "a", (0, 5), ok_at((10, 1), FOLLOWING)),
        op(Verb::Status, 1, 2, "", (6, 7), read(FOLLOWING)),
        op(Verb::Block, 3, 1, "b", (8, 9), Outcome::Unknown),
        op(
            Verb::Block,
            3,
            1,
            "b",
            (20, 21),
            ok_at(
                (12, 1),
                Facts {
                    blocking: true,
                    ..Facts::default()
                },
            ),
        ),
        op(
            Verb::Follow,
            1,
            3,
            "c",
            (22, 23),
            Outcome::Refused("BLOCKED".into()),
        ),
    ];
    let log = [
        logged((10, 1), "a", Change::Follow(1, 2)),
        logged((12, 1), "b", Change::Block(3, 1)),
    ];
    let found = check(&ops, &log, 5);
    assert_eq!(found.total(), 0, "{found:?}");
}

#[test]
fn an_acknowledged_write_missing_from_the_log_is_found() {
    let ops = [op(
        Verb::Follow,
        1,
        2,
        "a",
        (0, 5),
        ok_at((10, 1), FOLLOWING),
    )];
    let found = check(&ops, &[], 5);
    assert_eq!(found.count("acknowledged write missing from the log"), 1);
    // Its answer (following) is then unlike the log too.
    assert_eq!(found.count("write's answer unlike the log after it"), 1);
}

#[test]
fn a_key_in_two_transactions_is_found() {
    let log = [
        logged((10, 1), "a", Change::Follow(1, 2)),
        logged((11, 1), "a", Change::Follow(1, 3)),
    ];
    one(
        "one Idempotency-Key in two transactions, or two answers",
        &[],
        &log,
        5,
    );
}

#[test]
fn a_write_earlier_in_the_log_than_one_acknowledged_before_it_was_sent_is_found() {
    let ops = [
        op(Verb::Follow, 1, 2, "a", (0, 5), ok_at((20, 1), FOLLOWING)),
        op(Verb::Follow, 3, 4, "b", (6, 9), ok_at((15, 1), FOLLOWING)),
    ];
    let log = [
        logged((15, 1), "b", Change::Follow(3, 4)),
        logged((20, 1), "a", Change::Follow(1, 2)),
    ];
    one("real-time order violated", &ops, &log, 5);
}

#[test]
fn a_read_missing_its_min_position_is_found_and_one_without_it_is_not() {
    let log = [logged((10, 1), "a", Change::Follow(1, 2))];
    let mut stale = op(Verb::Status, 1, 2, "", (6, 7), read(Facts::default()));
    assert_eq!(
        check(&[stale.clone()], &log, 5).total(),
        0,
        "no min_position: any prefix"
    );
    stale.min_position = Some((10, 1));
    one(
        "read with min_position missing an event at or below it, or no prefix's state",
        &[stale],
        &log,
        5,
    );
}

#[test]
fn a_read_no_prefix_gives_is_found() {
    let impossible = Facts {
        following: true,
        blocking: true,
        ..Facts::default()
    };
    let ops = [op(Verb::Status, 1, 2, "", (6, 7), read(impossible))];
    let log = [logged((10, 1), "a", Change::Follow(1, 2))];
    one(
        "read with min_position missing an event at or below it, or no prefix's state",
        &ops,
        &log,
        5,
    );
}

#[test]
fn a_write_answered_unlike_the_log_is_found() {
    let ops = [op(
        Verb::Follow,
        1,
        2,
        "a",
        (0, 5),
        ok_at((10, 1), Facts::default()),
    )];
    let log = [logged((10, 1), "a", Change::Follow(1, 2))];
    one("write's answer unlike the log after it", &ops, &log, 5);
}

#[test]
fn rule_3_exceeded_at_a_prefix_is_found() {
    let log = [
        logged((10, 1), "a", Change::Follow(1, 2)),
        logged((11, 1), "b", Change::Follow(1, 3)),
        logged((12, 1), "c", Change::Unfollow(1, 3)),
    ];
    one("rule 3 exceeded at a prefix", &[], &log, 1);
}

#[test]
fn a_transaction_is_one_prefix_whatever_order_its_events_are_in() {
    // A group's transaction: the block (decided first) ends 1's follow of 3, then 1 follows
    // 4; stream order put the follow first. Its readers see both or neither.
    let log = [
        logged((10, 1), "a", Change::Follow(1, 2)),
        logged((11, 1), "b", Change::Follow(1, 3)),
        logged((12, 1), "d", Change::Follow(1, 4)),
        logged((12, 2), "c", Change::Unfollow(1, 3)),
        logged((12, 3), "c", Change::Block(3, 1)),
    ];
    assert_eq!(check(&[], &log, 2).total(), 0);
    let follows = op(Verb::Follow, 1, 4, "d", (0, 5), ok_at((12, 1), FOLLOWING));
    assert_eq!(
        check(&[follows], &log, 2).total(),
        0,
        "its answer: what its decision left"
    );
}

#[test]
fn a_refusal_the_log_contradicts_is_found() {
    let log = [logged((10, 1), "a", Change::Block(2, 1))];
    let refused = Outcome::Refused("BLOCKED".into());
    // Blocked before it was sent: justified.
    let after = op(Verb::Follow, 1, 2, "b", (20, 21), refused.clone());
    assert_eq!(check(&[after], &log, 5).total(), 0);
    // Sent and answered before the block was even sent: no prefix in its window blocks.
    let block = op(
        Verb::Block,
        2,
        1,
        "a",
        (30, 31),
        ok_at(
            (10, 1),
            Facts {
                blocking: true,
                ..Facts::default()
            },
        ),
    );
    let before = op(Verb::Follow, 1, 2, "c", (20, 21), refused);
    one("refusal the log contradicts", &[block, before], &log, 5);
}

#[test]
fn a_retry_that_settles_an_unknown_outcome_is_judged_from_its_first_attempt() {
    let log = [
        logged((10, 1), "a", Change::Follow(1, 2)),
        logged((20, 1), "b", Change::Follow(3, 4)),
    ];
    let ops = [
        op(Verb::Follow, 1, 2, "a", (0, 5), Outcome::Unknown),
        op(Verb::Follow, 3, 4, "b", (6, 9), ok_at((20, 1), FOLLOWING)),
        // The retry replays the first attempt's commit, earlier than b.
        op(Verb::Follow, 1, 2, "a", (30, 31), ok_at((10, 1), FOLLOWING)),
    ];
    assert_eq!(
        check(&ops, &log, 5).total(),
        0,
        "{:?}",
        check(&ops, &log, 5)
    );
}

#[test]
fn a_key_in_the_log_answered_as_if_nothing_changed_is_found() {
    let log = [logged((10, 1), "a", Change::Follow(1, 2))];
    let unchanged = Outcome::Ok {
        changed: false,
        position: None,
        facts: Some(FOLLOWING),
    };
    let ops = [
        op(Verb::Follow, 1, 2, "a", (0, 5), Outcome::Unknown),
        op(Verb::Follow, 1, 2, "a", (6, 9), unchanged),
    ];
    one(
        "one Idempotency-Key in two transactions, or two answers",
        &ops,
        &log,
        5,
    );
}

#[test]
fn a_read_of_a_state_from_after_it_was_answered_is_found() {
    // 1 followed 2 only after the read was answered (the follow was sent after it).
    let log = [logged((10, 1), "a", Change::Follow(1, 2))];
    let ops = [
        op(Verb::Status, 1, 2, "", (0, 5), read(FOLLOWING)),
        op(Verb::Follow, 1, 2, "a", (6, 9), ok_at((10, 1), FOLLOWING)),
    ];
    one(
        "read with min_position missing an event at or below it, or no prefix's state",
        &ops,
        &log,
        5,
    );
}

#[test]
fn an_outcome_never_settled_is_found() {
    let ops = [op(Verb::Follow, 1, 2, "a", (0, 5), Outcome::Unknown)];
    one("outcome never settled", &ops, &[], 5);
}

/// `actor`'s like (or repost) of a `followers` post of `author`'s, with `outcome`.
fn on_post(
    verb: Verb,
    actor: i64,
    author: i64,
    key: &str,
    times: (u64, u64),
    outcome: Outcome,
) -> Op {
    let mut op = op(verb, actor, author, key, times, outcome);
    op.post = Some(PostRef {
        id: "p".into(),
        followers_only: true,
    });
    op
}

fn accepted(at: Position) -> Outcome {
    Outcome::Ok {
        changed: true,
        position: Some(at),
        facts: None,
    }
}

#[test]
fn likes_and_reposts_are_judged_by_the_post_rules_at_a_prefix() {
    // 1 follows 2 at 10; 2's followers-only post is published at 11 ("p").
    let log = [
        logged((10, 1), "f", Change::Follow(1, 2)),
        logged((11, 1), "p", Change::Other),
        logged((12, 1), "l", Change::Other),
    ];
    let follow = op(Verb::Follow, 1, 2, "f", (0, 5), ok_at((10, 1), FOLLOWING));
    let publish = op(Verb::Publish, 2, 2, "p", (6, 7), accepted((11, 1)));
    let clean = [
        follow.clone(),
        publish.clone(),
        // A follower's like, accepted; a stranger's, NOT_FOUND; a follower's repost of a
        // followers post, NOT_REPOSTABLE.
        on_post(Verb::Like, 1, 2, "l", (8, 9), accepted((12, 1))),
        on_post(
            Verb::Like,
            3,
            2,
            "m",
            (8, 9),
            Outcome::Refused("NOT_FOUND".into()),
        ),
        on_post(
            Verb::Repost,
            1,
            2,
            "r",
            (8, 9),
            Outcome::Refused("NOT_REPOSTABLE".into()),
        ),
    ];
    let found = check(&clean, &log, 5);
    assert_eq!(found.total(), 0, "{found:?}");
    // Issue 43's defect: a follower's like refused 404 on a post they could read.
    let refused = [
        follow.clone(),
        publish.clone(),
        on_post(
            Verb::Like,
            1,
            2,
            "l",
            (8, 9),
            Outcome::Refused("NOT_FOUND".into()),
        ),
    ];
    one("refusal the log contradicts", &refused, &log[..2], 5);
    // A stranger's like accepted.
    let stranger = [
        follow,
        publish,
        on_post(Verb::Like, 3, 2, "l", (8, 9), accepted((12, 1))),
    ];
    one(
        "like or repost accepted where no prefix allows it",
        &stranger,
        &log,
        5,
    );
}

#[test]
fn an_acknowledged_post_missing_from_the_log_is_found() {
    let ops = [op(Verb::Publish, 2, 2, "p", (6, 7), accepted((11, 1)))];
    let elsewhere = [logged((11, 1), "other", Change::Other)];
    one(
        "acknowledged write missing from the log",
        &ops,
        &elsewhere,
        5,
    );
}

#[test]
fn a_pending_request_counts_toward_rule_3_until_it_ends() {
    let asked = Facts {
        requested: true,
        ..Facts::default()
    };
    let requested = op(Verb::Follow, 1, 11, "r", (0, 5), ok_at((10, 1), asked));
    let approved = op(
        Verb::Approve,
        11,
        1,
        "a",
        (6, 7),
        ok_at(
            (11, 2),
            Facts {
                followed_by: true,
                ..Facts::default()
            },
        ),
    );
    let log = [
        logged((10, 1), "r", Change::Request(1, 11)),
        logged((11, 1), "a", Change::RequestEnded(1, 11)),
        logged((11, 2), "a", Change::Follow(1, 11)),
    ];
    // The request, then its approval: one follow at every prefix, under a limit of one.
    let found = check(&[requested.clone(), approved.clone()], &log, 1);
    assert_eq!(found.total(), 0, "{found:?}");
    // A follow of another user while the request is pending exceeds it.
    let over = [
        logged((10, 1), "r", Change::Request(1, 11)),
        logged((10, 2), "f", Change::Follow(1, 2)),
    ];
    let follow = op(Verb::Follow, 1, 2, "f", (0, 5), ok_at((10, 2), FOLLOWING));
    let found = check(&[requested, follow], &over, 1);
    assert_eq!(found.count("rule 3 exceeded at a prefix"), 1, "{found:?}");
}

#[test]
fn a_follow_of_a_locked_user_that_skips_the_request_is_found() {
    let log = [logged((10, 1), "r", Change::Follow(1, 11))];
    let ops = [op(
        Verb::Follow,
        1,
        11,
        "r",
        (0, 5),
        ok_at((10, 1), FOLLOWING),
    )];
    one("acknowledged write missing from the log", &ops, &log, 5);
}

#[test]
fn a_change_in_flight_below_the_window_may_have_committed_after_the_refusal() {
    // 1 follows 2 in a transaction with the lower xid (10) that was still in flight when
    // another (11, by 3) was acknowledged; 1's like of 2's followers post, sent after that
    // acknowledgement and answered before the follow's, is refused NOT_FOUND. The log puts
    // the follow first; the like may still have been judged before it committed.
    let log = [
        logged((9, 1), "p", Change::Other),
        logged((10, 3), "f", Change::Follow(1, 2)),
        logged((11, 2), "x", Change::Follow(3, 4)),
    ];
    let publish = op(Verb::Publish, 2, 2, "p", (0, 1), accepted((9, 1)));
    let other = op(Verb::Follow, 3, 4, "x", (2, 5), ok_at((11, 2), FOLLOWING));
    let like = |follow_answered: u64| {
        [
            publish.clone(),
            op(
                Verb::Follow,
                1,
                2,
                "f",
                (2, follow_answered),
                ok_at((10, 3), FOLLOWING),
            ),
            other.clone(),
            on_post(
                Verb::Like,
                1,
                2,
                "l",
                (6, 7),
                Outcome::Refused("NOT_FOUND".into()),
            ),
        ]
    };
    let found = check(&like(8), &log, 5);
    assert_eq!(found.total(), 0, "{found:?}");
    // The follow acknowledged before the like was sent: the refusal is contradicted.
    one("refusal the log contradicts", &like(5), &log, 5);
}
