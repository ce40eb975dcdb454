//! Issue 25's crypto-shredding: post and comment content sealed in the log with its author's
//! key (payload version 2), a log that still holds version-1 events read by every reader,
//! `relations migrate` sealing those in place once, and a destroyed key leaving the content
//! null in replays and rebuilt read models.

use std::process::Command;

use reqwest::StatusCode;
use serde_json::{json, Value};

use relations_store::log::{self, RecordedEvent};
use relations_store::LogPosition;

use crate::helpers::{assert_verified, read, spawn_app, TestApp};

const BIN: &str = env!("CARGO_BIN_EXE_relations");

/// Runs `relations <args>` against the app's database; stdout, asserting success.
fn relations(app: &TestApp, args: &[&str]) -> String {
    String::from_utf8(crate::helpers::relations(app, args).stdout).unwrap()
}

/// `relations replay`'s content events, as (type, data, version).
fn replayed_content(app: &TestApp) -> Vec<(String, Value, String)> {
    relations(
        app,
        &[
            "replay",
            "--type",
            "PostPublished",
            "--type",
            "CommentAdded",
        ],
    )
    .lines()
    .map(|line| serde_json::from_str::<Value>(line).unwrap())
    .map(|e| {
        let kind = e["type"].as_str().unwrap().to_owned();
        (
            kind,
            e["data"].clone(),
            e["version"].as_str().unwrap().to_owned(),
        )
    })
    .collect()
}

/// Appends what an older build wrote: a version-1 `PostPublished` by `author` with its
/// content in plain text; the post's id and the event's position.
async fn old_post(app: &TestApp, author: i64, content: &str) -> (String, String) {
    let id = uuid::Uuid::now_v7().to_string();
    let data = json!({"PostPublished": {
        "post_id": id, "author": author, "content": content,
        "created_at": "2026-11-20T10:00:00.123456Z",
    }});
    let position = append_old(app, "post", &id, 1, "PostPublished", data, author).await;
    (id, position)
}

/// Appends a version-1 `CommentAdded` (comment `n` of `post`, by `author`) in plain text.
async fn old_comment(
    app: &TestApp,
    post: &str,
    post_author: i64,
    n: u32,
    author: i64,
    content: &str,
) -> String {
    let data = json!({"CommentAdded": {
        "post_id": post, "comment": n, "author": author, "post_author": post_author,
        "parent": null, "content": content, "created_at": "2026-11-20T10:00:01.000001Z",
    }});
    append_old(
        app,
        "thread",
        post,
        i64::from(n),
        "CommentAdded",
        data,
        author,
    )
    .await
}

async fn append_old(
    app: &TestApp,
    stream_type: &str,
    stream: &str,
    sequence: i64,
    event_type: &str,
    payload: Value,
    actor: i64,
) -> String {
    let (tx, at): (String, i64) = sqlx::query_as(
        "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
         VALUES ($1, $2, $3, $4, '1', $5::jsonb::json, $6::jsonb::json)
         RETURNING transaction_id::text, global_position",
    )
    .bind(stream_type)
    .bind(stream)
    .bind(sequence)
    .bind(event_type)
    .bind(payload)
    .bind(json!({"request_id": "old", "actor": actor.to_string()}))
    .fetch_one(&app.pool)
    .await
    .unwrap();
    format!("{tx}.{at}")
}

/// Comments on `post` as `user`; the comment's id and position.
async fn comment(app: &TestApp, user: i64, post: &str, content: &str) -> (String, String) {
    let (status, body) = read(
        app.client
            .post(format!("{}/api/v1/posts/{post}/comments", app.base))
            .bearer_auth(app.token(user))
            .json(&json!({ "content": content }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    (
        body["comment"]["id"].as_str().unwrap().to_owned(),
        body["position"].as_str().unwrap().to_owned(),
    )
}

/// The contents of `reader`'s feed, newest first, once it has `at`.
async fn feed(app: &TestApp, reader: i64, at: &str) -> Vec<Value> {
    let (status, page) = app
        .get_as(reader, &format!("/api/v1/feed?min_position={at}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["content"].clone())
        .collect()
}

/// The contents of `post`'s comments, oldest first, once they have `at`.
async fn comments(app: &TestApp, post: &str, at: &str) -> Vec<Value> {
    let (status, page) = app
        .get(&format!("/api/v1/posts/{post}/comments?min_position={at}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let mut contents: Vec<(String, Value)> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["id"].as_str().unwrap().to_owned(), c["content"].clone()))
        .collect();
    contents.sort_by_key(|(id, _)| id.rsplit('.').next().unwrap().parse::<u32>().unwrap());
    contents.into_iter().map(|(_, content)| content).collect()
}

/// Every content event's stored row: (type, version, payload as text).
async fn stored_content(app: &TestApp) -> Vec<(String, String, String)> {
    sqlx::query_as(
        "SELECT event_type, event_version, payload::text FROM events
          WHERE event_type IN ('PostPublished', 'CommentAdded')
          ORDER BY transaction_id, global_position",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// The content events as the relay publishes them (the stored payload, sealed for version 2)
/// and as a Kafka consumer projector reads them back and opens them: their contents.
async fn consumed_from_kafka(app: &TestApp) -> Vec<Value> {
    let mut conn = app.pool.acquire().await.unwrap();
    let stored = log::read_after(&mut conn, LogPosition::START, 1_000)
        .await
        .unwrap();
    let mut consumed = Vec::new();
    for event in stored {
        if !log::CONTENT_TYPES.contains(&event.event_type()) {
            continue;
        }
        let published = event.envelope();
        let sealed = event.event_version == log::SEALED_VERSION;
        assert_eq!(
            published["data"].get("sealed").is_some(),
            sealed,
            "{published}"
        );
        assert_eq!(
            published["data"].get("content").is_some(),
            !sealed,
            "{published}"
        );
        consumed.push(RecordedEvent::from_envelope(&published).unwrap());
    }
    let keys = app.config.keys.keyring(&app.pool).unwrap();
    log::reveal(&keys, &mut consumed).await.unwrap();
    consumed
        .iter()
        .map(|e| e.data()["content"].clone())
        .collect()
}

#[test]
fn a_malformed_or_missing_master_key_refuses_to_start_without_showing_it() {
    for verb in ["serve", "migrate", "replay", "project", "verify"] {
        let output = Command::new(BIN)
            .arg(verb)
            .env("DATABASE_URL", "postgres://postgres@127.0.0.1:1/none")
            .env("REDIS_URL", "redis://127.0.0.1:1")
            .env("RELATIONS_JWT_SECRET", crate::helpers::SECRET)
            .env(
                "RELATIONS_MASTER_KEY",
                "00112233445566778899aabbccddeeffSECRETVALUE",
            )
            .output()
            .unwrap();
        assert!(!output.status.success(), "{verb}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("RELATIONS_MASTER_KEY"), "{verb}: {stderr}");
        assert!(stderr.contains("64 hex digits"), "{verb}: {stderr}");
        assert!(!stderr.contains("SECRETVALUE"), "{verb}: {stderr}");
        assert!(!stderr.contains("00112233"), "{verb}: {stderr}");
    }
    let output = Command::new(BIN)
        .arg("replay")
        .env("DATABASE_URL", "postgres://postgres@127.0.0.1:1/none")
        .env_remove("RELATIONS_MASTER_KEY")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--master-key"), "{stderr}");
}

#[tokio::test]
async fn content_is_sealed_in_the_log_and_a_log_of_both_versions_reads_everywhere() {
    let app = spawn_app().await;
    app.command("follow", 1, 5).await;
    app.command("follow", 1, 7).await;
    // An older build's post and comment, in plain text; then this build's, sealed.
    let (old, _) = old_post(&app, 5, "written in plain text").await;
    old_comment(&app, &old, 5, 1, 6, "an old comment").await;
    let (new, _) = app.publish(7, "sealed on the way in").await;
    comment(&app, 8, &old, "a new comment on an old post").await;
    let (_, at) = comment(&app, 6, &new, "a new comment").await;

    let stored = stored_content(&app).await;
    let versions: Vec<(&str, &str)> = stored
        .iter()
        .map(|(t, v, _)| (t.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        versions,
        [
            ("PostPublished", "1"),
            ("CommentAdded", "1"),
            ("PostPublished", "2"),
            ("CommentAdded", "2"),
            ("CommentAdded", "2"),
        ]
    );
    for (_, version, payload) in &stored[2..] {
        assert_eq!(version, "2");
        assert!(payload.contains("\"sealed\""), "{payload}");
        assert!(!payload.contains("\"content\""), "{payload}");
        assert!(!payload.contains("sealed on the way in"), "{payload}");
        assert!(!payload.contains("new comment"), "{payload}");
    }
    let keys: i64 = sqlx::query_scalar("SELECT count(*) FROM data_keys")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        keys, 3,
        "one key per author who wrote sealed content (7, 8, 6)"
    );

    // The feed projector, the live read of comments, and replay read both versions.
    let expected_feed = [
        json!("sealed on the way in"),
        json!("written in plain text"),
    ];
    assert_eq!(feed(&app, 1, &at).await, expected_feed);
    let old_comments = [
        json!("an old comment"),
        json!("a new comment on an old post"),
    ];
    assert_eq!(comments(&app, &old, &at).await, old_comments);
    assert_eq!(comments(&app, &new, &at).await, [json!("a new comment")]);
    let replayed = replayed_content(&app);
    let seen: Vec<(&str, &Value, &Value, &str)> = replayed
        .iter()
        .map(|(t, d, v)| (t.as_str(), &d["content"], &d["erased"], v.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            (
                "PostPublished",
                &json!("written in plain text"),
                &json!(false),
                "1"
            ),
            ("CommentAdded", &json!("an old comment"), &json!(false), "1"),
            (
                "PostPublished",
                &json!("sealed on the way in"),
                &json!(false),
                "2"
            ),
            (
                "CommentAdded",
                &json!("a new comment on an old post"),
                &json!(false),
                "2"
            ),
            ("CommentAdded", &json!("a new comment"), &json!(false), "2"),
        ]
    );
    assert!(replayed.iter().all(|(_, d, _)| d.get("sealed").is_none()));
    assert_eq!(
        consumed_from_kafka(&app).await,
        replayed
            .iter()
            .map(|(_, d, _)| d["content"].clone())
            .collect::<Vec<_>>()
    );
    assert_verified(&app).await;

    // A rebuild from the log gives the same rows.
    relations(&app, &["rebuild", "feed"]);
    relations(&app, &["rebuild", "engagement"]);
    assert_eq!(feed(&app, 1, &at).await, expected_feed);
    assert_eq!(comments(&app, &old, &at).await, old_comments);
    assert_verified(&app).await;
}

#[tokio::test]
async fn migrate_seals_version_1_content_in_place_once_keeping_every_id_and_position() {
    let app = spawn_app().await;
    app.command("follow", 1, 5).await;
    let (old, _) = old_post(&app, 5, "plain post").await;
    old_comment(&app, &old, 5, 1, 6, "plain comment").await;
    let (_, at) = app.publish(5, "sealed post").await;
    let identity = |app: &TestApp| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_as::<
                _,
                (
                    uuid::Uuid,
                    String,
                    String,
                    i64,
                    String,
                    i64,
                    String,
                    String,
                    String,
                ),
            >(
                "SELECT event_id, aggregate_type, aggregate_id, sequence, event_type,
                        global_position, transaction_id::text, occurred_at::text, metadata::text
                   FROM events ORDER BY transaction_id, global_position",
            )
            .fetch_all(&pool)
            .await
            .unwrap()
        }
    };
    let before = identity(&app).await;
    let stored_before = stored_content(&app).await;

    // The trigger refuses any rewrite but the sanctioned one.
    let refused =
        sqlx::query("UPDATE events SET event_version = '2' WHERE event_type = 'PostPublished'")
            .execute(&app.pool)
            .await
            .unwrap_err();
    assert!(refused.to_string().contains("append-only"), "{refused}");
    let mut tx = app.pool.begin().await.unwrap();
    sqlx::query("SET LOCAL relations.rewrite = 'seal-content'")
        .execute(&mut *tx)
        .await
        .unwrap();
    let moved = sqlx::query(
        "UPDATE events SET event_version = '2', event_id = gen_random_uuid(),
                payload = json_build_object('PostPublished', json_build_object('sealed', 'x'))
          WHERE event_type = 'PostPublished' AND event_version = '1'",
    )
    .execute(&mut *tx)
    .await
    .unwrap_err();
    assert!(moved.to_string().contains("append-only"), "{moved}");
    tx.rollback().await.unwrap();
    let newest: String =
        sqlx::query_scalar("SELECT name FROM log_partitions ORDER BY low DESC LIMIT 1")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    for refused in [
        "DELETE FROM events".to_owned(),
        "TRUNCATE events".to_owned(),
        "DELETE FROM events_0".to_owned(),
        "TRUNCATE events_0".to_owned(),
        format!("TRUNCATE {newest}"),
    ] {
        let error = sqlx::query(&refused).execute(&app.pool).await.unwrap_err();
        assert!(
            error.to_string().contains("append-only"),
            "{refused}: {error}"
        );
    }

    relations(&app, &["migrate"]);
    assert_eq!(
        identity(&app).await,
        before,
        "ids, streams, positions, times kept"
    );
    let sealed = stored_content(&app).await;
    assert_eq!(sealed.len(), 3);
    for (_, version, payload) in &sealed {
        assert_eq!(version, "2");
        assert!(!payload.contains("plain"), "{payload}");
        assert!(!payload.contains("\"content\""), "{payload}");
    }
    assert_eq!(
        sealed[2], stored_before[2],
        "a sealed event is left as it was"
    );
    relations(&app, &["migrate"]);
    assert_eq!(
        stored_content(&app).await,
        sealed,
        "a second run changes nothing"
    );

    let replayed = replayed_content(&app);
    let contents: Vec<&Value> = replayed.iter().map(|(_, d, _)| &d["content"]).collect();
    assert_eq!(
        contents,
        [
            &json!("plain post"),
            &json!("plain comment"),
            &json!("sealed post")
        ]
    );
    relations(&app, &["rebuild", "feed"]);
    relations(&app, &["rebuild", "engagement"]);
    assert_eq!(
        feed(&app, 1, &at).await,
        [json!("sealed post"), json!("plain post")]
    );
    assert_eq!(comments(&app, &old, &at).await, [json!("plain comment")]);
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_destroyed_key_leaves_the_content_null_in_replays_and_rebuilt_read_models() {
    let app = spawn_app().await;
    let (post, _) = app.publish(5, "to be forgotten").await;
    let (kept, _) = app.publish(6, "to be kept").await;
    comment(&app, 5, &kept, "a forgotten comment").await;
    let (_, at) = comment(&app, 6, &post, "a kept comment").await;
    assert_eq!(
        comments(&app, &kept, &at).await,
        [json!("a forgotten comment")]
    );

    // What the erasure does to the key (in its own transaction, beside its event).
    sqlx::query("DELETE FROM data_keys WHERE user_id = 5")
        .execute(&app.pool)
        .await
        .unwrap();
    let replayed = replayed_content(&app);
    let seen: Vec<(&Value, &Value)> = replayed
        .iter()
        .map(|(_, d, _)| (&d["content"], &d["erased"]))
        .collect();
    assert_eq!(
        seen,
        [
            (&Value::Null, &json!(true)),
            (&json!("to be kept"), &json!(false)),
            (&Value::Null, &json!(true)),
            (&json!("a kept comment"), &json!(false)),
        ]
    );
    assert!(
        replayed.iter().all(|(_, d, _)| d["author"].is_i64()),
        "ids stay"
    );

    relations(&app, &["rebuild", "feed"]);
    relations(&app, &["rebuild", "engagement"]);
    let posts: Vec<(i64, Option<String>)> =
        sqlx::query_as("SELECT author, content FROM rm_posts ORDER BY seq")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(posts, [(5, None), (6, Some("to be kept".to_owned()))]);
    let comments: Vec<(i64, Option<String>)> =
        sqlx::query_as("SELECT author, content FROM rm_comments ORDER BY created_at")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        comments,
        [(5, None), (6, Some("a kept comment".to_owned()))]
    );
    for (_, _, payload) in stored_content(&app).await {
        assert!(!payload.contains("forgotten"), "{payload}");
    }
}
