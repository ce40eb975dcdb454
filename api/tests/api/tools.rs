//! `relations replay`, `verify` and `project`, run as the binary against a live service.

use std::process::{Command, Stdio};
use std::time::Duration;

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{run_relations as relations, spawn_app, spawn_with, test_config, TestApp};

const BIN: &str = env!("CARGO_BIN_EXE_relations");

/// Waits until the `following` projector has applied everything.
async fn settle(app: &TestApp, position: &str) {
    crate::helpers::projector_reached(app, "following", position).await;
}

#[tokio::test]
async fn replay_prints_the_versioned_envelope_in_log_order_with_filters() {
    let app = spawn_app().await;
    app.command("follow", 1, 2).await;
    app.command("follow", 3, 1).await;
    app.command("block", 1, 2).await;
    let all = relations(&app, &["replay"]);
    assert!(all.status.success());
    let lines: Vec<Value> = String::from_utf8(all.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = lines.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["Followed", "Followed", "Unfollowed", "Blocked"]);
    let first = &lines[0];
    assert_eq!(first["schema"], "relations.event/1");
    assert_eq!(first["version"], "1");
    assert_eq!(
        first["stream"],
        serde_json::json!({"type": "relation", "id": "1:2", "version": 1})
    );
    assert_eq!(
        first["data"],
        serde_json::json!({"follower": 1, "followee": 2})
    );
    assert_eq!(first["metadata"]["actor"], "1");
    assert!(
        first["event_id"].is_string()
            && first["position"].is_string()
            && first["occurred_at"].is_string()
    );

    let blocked = relations(&app, &["replay", "--type", "Blocked"]);
    assert_eq!(
        String::from_utf8(blocked.stdout).unwrap().lines().count(),
        1
    );
    let of_user_3 = relations(&app, &["replay", "--user", "3"]);
    assert_eq!(
        String::from_utf8(of_user_3.stdout).unwrap().lines().count(),
        1
    );
    let second = lines[1]["position"].as_str().unwrap();
    let after = relations(&app, &["replay", "--after", second]);
    assert_eq!(String::from_utf8(after.stdout).unwrap().lines().count(), 2);
    let up_to = relations(&app, &["replay", "--up-to", second]);
    assert_eq!(String::from_utf8(up_to.stdout).unwrap().lines().count(), 2);
    let future = relations(&app, &["replay", "--since", "2999-01-01T00:00:00Z"]);
    assert_eq!(String::from_utf8(future.stdout).unwrap().lines().count(), 0);
}

#[tokio::test]
async fn verify_passes_on_a_fresh_fold_and_fails_on_a_corrupted_read_model() {
    let app = spawn_app().await;
    app.command("follow", 1, 2).await;
    app.command("follow", 2, 1).await;
    app.command("follow", 3, 1).await;
    let (_, body) = app.command("block", 3, 1).await;
    settle(&app, body["position"].as_str().unwrap()).await;
    let ok = relations(&app, &["verify"]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );

    sqlx::query("INSERT INTO rm_follows (follower, followee, since) VALUES (8, 9, now())")
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE rm_follow_counts SET followers = 7 WHERE user_id = 2")
        .execute(&app.pool)
        .await
        .unwrap();
    let bad = relations(&app, &["verify"]);
    assert!(!bad.status.success());
    let report = String::from_utf8(bad.stdout).unwrap();
    assert!(
        report.contains("rm_follows (follower, followee): unexpected (8, 9)"),
        "{report}"
    );
    assert!(report.contains("rm_follow_counts"), "{report}");
}

#[tokio::test]
async fn a_standalone_projector_killed_under_load_resumes_and_matches_a_fresh_fold() {
    let mut config = test_config().await;
    config.run_projectors = false;
    let app = spawn_with(config).await;
    let start = || {
        Command::new(BIN)
            .arg("project")
            .env("DATABASE_URL", &app.config.database.database_url)
            .env("RELATIONS_MASTER_KEY", crate::helpers::MASTER_KEY)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut projector = start();
    let mut last = String::new();
    for round in 0..4 {
        let requests = (0..40).map(|i| {
            let (a, b) = (1 + (i + round * 7) % 13, 20 + (i * 3 + round) % 11);
            let verb =
                ["follow", "follow", "unfollow", "block", "unblock"][(i + round) as usize % 5];
            app.command(verb, a, b)
        });
        for (status, body) in join_all(requests).await {
            if let Some(p) = body["position"].as_str() {
                last = p.to_owned();
            }
            assert!(status.is_success() || status.is_client_error(), "{body}");
        }
        // SIGKILL: no chance to finish a batch cleanly.
        projector.kill().unwrap();
        projector.wait().unwrap();
        projector = start();
    }
    let mut caught_up = false;
    for _ in 0..20 {
        let (status, _) = app
            .get(&format!("/api/v1/users/1/counts?min_position={last}"))
            .await;
        if status == StatusCode::OK {
            caught_up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(caught_up);
    projector.kill().unwrap();
    projector.wait().unwrap();
    let verify = relations(&app, &["verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

#[tokio::test]
async fn rebuild_while_serving_swaps_in_an_equal_read_model() {
    let app = spawn_app().await;
    let mut last = String::new();
    for i in 0..60 {
        let (a, b) = (1 + i % 9, 10 + (i * 7) % 13);
        let verb = ["follow", "follow", "block", "unfollow"][i as usize % 4];
        let (_, body) = app.command(verb, a, b).await;
        if let Some(p) = body["position"].as_str() {
            last = p.to_owned();
        }
    }
    settle(&app, &last).await;
    let before = app.get("/api/v1/users/1/following?limit=100").await.1;

    let stop = tokio_util::sync::CancellationToken::new();
    let load = {
        let (stop, client, base, token) = (
            stop.clone(),
            app.client.clone(),
            app.base.clone(),
            app.token(50),
        );
        tokio::spawn(async move {
            let mut failures = Vec::new();
            let mut queries = 0;
            let mut target = 100;
            while !stop.is_cancelled() {
                for path in [
                    "/api/v1/users/1/following",
                    "/api/v1/relation/status?from=1&to=10",
                    "/api/v1/users/10/counts",
                ] {
                    let status = client
                        .get(format!("{base}{path}"))
                        .send()
                        .await
                        .unwrap()
                        .status();
                    queries += 1;
                    if status != StatusCode::OK {
                        failures.push(format!("{path}: {status}"));
                    }
                }
                let status = client
                    .post(format!("{base}/api/v1/relation/follow"))
                    .bearer_auth(&token)
                    .json(&serde_json::json!({"target": target}))
                    .send()
                    .await
                    .unwrap()
                    .status();
                target += 1;
                if status != StatusCode::OK {
                    failures.push(format!("follow: {status}"));
                }
            }
            (queries, failures)
        })
    };
    let database_url = app.config.database.database_url.clone();
    let rebuild = tokio::task::spawn_blocking(move || {
        Command::new(BIN)
            .args(["rebuild", "following"])
            .env("DATABASE_URL", database_url)
            .env("RELATIONS_MASTER_KEY", crate::helpers::MASTER_KEY)
            .env("RUST_LOG", "warn")
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop.cancel();
    let (queries, failures) = load.await.unwrap();
    assert!(
        rebuild.status.success(),
        "{}",
        String::from_utf8_lossy(&rebuild.stderr)
    );
    assert!(queries > 0);
    assert!(failures.is_empty(), "{failures:?}");

    // The new model serves, keeps up with new writes, and equals a fresh fold.
    let after = app.get("/api/v1/users/1/following?limit=100").await.1;
    assert_eq!(before, after);
    let (_, body) = app.command("follow", 1, 99).await;
    settle(&app, body["position"].as_str().unwrap()).await;
    let (_, following) = app.get("/api/v1/relation/status?from=1&to=99").await;
    assert_eq!(following["following"], serde_json::json!(true));
    let verify = relations(&app, &["verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
    // The swapped-in tables come with the planner's statistics (a rebuild COPYs them full;
    // without an ANALYZE the first reads after it plan blind).
    let analyzed: Vec<String> = sqlx::query_scalar(
        "SELECT relname::text FROM pg_stat_user_tables
          WHERE schemaname = current_schema() AND relname IN ('rm_follows', 'rm_blocks')
            AND last_analyze IS NOT NULL ORDER BY 1",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(analyzed, ["rm_blocks", "rm_follows"]);
    let tables: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'rebuild_%' || current_schema()",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(tables, 0, "the shadow schema is gone");

    let unknown = relations(&app, &["rebuild", "nope"]);
    assert!(!unknown.status.success());
}

#[tokio::test]
async fn a_failing_projector_is_reported_retried_and_recovers_without_skipping() {
    let mut config = test_config().await;
    config.stuck_after_ms = 200;
    let app = spawn_with(config).await;
    // Break the read model under the projector: the next block cannot be applied.
    sqlx::query("ALTER TABLE rm_blocks RENAME TO rm_blocks_away")
        .execute(&app.pool)
        .await
        .unwrap();
    let (_, body) = app.command("block", 1, 2).await;
    let position = body["position"].as_str().unwrap().to_owned();
    // Within 15 s, whatever the machine's load (the projector fails, backs off, and is stuck
    // once it has failed for `stuck_after_ms`).
    let mut unready = false;
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while std::time::Instant::now() < deadline {
        let (status, body) = app.get("/readyz").await;
        if status == StatusCode::SERVICE_UNAVAILABLE {
            assert_eq!(
                body["checks"]["stuck_projectors"],
                serde_json::json!(["following"])
            );
            unready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(unready, "a stuck projector must make the instance unready");
    let url = format!("{}/api/v1/admin/projections", app.base);
    let (_, admin) = crate::helpers::read(
        app.client
            .get(&url)
            .bearer_auth(app.admin_token(1))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(admin["projections"][0]["state"], "failing");
    assert!(admin["projections"][0]["last_error"]
        .as_str()
        .unwrap()
        .contains("rm_blocks"));
    assert_eq!(admin["projections"][0]["lag_events"], 1);

    sqlx::query("ALTER TABLE rm_blocks_away RENAME TO rm_blocks")
        .execute(&app.pool)
        .await
        .unwrap();
    settle(&app, &position).await;
    let (_, status) = app.get("/api/v1/relation/status?from=1&to=2").await;
    assert_eq!(status["state"], "blocking");
    assert_eq!(app.get("/readyz").await.0, StatusCode::OK);
}

#[tokio::test]
async fn two_projector_processes_never_both_apply() {
    let mut config = test_config().await;
    config.run_projectors = false;
    let app = spawn_with(config).await;
    let start = || {
        Command::new(BIN)
            .args(["project", "--only", "following"])
            .env("DATABASE_URL", &app.config.database.database_url)
            .env("RELATIONS_MASTER_KEY", crate::helpers::MASTER_KEY)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
    };
    let (mut first, mut second) = (start(), start());
    let requests = (0..120).map(|i| app.command("follow", 1 + i % 17, 100 + i));
    join_all(requests).await;
    let events = app.event_count().await;
    let mut applied = 0;
    for _ in 0..300 {
        applied = sqlx::query_scalar::<_, i64>(
            "SELECT events_applied FROM projector_checkpoints WHERE name = 'following'",
        )
        .fetch_optional(&app.pool)
        .await
        .unwrap()
        .unwrap_or(0);
        if applied >= events {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for child in [&mut first, &mut second] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    // Each event applied exactly once across both processes.
    assert_eq!(applied, events);
    let verify = relations(&app, &["verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}

/// The feed settings of the apps below: authors are pulled from 3 followers, inboxes hold 4.
const SMALL_FEED: [&str; 4] = ["--big-v-threshold", "3", "--feed-inbox-cap", "4"];

/// An app with the [`SMALL_FEED`] settings.
async fn small_feed_app() -> TestApp {
    let mut config = test_config().await;
    config.feed.big_v_threshold = 3;
    config.feed.feed_inbox_cap = 4;
    spawn_with(config).await
}

/// Runs `relations ARGS` with the [`SMALL_FEED`] settings, asserting it succeeded.
fn with_small_feed(app: &TestApp, args: &[&str]) {
    let out = relations(app, &[args, &SMALL_FEED[..]].concat());
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Readers 10, 11 and 12's whole feeds at `last`.
async fn feeds(app: &TestApp, last: String) -> Vec<Value> {
    let mut all = Vec::new();
    for reader in [10, 11, 12] {
        let path = format!("/api/v1/feed?size=20&min_position={last}");
        all.push(app.get_as(reader, &path).await.1);
    }
    all
}

#[tokio::test]
async fn rebuilding_the_feed_numbers_every_post_the_same_and_keeps_every_feed() {
    let app = small_feed_app().await;
    for (a, b) in [(10, 1), (11, 1), (12, 1), (10, 2), (11, 2), (10, 3)] {
        app.command("follow", a, b).await;
    }
    let mut last = String::new();
    for i in 0..12 {
        last = app.publish(1 + i % 3, &format!("post {i}")).await.1;
    }
    let (_, unfollowed) = app.command("unfollow", 12, 1).await;
    last = unfollowed["position"].as_str().unwrap_or(&last).to_owned();
    let before = feeds(&app, last.clone()).await;
    with_small_feed(&app, &["rebuild", "feed"]);
    assert_eq!(feeds(&app, last).await, before);
    with_small_feed(&app, &["verify"]);
}

/// Readers' whole feeds (two pages of 5) at `last`.
async fn feed_pages(app: &TestApp, readers: &[i64], last: &str) -> Vec<Value> {
    let mut all = Vec::new();
    for &reader in readers {
        let (_, first) = app
            .get_as(reader, &format!("/api/v1/feed?size=5&min_position={last}"))
            .await;
        let cursor = first["next_cursor"].as_str().unwrap_or("").to_owned();
        let (_, second) = app
            .get_as(
                reader,
                &format!("/api/v1/feed?size=5&cursor={cursor}&min_position={last}"),
            )
            .await;
        all.push(json!([first, second]));
    }
    all
}

#[tokio::test]
async fn a_rebuild_folding_runs_of_follows_at_once_gives_the_same_feeds() {
    let app = small_feed_app().await;
    let mut last = String::new();
    // Posts first (five per author, one over the cap), so the follows that come next backfill
    // over the cap, and author 1 crosses the threshold in the middle of a run of follows.
    for i in 0..20 {
        last = app.publish(1 + i % 4, &format!("early {i}")).await.1;
    }
    let run = [
        (15, 3),
        (10, 1),
        (10, 2),
        (10, 3),
        (11, 1),
        (12, 1),
        (13, 1),
        (11, 4),
    ];
    for (reader, author) in run {
        last = app.command("follow", reader, author).await.1["position"]
            .as_str()
            .unwrap()
            .to_owned();
    }
    for i in 0..4 {
        last = app.publish([2, 4][i % 2], &format!("late {i}")).await.1;
    }
    for (reader, author) in [(14, 2), (14, 4), (14, 1), (13, 2)] {
        last = app.command("follow", reader, author).await.1["position"]
            .as_str()
            .unwrap()
            .to_owned();
    }
    let readers = [10, 11, 12, 13, 14, 15];
    let before = feed_pages(&app, &readers, &last).await;
    assert!(before
        .iter()
        .all(|f| f[0]["items"].as_array().is_some_and(|i| !i.is_empty())));
    with_small_feed(&app, &["rebuild", "feed"]);
    assert_eq!(feed_pages(&app, &readers, &last).await, before);
    with_small_feed(&app, &["verify"]);
}

/// Every row of the feed's tables, each table in a canonical order.
async fn feed_tables(app: &TestApp) -> Vec<(&'static str, Vec<String>)> {
    let mut all = Vec::new();
    for table in relations_projections::feed::TABLES {
        let rows: Vec<String> = sqlx::query_scalar(&format!(
            "SELECT to_jsonb(t)::text FROM {table} t ORDER BY 1"
        ))
        .fetch_all(&app.pool)
        .await
        .unwrap();
        all.push((table, rows));
    }
    all
}

#[tokio::test]
async fn a_feed_rebuild_in_memory_writes_every_table_as_the_runner_did() {
    let app = small_feed_app().await;
    let mut last;
    // Content COPY must escape, and timestamps with nanoseconds in the log.
    app.publish(1, "tab\there, a line\nbreak, a back\\slash and \\N")
        .await;
    for (a, b) in [(10, 1), (11, 1), (10, 2), (11, 2), (12, 2), (13, 3)] {
        app.command("follow", a, b).await;
    }
    let mut posts = Vec::new();
    for i in 0..14 {
        posts.push(app.publish(1 + i % 4, &format!("post {i}")).await.0);
    }
    // Author 1 crosses the threshold upwards, then back down (a backfill of every follower
    // over the cap); author 2 down and up again.
    app.command("follow", 12, 1).await;
    app.command("follow", 14, 2).await;
    app.command("unfollow", 10, 1).await;
    app.command("unfollow", 12, 2).await;
    app.command("unfollow", 14, 2).await;
    app.command("follow", 15, 2).await;
    app.command("follow", 16, 2).await;
    assert_eq!(app.delete_post(1, &posts[0]).await.0, StatusCode::OK);
    assert_eq!(app.delete_post(2, &posts[5]).await.0, StatusCode::OK);
    assert_eq!(app.mute(10, 2, json!(3600)).await.0, StatusCode::OK);
    assert_eq!(app.mute(11, 3, json!(null)).await.0, StatusCode::OK);
    assert_eq!(app.mute(13, 3, json!(null)).await.0, StatusCode::OK);
    app.command("unmute", 11, 3).await;
    let ban = |user: i64, verb: &'static str| {
        app.client
            .post(format!("{}/api/v1/admin/users/{user}/{verb}", app.base))
            .bearer_auth(app.admin_token(1))
            .json(&json!({}))
            .send()
    };
    assert!(ban(4, "ban").await.unwrap().status().is_success());
    // (Not user 3: the unban reaches the token check through the log, after the erasure.)
    assert!(ban(13, "ban").await.unwrap().status().is_success());
    assert!(ban(13, "unban").await.unwrap().status().is_success());
    // User 3 is erased: their posts, follows both ways and mutes go.
    app.command("follow", 3, 1).await;
    let (status, body) = app.erase_me(3).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for i in 0..3 {
        app.publish(2, &format!("after {i}")).await;
    }
    // New readers of an author with more live posts than the cap: the newest left out
    // becomes their watermark.
    let mut fifth = Vec::new();
    for i in 0..7 {
        fifth.push(app.publish(5, &format!("fifth {i}")).await.0);
    }
    app.command("follow", 20, 5).await;
    assert_eq!(app.delete_post(5, &fifth[6]).await.0, StatusCode::OK);
    app.command("follow", 21, 5).await;
    last = app.publish(1, "last").await.1;
    crate::helpers::projector_reached(&app, "feed", &last).await;
    let before = feed_tables(&app).await;
    assert!(
        before.iter().all(|(_, rows)| !rows.is_empty()),
        "{before:#?}"
    );
    with_small_feed(&app, &["rebuild", "feed"]);
    let after = feed_tables(&app).await;
    for ((table, before), (_, after)) in before.iter().zip(&after) {
        assert_eq!(after, before, "{table}");
    }
    last = app.publish(2, "after the rebuild").await.1;
    crate::helpers::projector_reached(&app, "feed", &last).await;
    with_small_feed(&app, &["verify"]);
}
