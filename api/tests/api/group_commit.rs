//! Group commit: commands that arrive together are decided in one transaction. These race real
//! requests at a service with one command worker, so they share groups, and check both that
//! they did (several requests' events in one transaction) and that every rule held.

use std::collections::BTreeSet;

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_verified, code, read, spawn_with, test_config, TestApp};

/// A service whose commands all go through one group worker.
async fn one_worker(follow_limit: u32) -> TestApp {
    let mut config = test_config().await;
    config.command_workers = 1;
    config.follow_limit = follow_limit;
    spawn_with(config).await
}

/// The most requests whose events share one transaction.
async fn largest_group(app: &TestApp) -> i64 {
    sqlx::query_scalar(
        "SELECT max(n) FROM (SELECT count(DISTINCT metadata::jsonb->>'request_id') AS n
                               FROM events GROUP BY transaction_id) g",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn commands_on_one_pair_in_one_group_are_decided_one_after_the_other() {
    let app = one_worker(1000).await;
    let mut requests = Vec::new();
    for a in (1..=30).step_by(2) {
        requests.push(app.command("follow", a, a + 1));
        requests.push(app.command("follow", a + 1, a));
        requests.push(app.command("block", a, a + 1));
        requests.push(app.command("follow", a, a + 1));
    }
    for (status, body) in join_all(requests).await {
        assert!(
            status == StatusCode::OK || ["BLOCKED", "BLOCKING_TARGET"].contains(&code(&body)),
            "{status} {body}"
        );
    }
    // Some transaction holds two requests' events on one stream: they shared a group.
    let shared: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT 1 FROM events GROUP BY transaction_id, aggregate_id
                                HAVING count(DISTINCT metadata::jsonb->>'request_id') > 1) s",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(shared > 0, "no group held two commands on one pair");
    // Streams are gapless and every pair ended blocked with no follow left.
    let streams: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT aggregate_id, count(*), max(sequence) FROM events GROUP BY aggregate_id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert!(streams.iter().all(|(_, n, max)| n == max), "{streams:?}");
    // Whatever the order within groups, each pair ends blocked with no follow left: a block
    // again changes nothing and reports the pair as the log left it.
    for a in (1..=30).step_by(2) {
        let (_, body) = app.command("block", a, a + 1).await;
        assert_eq!(
            (&body["changed"], &body["relation"]["state"]),
            (&json!(false), &json!("blocking")),
            "{a}: {body}"
        );
    }
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_group_never_lets_a_user_pass_the_follow_limit() {
    let app = one_worker(10).await;
    let results = join_all((100..160).map(|target| app.command("follow", 1, target))).await;
    let accepted = results.iter().filter(|(s, _)| *s == StatusCode::OK).count();
    let refused = results
        .iter()
        .filter(|(s, b)| *s == StatusCode::CONFLICT && code(b) == "FOLLOW_LIMIT_REACHED")
        .count();
    assert_eq!((accepted, refused), (10, 50), "{results:?}");
    assert!(
        largest_group(&app).await > 1,
        "the follows never shared a group"
    );
    let guard: i32 = sqlx::query_scalar("SELECT following FROM follow_guard WHERE user_id = 1")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(guard, 10);
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_key_used_twice_in_a_group_is_decided_once() {
    let app = one_worker(1000).await;
    let follow = |target: i64| {
        let request = app
            .client
            .post(format!("{}/api/v1/relation/follow", app.base))
            .bearer_auth(app.token(1))
            .header("idempotency-key", "one-key")
            .json(&json!({ "target": target }));
        async move { read(request.send().await.unwrap()).await }
    };
    // The same key with the same body ten times, and with another body ten times, at once;
    // plus other users' commands so the groups are full.
    let mut keyed = Vec::new();
    for i in 0..20 {
        keyed.push(follow(if i % 2 == 0 { 2 } else { 3 }));
    }
    let others = join_all((10..40).map(|a| app.command("follow", a, a + 100)));
    let (answers, _) = futures::join!(join_all(keyed), others);
    let ok: Vec<&(StatusCode, Value)> = answers.iter().filter(|(s, _)| s.is_success()).collect();
    let reused = answers
        .iter()
        .filter(|(s, b)| {
            *s == StatusCode::UNPROCESSABLE_ENTITY && code(b) == "IDEMPOTENCY_KEY_REUSED"
        })
        .count();
    assert_eq!(ok.len() + reused, 20, "{answers:?}");
    assert_eq!(ok.len(), 10, "one body won the key: {answers:?}");
    assert!(
        ok.iter().all(|a| *a == ok[0]),
        "every retry got the first answer: {ok:?}"
    );
    let targets: BTreeSet<i64> = sqlx::query_scalar(
        "SELECT (payload::jsonb->'Followed'->>'followee')::bigint FROM events
          WHERE payload::jsonb->'Followed'->>'follower' = '1'",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap()
    .into_iter()
    .collect();
    assert_eq!(targets.len(), 1, "one follow appended for the key");
    assert!(
        largest_group(&app).await > 1,
        "the commands never shared a group"
    );
    assert_verified(&app).await;
}
