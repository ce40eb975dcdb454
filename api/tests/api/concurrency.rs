//! Rules 3 and 5 under concurrency: real requests raced against the real database.

use std::collections::{BTreeMap, BTreeSet};

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{blocked_by, code, patient_transaction, spawn_with, test_config};

/// Directed edges (from, to).
type Edges = BTreeSet<(i64, i64)>;

#[tokio::test]
async fn fifty_concurrent_follows_by_one_user_end_with_exactly_the_limit() {
    let mut config = test_config().await;
    config.follow_limit = 10;
    let app = spawn_with(config).await;
    let results = join_all((100..150).map(|target| app.command("follow", 1, target))).await;
    let accepted = results.iter().filter(|(s, _)| *s == StatusCode::OK).count();
    let refused = results
        .iter()
        .filter(|(s, b)| *s == StatusCode::CONFLICT && code(b) == "FOLLOW_LIMIT_REACHED")
        .count();
    assert_eq!((accepted, refused), (10, 40), "{results:?}");
    let followed: i64 =
        sqlx::query_scalar("SELECT count(*) FROM events WHERE event_type = 'Followed'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(followed, 10);
    let guard: i32 = sqlx::query_scalar("SELECT following FROM follow_guard WHERE user_id = 1")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(guard, 10);
}

#[tokio::test]
async fn follows_racing_unfollows_and_blocks_never_pass_the_limit() {
    let mut config = test_config().await;
    config.follow_limit = 5;
    let app = spawn_with(config).await;
    // User 1 follows, unfollows and gets blocked, all at once, over 30 targets.
    let mut requests = Vec::new();
    for target in 200..230 {
        requests.push(app.command("follow", 1, target));
        if target % 3 == 0 {
            requests.push(app.command("unfollow", 1, target));
        }
        if target % 4 == 0 {
            requests.push(app.command("block", target, 1));
        }
    }
    for (status, body) in join_all(requests).await {
        assert!(
            status == StatusCode::OK || status.is_client_error(),
            "{status} {body}"
        );
    }
    // Replay the log in commit order: the count never passes 5 at any transaction boundary.
    let rows: Vec<(i64, String, Value)> = sqlx::query_as(
        "SELECT transaction_id::text::bigint, event_type, payload::jsonb FROM events
          ORDER BY transaction_id, global_position",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let mut following: BTreeSet<i64> = BTreeSet::new();
    for (i, (tx, kind, payload)) in rows.iter().enumerate() {
        let inner = &payload[kind.as_str()];
        if inner["follower"] == json!(1) {
            let followee = inner["followee"].as_i64().unwrap();
            match kind.as_str() {
                "Followed" => assert!(following.insert(followee)),
                "Unfollowed" => assert!(following.remove(&followee)),
                _ => {}
            }
        }
        let end_of_tx = rows.get(i + 1).is_none_or(|next| next.0 != *tx);
        if end_of_tx {
            assert!(
                following.len() <= 5,
                "{} followings after tx {tx}",
                following.len()
            );
        }
    }
    let guard: i32 = sqlx::query_scalar("SELECT following FROM follow_guard WHERE user_id = 1")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(guard as usize, following.len());
}

#[tokio::test]
async fn concurrent_follows_and_blocks_on_a_pair_never_leave_a_follow_beside_a_block() {
    let app = spawn_with(test_config().await).await;
    let mut requests = Vec::new();
    for round in 0..3 {
        for a in (1..=40).step_by(2) {
            let b = a + 1;
            requests.push(app.command("follow", a, b));
            requests.push(app.command("follow", b, a));
            requests.push(app.command(if round % 2 == 0 { "block" } else { "unblock" }, a, b));
            requests.push(app.command("follow", a, b));
        }
    }
    for (status, body) in join_all(requests).await {
        assert!(
            status == StatusCode::OK || ["BLOCKED", "BLOCKING_TARGET"].contains(&code(&body)),
            "{status} {body}"
        );
    }
    // Fold each pair's stream transaction by transaction: never a follow beside a block.
    let rows: Vec<(String, i64, String, Value)> = sqlx::query_as(
        "SELECT aggregate_id, transaction_id::text::bigint, event_type, payload::jsonb FROM events
          ORDER BY aggregate_id, sequence",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let mut pairs: BTreeMap<String, (Edges, Edges)> = BTreeMap::new();
    for (i, (stream, tx, kind, payload)) in rows.iter().enumerate() {
        let (follows, blocks) = pairs.entry(stream.clone()).or_default();
        let inner = &payload[kind.as_str()];
        let edge = |a: &str, b: &str| (inner[a].as_i64().unwrap(), inner[b].as_i64().unwrap());
        match kind.as_str() {
            "Followed" => assert!(follows.insert(edge("follower", "followee"))),
            "Unfollowed" => assert!(follows.remove(&edge("follower", "followee"))),
            "Blocked" => assert!(blocks.insert(edge("blocker", "blocked"))),
            "Unblocked" => assert!(blocks.remove(&edge("blocker", "blocked"))),
            other => panic!("unexpected {other}"),
        }
        let end_of_tx = rows
            .get(i + 1)
            .is_none_or(|next| next.0 != *stream || next.1 != *tx);
        if end_of_tx {
            assert!(
                follows.is_empty() || blocks.is_empty(),
                "{stream} after tx {tx}: follows {follows:?} beside blocks {blocks:?}"
            );
        }
    }
    assert_eq!(pairs.len(), 20);
}

#[tokio::test]
async fn both_users_following_each_other_at_once_both_succeed() {
    let app = spawn_with(test_config().await).await;
    let mut requests = Vec::new();
    for a in (1..=60).step_by(2) {
        requests.push(app.command("follow", a, a + 1));
        requests.push(app.command("follow", a + 1, a));
    }
    for (status, body) in join_all(requests).await {
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["changed"], json!(true));
    }
    assert_eq!(app.event_count().await, 60);
    let (_, body) = app.command("follow", 1, 2).await;
    assert_eq!(body["relation"]["state"], json!("friends"));
}

#[tokio::test]
async fn a_command_group_chosen_to_break_a_lock_cycle_is_decided_again() {
    // A transaction of the test holds one guard row a block needs and then asks for the other,
    // which the block's group holds: a cycle. PostgreSQL aborts the group (the test's
    // transaction waits far longer before it checks); the group rolls back, is decided again
    // once the test's transaction ends, and answers as if nothing had happened.
    let app = spawn_with(test_config().await).await;
    for user in [4, 9] {
        let (status, body) = app.command("follow", user, 100).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (mut other, other_pid) = patient_transaction(&app).await;
    sqlx::query("SELECT 1 FROM follow_guard WHERE user_id = 9 FOR NO KEY UPDATE")
        .execute(&mut *other)
        .await
        .unwrap();
    let ((status, body), ()) = tokio::join!(app.command("block", 4, 9), async {
        // The group holds row 4 (rows are locked in ascending order) and waits for row 9.
        blocked_by(&app, other_pid).await;
        sqlx::query("SELECT 1 FROM follow_guard WHERE user_id = 4 FOR NO KEY UPDATE")
            .execute(&mut *other)
            .await
            .unwrap();
        other.commit().await.unwrap();
    });
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["relation"]["blocking"], json!(true), "{body}");
    let blocks: i64 =
        sqlx::query_scalar("SELECT count(*) FROM events WHERE event_type = 'Blocked'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(blocks, 1);
}

/// The log is ordered by transaction id, taken at a transaction's first write; so every writer
/// of one user's rule-3 count takes that user's lock exclusively before it writes anything, and
/// the writers of a count sit in the log in the order they decided (the fault trial found a
/// prefix where a user followed five under a limit of four, when the count's row was the only
/// thing ordering them). Held shared here, the user's lock keeps their follow and a block of
/// them waiting; a follow of them (which changes only the follower's count) goes on.
#[tokio::test]
async fn a_command_that_changes_a_users_count_takes_their_lock_exclusively() {
    let app = spawn_with(test_config().await).await;
    app.command("follow", 3, 1).await;
    let mut held = app.pool.begin().await.unwrap();
    sqlx::query("SELECT pg_advisory_xact_lock_shared(user_lock_key(1))")
        .execute(&mut *held)
        .await
        .unwrap();
    let waits = |verb: &'static str, actor: i64, target: i64| {
        let app = &app;
        async move {
            let sent = app.command(verb, actor, target);
            tokio::time::timeout(std::time::Duration::from_millis(700), sent).await
        }
    };
    // First the follow that changes only the follower's count (a waiting exclusive request
    // would queue later shared ones behind it).
    let (status, _) = waits("follow", 4, 1).await.expect("1's count stays");
    assert_eq!(status, StatusCode::OK);
    assert!(
        waits("follow", 1, 2).await.is_err(),
        "a follow by 1 changes 1's count"
    );
    assert!(
        waits("block", 3, 1).await.is_err(),
        "a block ends 1's follow of 3"
    );
    held.rollback().await.unwrap();
    // The waiting follow is decided once the lock is free (a retry finds it done).
    let (status, body) = app.command("follow", 1, 2).await;
    assert_eq!(
        (status, &body["relation"]["following"]),
        (StatusCode::OK, &json!(true))
    );
}
