//! Rule 7: a token bucket per user in Redis.

use futures::future::join_all;
use reqwest::StatusCode;

use crate::helpers::{code, spawn_with, test_config};

#[tokio::test]
async fn the_bucket_empties_then_refuses_with_retry_after_per_user() {
    let mut config = test_config().await;
    config.rate_capacity = 3;
    config.rate_refill_per_sec = 0.01;
    let app = spawn_with(config).await;
    for target in 2..5 {
        assert_eq!(app.command("follow", 1, target).await.0, StatusCode::OK);
    }
    let response = app
        .client
        .post(format!("{}/api/v1/relation/follow", app.base))
        .bearer_auth(app.token(1))
        .json(&serde_json::json!({"target": 9}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
    let retry_after: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=100).contains(&retry_after), "{retry_after}");
    let (_, body) = crate::helpers::read(response).await;
    assert_eq!(code(&body), "RATE_LIMITED");
    // Another user has a bucket of their own.
    assert_eq!(app.command("follow", 2, 1).await.0, StatusCode::OK);
    assert_eq!(app.event_count().await, 4);
}

#[tokio::test]
async fn concurrent_commands_never_overspend_a_bucket() {
    let mut config = test_config().await;
    config.rate_capacity = 5;
    config.rate_refill_per_sec = 0.001;
    let app = spawn_with(config).await;
    let results = join_all((10..40).map(|t| app.command("follow", 1, t))).await;
    let ok = results.iter().filter(|(s, _)| *s == StatusCode::OK).count();
    let limited = results
        .iter()
        .filter(|(s, _)| *s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!((ok, limited), (5, 25));
}

#[tokio::test]
async fn the_bucket_refills() {
    let mut config = test_config().await;
    config.rate_capacity = 1;
    config.rate_refill_per_sec = 1.0;
    let app = spawn_with(config).await;
    assert_eq!(app.command("follow", 1, 2).await.0, StatusCode::OK);
    assert_eq!(
        app.command("follow", 1, 3).await.0,
        StatusCode::TOO_MANY_REQUESTS
    );
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(app.command("follow", 1, 3).await.0, StatusCode::OK);
}

/// SPEC's hardening: while Redis is unavailable the rate limit still holds, per instance,
/// never unlimited.
#[tokio::test]
async fn with_redis_down_the_limit_still_holds_per_instance() {
    let mut config = test_config().await;
    config.redis.redis_url = Some("redis://127.0.0.1:1".to_owned());
    config.rate_capacity = 3;
    config.rate_refill_per_sec = 0.01;
    let app = spawn_with(config).await;
    for target in 2..5 {
        assert_eq!(app.command("follow", 1, target).await.0, StatusCode::OK);
    }
    let (status, body) = app.command("follow", 1, 5).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED")
    );
    // Per user: another user's bucket is full.
    assert_eq!(app.command("follow", 2, 5).await.0, StatusCode::OK);
}

/// The write path does not go down with the limiter: with Redis away, commands are decided
/// (against this instance's buckets) and readiness says Redis is down.
#[tokio::test]
async fn with_redis_down_commands_go_on() {
    let mut config = test_config().await;
    config.redis.redis_url = Some("redis://127.0.0.1:1".to_owned());
    config.rate_capacity = 1;
    let app = spawn_with(config).await;
    for target in 2..6 {
        assert_eq!(app.command("follow", 1, target).await.0, StatusCode::OK);
    }
    let (status, body) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["checks"]["redis"], serde_json::json!(false));
    let metrics = app.metrics().await;
    assert!(metrics.contains("relations_rate_limiter_unavailable_total"));
}
