//! Issue 25's search for forgotten content: after an erasure, the erased user's posts and
//! comments are nowhere in plain text: not in any table of the database (the log included),
//! not in Redis, not in `relations replay`, not on the Kafka topic. The same search first finds
//! them where a reader must (the read models, the caches), so it is a search that can fail.

use serde_json::{json, Value};

use crate::broker::{kafka_config, read_topic, Broker};
use crate::helpers::{projector_reached, read, relations, spawn_with, TestApp};

/// The tables of the test's schema whose rows, as text, contain `needle`.
async fn tables_holding(app: &TestApp, needle: &str) -> Vec<String> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables
          WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert!(tables.iter().any(|t| t == "events"), "{tables:?}");
    let mut holding = Vec::new();
    for table in tables {
        let found: bool = sqlx::query_scalar(&format!(
            "SELECT EXISTS (SELECT 1 FROM {table} AS r WHERE strpos(r::text, $1) > 0)"
        ))
        .bind(needle)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if found {
            holding.push(table);
        }
    }
    holding
}

/// The keys under the test's Redis prefix whose values contain `needle`.
async fn redis_keys_holding(app: &TestApp, needle: &str) -> Vec<String> {
    let client = redis::Client::open(app.config.redis.redis_url.as_deref().unwrap()).unwrap();
    let mut redis = client.get_multiplexed_async_connection().await.unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}*", app.config.redis.redis_prefix))
        .query_async(&mut redis)
        .await
        .unwrap();
    let mut holding = Vec::new();
    for key in keys {
        let kind: String = redis::cmd("TYPE")
            .arg(&key)
            .query_async(&mut redis)
            .await
            .unwrap();
        let mut fetch = match kind.as_str() {
            "string" => redis::cmd("GET"),
            "hash" => redis::cmd("HGETALL"),
            "zset" => {
                let mut c = redis::cmd("ZRANGE");
                c.arg(&key).arg(0).arg(-1);
                c
            }
            "set" => redis::cmd("SMEMBERS"),
            "list" => {
                let mut c = redis::cmd("LRANGE");
                c.arg(&key).arg(0).arg(-1);
                c
            }
            _ => continue,
        };
        if !matches!(kind.as_str(), "zset" | "list") {
            fetch.arg(&key);
        }
        let value: redis::Value = fetch.query_async(&mut redis).await.unwrap();
        if format!("{value:?}").contains(needle) || bytes_of(&value).contains(needle) {
            holding.push(key);
        }
    }
    holding
}

/// Every byte string inside a Redis value, joined (lossy UTF-8).
fn bytes_of(value: &redis::Value) -> String {
    match value {
        redis::Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        redis::Value::SimpleString(text) => text.clone(),
        redis::Value::Array(items) | redis::Value::Set(items) => {
            items.iter().map(bytes_of).collect::<Vec<_>>().join("\n")
        }
        redis::Value::Map(pairs) => pairs
            .iter()
            .map(|(k, v)| format!("{}={}", bytes_of(k), bytes_of(v)))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// `relations replay`'s whole output.
fn replay(app: &TestApp) -> String {
    String::from_utf8(relations(app, &["replay"]).stdout).unwrap()
}

/// Every message on the topic, as text, once it holds every event of the log.
async fn topic(app: &TestApp) -> String {
    let events: i64 = sqlx::query_scalar("SELECT count(*) FROM events")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    read_topic(app, events as usize)
        .into_iter()
        .map(|(_, _, key, value)| format!("{key} {value}"))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn settled(app: &TestApp, position: &str) {
    for name in [
        "following",
        "feed",
        "history",
        "engagement",
        "feed_cache",
        "likes_cache",
        relations_kafka::relay::NAME,
    ] {
        projector_reached(app, name, position).await;
    }
}

async fn ok(app: &TestApp, user: i64, method: reqwest::Method, path: &str, body: Value) -> Value {
    let response = app
        .client
        .request(method, format!("{}{path}", app.base))
        .bearer_auth(app.token(user))
        .json(&body)
        .send()
        .await
        .unwrap();
    let (status, body) = read(response).await;
    assert!(status.is_success(), "{path}: {status} {body}");
    body
}

#[tokio::test]
async fn an_erased_users_content_is_nowhere_in_plain_text() {
    let broker = Broker::start();
    let app = spawn_with(kafka_config(&broker).await).await;
    let secret = format!("forget-me-{}", uuid::Uuid::new_v4().simple());
    let kept = format!("keep-me-{}", uuid::Uuid::new_v4().simple());
    let post = reqwest::Method::POST;

    // User 1 posts and comments; user 2 follows, likes, replies and reads, filling the caches.
    app.command("follow", 2, 1).await;
    let (theirs, _) = app.publish(1, &format!("{secret} in a post")).await;
    let (other, _) = app.publish(2, &format!("{kept} in a post")).await;
    let comment = ok(
        &app,
        1,
        post.clone(),
        &format!("/api/v1/posts/{other}/comments"),
        json!({"content": format!("{secret} in a comment")}),
    )
    .await;
    let comment = comment["comment"]["id"].as_str().unwrap().to_owned();
    let reply = ok(
        &app,
        2,
        post.clone(),
        &format!("/api/v1/posts/{other}/comments"),
        json!({"content": format!("{kept} in a reply"), "parent": comment}),
    )
    .await;
    ok(
        &app,
        2,
        post.clone(),
        &format!("/api/v1/posts/{theirs}/like"),
        json!({}),
    )
    .await;
    settled(&app, reply["position"].as_str().unwrap()).await;
    let (_, feed) = app.get_as(2, "/api/v1/feed").await;
    assert!(feed.to_string().contains(&secret), "{feed}");
    let (_, comments) = app
        .get_as(2, &format!("/api/v1/posts/{other}/comments"))
        .await;
    assert!(comments.to_string().contains(&secret), "{comments}");

    // Before: the search finds the content where readers need it, and never in the log.
    let before = tables_holding(&app, &secret).await;
    assert!(before.contains(&"rm_posts".to_owned()), "{before:?}");
    assert!(before.contains(&"rm_comments".to_owned()), "{before:?}");
    assert!(
        !before.contains(&"events".to_owned()),
        "plain text in the log: {before:?}"
    );
    assert!(
        replay(&app).contains(&secret),
        "replay opens it while the key lives"
    );
    assert!(
        !topic(&app).await.contains(&secret),
        "plain text on the topic"
    );

    let erased = ok(&app, 1, reqwest::Method::DELETE, "/api/v1/me", json!({})).await;
    settled(&app, erased["position"].as_str().unwrap()).await;

    // After: nowhere, and the other user's content is untouched.
    assert_eq!(tables_holding(&app, &secret).await, Vec::<String>::new());
    assert_eq!(
        redis_keys_holding(&app, &secret).await,
        Vec::<String>::new()
    );
    let replayed = replay(&app);
    assert!(!replayed.contains(&secret), "replay still shows it");
    assert!(
        replayed.contains("\"erased\":true"),
        "replay marks it erased"
    );
    assert!(
        replayed.contains(&kept),
        "replay lost the other user's content"
    );
    assert!(
        !topic(&app).await.contains(&secret),
        "plain text on the topic"
    );
    assert!(tables_holding(&app, &kept)
        .await
        .contains(&"rm_posts".to_owned()));
    let (_, feed) = app.get_as(2, "/api/v1/feed").await;
    assert!(!feed.to_string().contains(&secret), "{feed}");
}
