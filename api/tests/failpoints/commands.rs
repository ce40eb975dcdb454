//! The command path's two windows: after a group's COMMIT and before its answers, and before a
//! group stores its idempotent answers. Whatever fails there, a retry under the same
//! `Idempotency-Key` gets the answer a command that never failed gets, and the log holds
//! exactly one transaction for the command.

use fail::FailScenario;
use relations_store::faults::{AFTER_COMMIT, BEFORE_ANSWERS_STORED};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{read, spawn_with, test_config, TestApp};
use crate::{delay, ERROR, PANIC};

/// The tests' command deadline: a delay of twice it overruns it.
const DEADLINE_MS: u64 = 1_000;

async fn follow_with_key(app: &TestApp, key: &str) -> (StatusCode, Value) {
    read(app.keyed_follow(1, 2, key).await).await
}

/// The follow 1 -> 2's events in the log: (transaction, position) of each.
async fn follows_in_the_log(app: &TestApp) -> Vec<(i64, i64)> {
    sqlx::query_as(
        "SELECT transaction_id::text::bigint, global_position FROM events
          WHERE aggregate_type = 'relation' AND aggregate_id = '1:2'",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// A follow under a key meets `point` configured with `action`: it is answered 503 (its
/// outcome unknown to the client); once the point is off, its retry under the same key is
/// answered as a fault-free follow is (changed, at the one event's position), a second retry
/// replays that answer, and the executor goes on deciding other commands.
async fn a_follow_through(point: &str, action: &str) {
    let scenario = FailScenario::setup();
    let mut config = test_config().await;
    config.command_deadline_ms = DEADLINE_MS;
    // One worker per kind, so that a worker lost to a panic would leave nobody to decide the
    // rest; two for a delay, so that the retry is not queued behind the delayed group.
    config.command_workers = if action.starts_with("return(delay") {
        2
    } else {
        1
    };
    let app = spawn_with(config).await;

    fail::cfg(point, action).unwrap();
    let (status, body) = follow_with_key(&app, "through-a-fault").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    fail::remove(point);

    let retry = follow_with_key(&app, "through-a-fault").await;
    assert_eq!(retry.0, StatusCode::OK, "{}", retry.1);
    assert_eq!(retry.1["changed"], json!(true), "{}", retry.1);
    let logged = follows_in_the_log(&app).await;
    assert_eq!(logged.len(), 1, "one event, one transaction: {logged:?}");
    let (transaction, position) = logged[0];
    assert_eq!(
        retry.1["position"],
        json!(format!("{transaction}.{position}"))
    );
    assert_eq!(follow_with_key(&app, "through-a-fault").await, retry);

    // Every worker still decides: a group of fresh commands, each answered.
    for target in 3..=10 {
        let (status, body) = app.command("follow", 1, target).await;
        assert_eq!((status, &body["changed"]), (StatusCode::OK, &json!(true)));
    }
    drop(app);
    scenario.teardown();
}

#[tokio::test]
async fn an_error_after_commit_is_answered_by_the_retry() {
    a_follow_through(AFTER_COMMIT, ERROR).await;
}

#[tokio::test]
async fn a_panic_after_commit_is_answered_by_the_retry() {
    a_follow_through(AFTER_COMMIT, PANIC).await;
}

#[tokio::test]
async fn a_delay_after_commit_past_the_deadline_is_answered_by_the_retry() {
    a_follow_through(AFTER_COMMIT, &delay(2 * DEADLINE_MS)).await;
}

#[tokio::test]
async fn an_error_before_the_answers_are_stored_rolls_back_and_the_retry_decides() {
    a_follow_through(BEFORE_ANSWERS_STORED, ERROR).await;
}

#[tokio::test]
async fn a_panic_before_the_answers_are_stored_rolls_back_and_the_retry_decides() {
    a_follow_through(BEFORE_ANSWERS_STORED, PANIC).await;
}

#[tokio::test]
async fn a_delay_before_the_answers_are_stored_past_the_deadline_rolls_back() {
    a_follow_through(BEFORE_ANSWERS_STORED, &delay(2 * DEADLINE_MS)).await;
}
