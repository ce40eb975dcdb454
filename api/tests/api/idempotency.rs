//! `Idempotency-Key`: a retry returns the first answer and appends nothing, also across a
//! restart; the same key with another body is refused.

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{code, read, spawn_app, spawn_with, TestApp};

async fn follow_with_key(app: &TestApp, actor: i64, target: i64, key: &str) -> (StatusCode, Value) {
    read(app.keyed_follow(actor, target, key).await).await
}

#[tokio::test]
async fn a_retry_returns_the_first_answer_and_appends_nothing() {
    let app = spawn_app().await;
    let first = follow_with_key(&app, 1, 2, "k-1").await;
    assert_eq!(first.0, StatusCode::OK);
    assert_eq!(first.1["changed"], json!(true));
    let retry = follow_with_key(&app, 1, 2, "k-1").await;
    assert_eq!(
        retry, first,
        "the first answer, changed: true and its position included"
    );
    assert_eq!(app.event_count().await, 1);
    // Without the key, the same request is a new command: unchanged.
    let (_, fresh) = app.command("follow", 1, 2).await;
    assert_eq!(fresh["changed"], json!(false));
}

#[tokio::test]
async fn the_same_key_with_another_body_is_refused() {
    let app = spawn_app().await;
    follow_with_key(&app, 1, 2, "k-2").await;
    let (status, body) = follow_with_key(&app, 1, 3, "k-2").await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "IDEMPOTENCY_KEY_REUSED")
    );
    assert_eq!(app.event_count().await, 1);
}

#[tokio::test]
async fn keys_belong_to_their_actor() {
    let app = spawn_app().await;
    follow_with_key(&app, 1, 2, "shared").await;
    let (status, body) = follow_with_key(&app, 3, 2, "shared").await;
    assert_eq!((status, &body["changed"]), (StatusCode::OK, &json!(true)));
    assert_eq!(app.event_count().await, 2);
}

#[tokio::test]
async fn concurrent_retries_append_once() {
    let app = spawn_app().await;
    let answers = join_all((0..20).map(|_| follow_with_key(&app, 1, 2, "burst"))).await;
    assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");
    assert_eq!(answers[0].1["changed"], json!(true));
    assert_eq!(app.event_count().await, 1);
}

#[tokio::test]
async fn a_refused_command_keeps_no_answer_for_its_key() {
    let app = spawn_app().await;
    app.command("block", 2, 1).await;
    let (status, _) = follow_with_key(&app, 1, 2, "k-3").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    app.command("unblock", 2, 1).await;
    let (status, body) = follow_with_key(&app, 1, 2, "k-3").await;
    assert_eq!((status, &body["changed"]), (StatusCode::OK, &json!(true)));
}

#[tokio::test]
async fn answers_survive_a_restart() {
    let app = spawn_app().await;
    let first = follow_with_key(&app, 1, 2, "durable").await;
    let config = app.stop().await;
    let app = spawn_with(config).await;
    assert_eq!(follow_with_key(&app, 1, 2, "durable").await, first);
    assert_eq!(app.event_count().await, 1);
}

#[tokio::test]
async fn a_malformed_key_is_bad_input() {
    let app = spawn_app().await;
    let long = "k".repeat(256);
    let (status, body) = follow_with_key(&app, 1, 2, &long).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "INVALID_INPUT")
    );
    assert_eq!(app.event_count().await, 0);
}
