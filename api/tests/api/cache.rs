//! Redis caches of counts and first pages: served from Redis, invalidated by projector `cache`,
//! bypassed when Redis is down.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, spawn_with, test_config, TestApp};

async fn settled(app: &TestApp, position: &str) {
    let (status, _) = app
        .get(&format!("/api/v1/users/1/counts?min_position={position}"))
        .await;
    assert_eq!(status, StatusCode::OK);
}

/// Waits until projector `cache` has passed `position`: until then a reader's write-back may
/// be refused (an invalidation is still to come), so nothing is known to be cached.
async fn cache_projector_at(app: &TestApp, position: &str) {
    crate::helpers::projector_reached(app, "cache", position).await;
}

/// Polls `path` until `check` holds (the cache projector runs behind `following`).
async fn eventually(app: &TestApp, path: &str, check: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..300 {
        let (status, body) = app.get(path).await;
        assert_eq!(status, StatusCode::OK);
        if check(&body) {
            return body;
        }
        last = body;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{path} never satisfied the check; last {last}");
}

#[tokio::test]
async fn counts_are_served_from_the_cache_until_an_event_invalidates_them() {
    let app = spawn_app().await;
    let (_, body) = app.command("follow", 1, 2).await;
    settled(&app, body["position"].as_str().unwrap()).await;
    cache_projector_at(&app, body["position"].as_str().unwrap()).await;
    let cached = eventually(&app, "/api/v1/users/2/counts", |b| {
        b["followers"] == json!(1)
    })
    .await;
    // Change the read model behind the cache's back: the cache keeps answering.
    sqlx::query("UPDATE rm_follow_counts SET followers = 40 WHERE user_id = 2")
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(app.get("/api/v1/users/2/counts").await.1, cached);
    // min_position reads go to the read model.
    let (_, fresh) = app
        .get(&format!(
            "/api/v1/users/2/counts?min_position={}",
            body["position"].as_str().unwrap()
        ))
        .await;
    assert_eq!(fresh["followers"], json!(40));
    // An event about user 2 invalidates the entry.
    app.command("follow", 3, 2).await;
    eventually(&app, "/api/v1/users/2/counts", |b| {
        b["followers"] == json!(41)
    })
    .await;
}

#[tokio::test]
async fn empty_first_pages_are_cached_too() {
    let app = spawn_app().await;
    let (status, body) = app.get("/api/v1/users/77/followers").await;
    assert_eq!(
        (status, &body),
        (StatusCode::OK, &json!({"items": [], "next_cursor": null}))
    );
    sqlx::query("INSERT INTO rm_follows (follower, followee, since) VALUES (5, 77, now())")
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        app.get("/api/v1/users/77/followers").await.1["items"],
        json!([])
    );
    // Asking for another page shape reads the table.
    assert_eq!(
        app.get("/api/v1/users/77/followers?limit=5").await.1["items"][0]["user"],
        json!(5)
    );
    app.command("follow", 6, 77).await;
    eventually(&app, "/api/v1/users/77/followers", |b| {
        b["items"].as_array().unwrap().len() == 2
    })
    .await;
}

#[tokio::test]
async fn first_pages_follow_writes_through_invalidation() {
    let app = spawn_app().await;
    app.command("follow", 1, 2).await;
    eventually(&app, "/api/v1/users/1/following", |b| {
        b["total"] == json!(1)
    })
    .await;
    app.command("follow", 1, 3).await;
    let body = eventually(&app, "/api/v1/users/1/following", |b| {
        b["total"] == json!(2)
    })
    .await;
    assert_eq!(body["items"][0]["user"], json!(3));
    app.command("follow", 3, 1).await;
    eventually(&app, "/api/v1/users/1/friends", |b| b["total"] == json!(1)).await;
    app.command("block", 3, 1).await;
    eventually(&app, "/api/v1/users/1/friends", |b| b["total"] == json!(0)).await;
    eventually(&app, "/api/v1/users/1/following", |b| {
        b["total"] == json!(1)
    })
    .await;
}

#[tokio::test]
async fn with_redis_down_queries_read_the_database() {
    let mut config = test_config().await;
    config.redis.redis_url = Some("redis://127.0.0.1:1".to_owned());
    let app = spawn_with(config).await;
    let (_, body) = app.command("follow", 1, 2).await;
    settled(&app, body["position"].as_str().unwrap()).await;
    let (status, counts) = app.get("/api/v1/users/2/counts").await;
    assert_eq!(
        (status, counts["followers"].clone()),
        (StatusCode::OK, json!(1))
    );
    let (status, page) = app.get("/api/v1/users/2/followers").await;
    assert_eq!(
        (status, page["items"][0]["user"].clone()),
        (StatusCode::OK, json!(1))
    );
    // The cache projector fails (and is reported) without making the service unready.
    let (status, _) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::OK);
}
