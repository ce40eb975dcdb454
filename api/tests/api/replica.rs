//! `DATABASE_READ_URL`: an owned primary and its streaming hot standby. Reads are served by the
//! standby, `min_position` waits for the standby's replay (503 `NOT_CAUGHT_UP` while replay is
//! paused, 200 with the write once it resumes), and a transaction held open on the primary
//! never makes a reader on the standby (the graph replica, a log read) skip its event.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};
use sqlx::PgPool;

use crate::helpers::{code, hold_open_follow, projector_reached, spawn_with, test_config, TestApp};
use crate::owned::OwnedPostgres;

/// A primary, its standby, the service reading from the standby, and a pool on the standby.
struct Replicated {
    app: TestApp,
    standby_pool: PgPool,
    // Dropped last: the servers outlive the service.
    _standby: OwnedPostgres,
    _primary: OwnedPostgres,
}

async fn replicated() -> Replicated {
    let primary = OwnedPostgres::start();
    let standby = primary.standby();
    let mut config = test_config().await;
    config.database.database_url = primary.url();
    config.database_read_url = Some(standby.url());
    config.catch_up_wait_ms = 1_000;
    let app = spawn_with(config).await;
    let standby_pool = PgPool::connect(&standby.url()).await.unwrap();
    Replicated {
        app,
        standby_pool,
        _standby: standby,
        _primary: primary,
    }
}

fn position(body: &Value) -> String {
    body["position"].as_str().expect("a position").to_owned()
}

/// Scans of `table` counted on the server of `pool`.
async fn scans(pool: &PgPool, table: &str) -> i64 {
    sqlx::query_scalar(
        "SELECT (COALESCE(seq_scan, 0) + COALESCE(idx_scan, 0))::bigint
           FROM pg_stat_user_tables WHERE relname = $1",
    )
    .bind(table)
    .fetch_one(pool)
    .await
    .unwrap()
}

/// Polls `scans` until it reaches `at_least` (statistics are flushed about once a second).
async fn scans_reach(pool: &PgPool, table: &str, at_least: i64) -> i64 {
    let started = Instant::now();
    loop {
        let now = scans(pool, table).await;
        if now >= at_least || started.elapsed() > Duration::from_secs(5) {
            return now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The reads that go to PostgreSQL, each with `min_position`: (path, as user).
fn reads(post: &str, at: &str) -> Vec<(String, i64)> {
    vec![
        (format!("/api/v1/users/1/posts?min_position={at}"), 2),
        (format!("/api/v1/feed?min_position={at}"), 2),
        (format!("/api/v1/users/1/followers?min_position={at}"), 2),
        (
            format!("/api/v1/posts/{post}/comments?min_position={at}"),
            2,
        ),
        (format!("/api/v1/posts/{post}/likes?min_position={at}"), 2),
        (
            format!("/api/v1/me/follower_changes?since=2000-01-01T00:00:00Z&min_position={at}"),
            1,
        ),
        (
            format!(
                "/api/v1/relation/status?from=3&to=1&as_of=2999-01-01T00:00:00Z&min_position={at}"
            ),
            1,
        ),
    ]
}

#[tokio::test]
async fn reads_are_served_by_the_standby_and_min_position_waits_for_its_replay() {
    let r = replicated().await;
    let app = &r.app;
    let (status, body) = app.command("follow", 2, 1).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (post, at) = app.publish(1, "before the pause").await;
    let (status, page) = app
        .get(&format!("/api/v1/users/1/posts?min_position={at}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["items"][0]["id"], json!(post), "{page}");

    // Timelines scan rm_posts on the standby, not on the primary.
    let (on_standby, on_primary) = (
        scans(&r.standby_pool, "rm_posts").await,
        scans(&app.pool, "rm_posts").await,
    );
    for _ in 0..20 {
        let (status, _) = app.get("/api/v1/users/1/posts").await;
        assert_eq!(status, StatusCode::OK);
    }
    let standby_after = scans_reach(&r.standby_pool, "rm_posts", on_standby + 20).await;
    assert!(
        standby_after >= on_standby + 20,
        "{on_standby} -> {standby_after}"
    );
    let primary_after = scans(&app.pool, "rm_posts").await;
    assert!(
        primary_after < on_primary + 20,
        "{on_primary} -> {primary_after}"
    );

    // Replay paused: the primary has every write, the standby none of them.
    sqlx::query("SELECT pg_wal_replay_pause()")
        .execute(&r.standby_pool)
        .await
        .unwrap();
    let (_, followed) = app.command("follow", 3, 1).await;
    let (_, liked) = post_as(app, 3, &format!("/api/v1/posts/{post}/like"), json!({})).await;
    let body = json!({ "content": "while paused" });
    let (_, commented) = post_as(app, 3, &format!("/api/v1/posts/{post}/comments"), body).await;
    let (paused_post, last) = app.publish(1, "while paused").await;
    for answer in [&followed, &liked, &commented] {
        position(answer);
    }
    projector_reached(app, relations_projections::feed::NAME, &last).await;
    let (status, page) = app.get("/api/v1/users/1/posts").await;
    assert_eq!(status, StatusCode::OK);
    assert_ne!(
        page["items"][0]["id"],
        json!(paused_post),
        "read from the paused standby"
    );
    let waits = futures::future::join_all(
        reads(&post, &last)
            .into_iter()
            .map(|(path, user)| async move { (app.get_as(user, &path).await, path) }),
    )
    .await;
    for ((status, body), path) in waits {
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{path}: {body}");
        assert_eq!(code(&body), "NOT_CAUGHT_UP", "{path}");
    }

    sqlx::query("SELECT pg_wal_replay_resume()")
        .execute(&r.standby_pool)
        .await
        .unwrap();
    let answers = futures::future::join_all(
        reads(&post, &last)
            .into_iter()
            .map(|(path, user)| async move { (app.get_as(user, &path).await, path) }),
    )
    .await;
    let bodies: Vec<Value> = answers
        .into_iter()
        .map(|((status, body), path)| {
            assert_eq!(status, StatusCode::OK, "{path}: {body}");
            body
        })
        .collect();
    assert_eq!(bodies[0]["items"][0]["id"], json!(paused_post), "timeline");
    assert_eq!(bodies[1]["items"][0]["id"], json!(paused_post), "feed");
    assert_eq!(bodies[2]["items"][0]["user"], json!(3), "followers");
    assert_eq!(bodies[3]["items"][0]["content"], json!("while paused"));
    assert_eq!(bodies[4]["items"][0]["user"], json!(3), "likes");
    assert_eq!(bodies[5]["items"][0]["user"], json!(3), "follower changes");
    assert_eq!(bodies[6]["following"], json!(true), "as_of: {}", bodies[6]);
    let csv = app
        .client
        .get(format!("{}/api/v1/me/following.csv", app.base))
        .bearer_auth(app.token(3))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(csv.lines().any(|l| l.starts_with("1,")), "{csv}");
}

async fn post_as(app: &TestApp, user: i64, path: &str, body: Value) -> (StatusCode, Value) {
    crate::helpers::read(
        app.client
            .post(format!("{}{path}", app.base))
            .bearer_auth(app.token(user))
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// The standby's horizon: `pg_snapshot_xmin(pg_current_snapshot())` there.
async fn standby_horizon(pool: &PgPool) -> i64 {
    sqlx::query_scalar("SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint")
        .fetch_one(pool)
        .await
        .unwrap()
}

/// Event `stream` of the log as a reader on the standby reads it (below its horizon).
async fn read_on_standby(pool: &PgPool) -> Vec<String> {
    let mut conn = pool.acquire().await.unwrap();
    relations_store::log::read_after(&mut conn, relations_store::LogPosition::START, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.stream_id)
        .collect()
}

#[tokio::test]
async fn a_transaction_held_open_on_the_primary_never_makes_a_standby_reader_skip() {
    let r = replicated().await;
    let app = &r.app;
    let mut held = hold_open_follow(app).await;
    let xid: i64 = sqlx::query_scalar("SELECT pg_current_xact_id()::text::bigint")
        .fetch_one(&mut *held)
        .await
        .unwrap();
    let (status, body) = app.command("follow", 1, 2).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let later = position(&body);
    // The standby has replayed the later commit...
    let started = Instant::now();
    while sqlx::query_scalar::<_, i64>("SELECT count(*) FROM events WHERE aggregate_id = '1:2'")
        .fetch_one(&r.standby_pool)
        .await
        .unwrap()
        == 0
    {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "never replayed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // ...yet its horizon stays at the held transaction, so nothing after it is read.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let horizon = standby_horizon(&r.standby_pool).await;
    assert!(
        horizon <= xid,
        "standby horizon {horizon} passed the held {xid}"
    );
    assert!(read_on_standby(&r.standby_pool).await.is_empty());
    let (status, body) = app
        .get(&format!("/api/v1/users/2/followers?min_position={later}"))
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(code(&body), "NOT_CAUGHT_UP");

    held.commit().await.unwrap();
    let (status, body) = app
        .get(&format!("/api/v1/users/200/followers?min_position={later}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["items"][0]["user"],
        json!(100),
        "the held follow: {body}"
    );
    let (status, body) = app
        .get(&format!("/api/v1/users/2/followers?min_position={later}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["items"][0]["user"], json!(1), "{body}");
    assert_eq!(read_on_standby(&r.standby_pool).await, ["100:200", "1:2"]);
    assert!(standby_horizon(&r.standby_pool).await > xid);
}
