//! The live feed stream (`GET /api/v1/feed/stream`, Server-Sent Events) read by a real SSE
//! client over HTTP: posts entering the feed arrive, every feed rule holds (mutes, blocks,
//! bans, deletions), and a reconnection with `Last-Event-ID` loses nothing. How fast they
//! arrive (within a second of the command's answer) is measured by `scripts/bench.sh` (j), not
//! here: the log's horizon is cluster-wide, and other tests running beside these hold it open
//! on purpose.

use std::time::{Duration, Instant};

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{spawn_app, TestApp};

/// How long a test waits for an item it expects (the read-your-writes wait of the other tests).
const DELIVERY: Duration = Duration::from_secs(15);

/// One server-sent event.
#[derive(Debug, Clone)]
struct Sse {
    id: Option<String>,
    event: String,
    data: Value,
}

/// A connected reader: parses the `text/event-stream` body as it arrives.
struct Reader {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
}

impl Reader {
    async fn connect(app: &TestApp, user: i64, last_event_id: Option<&str>) -> Self {
        let mut request = app
            .client
            .get(format!("{}/api/v1/feed/stream", app.base))
            .bearer_auth(app.token(user));
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(
            response.headers()["content-type"].to_str().unwrap(),
            "text/event-stream"
        );
        Self {
            body: response.bytes_stream().boxed(),
            buffer: String::new(),
        }
    }

    /// The next event (comments and keep-alives skipped), or `None` after `wait`.
    async fn next(&mut self, wait: Duration) -> Option<Sse> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut id, mut event, mut data) = (None, "message".to_owned(), String::new());
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        id = Some(v.trim().to_owned());
                    } else if let Some(v) = line.strip_prefix("event:") {
                        event = v.trim().to_owned();
                    } else if let Some(v) = line.strip_prefix("data:") {
                        data.push_str(v.trim());
                    }
                }
                if data.is_empty() {
                    continue;
                }
                return Some(Sse {
                    id,
                    event,
                    data: serde_json::from_str(&data).unwrap(),
                });
            }
            let chunk = tokio::time::timeout_at(deadline, self.body.next())
                .await
                .ok()??;
            self.buffer
                .push_str(&String::from_utf8_lossy(&chunk.unwrap()));
        }
    }
}

#[tokio::test]
async fn new_posts_and_deletions_reach_connected_readers_within_a_second_under_the_feed_rules() {
    let app = spawn_app().await;
    app.command("follow", 1, 2).await;
    app.command("follow", 1, 3).await;
    app.mute(1, 3, Value::Null).await;
    app.command("follow", 1, 4).await;
    let (_, body) = app.command("follow", 9, 2).await;
    let at = body["position"].as_str().unwrap().to_owned();
    // The replica has the follows before the reader connects.
    app.get(&format!(
        "/api/v1/relation/status?from=1&to=2&min_position={at}"
    ))
    .await;
    let mut reader = Reader::connect(&app, 1, None).await;
    let mut other = Reader::connect(&app, 9, None).await;

    let (post, _) = app.publish(2, "live").await;
    let event = reader.next(DELIVERY).await.expect("the post");
    assert_eq!(event.event, "post");
    assert_eq!(event.data["id"], json!(post));
    assert_eq!(event.data["author"], json!(2));
    assert_eq!(event.data["content"], json!("live"));
    assert!(event.id.is_some());
    assert_eq!(other.next(DELIVERY).await.unwrap().data["id"], json!(post));

    // Muted, not followed, and banned authors' posts never arrive; a deletion does.
    app.publish(3, "muted").await;
    app.publish(5, "a stranger").await;
    let ban = app
        .client
        .post(format!("{}/api/v1/admin/users/4/ban", app.base))
        .bearer_auth(app.admin_token(99))
        .send()
        .await
        .unwrap();
    assert_eq!(ban.status(), StatusCode::OK);
    app.publish(2, "second").await;
    let event = reader.next(DELIVERY).await.unwrap();
    assert_eq!(event.data["content"], json!("second"), "{event:?}");
    let (status, _) = app.delete_post(2, &post).await;
    assert_eq!(status, StatusCode::OK);
    let event = reader.next(DELIVERY).await.expect("the deletion");
    assert_eq!(
        (event.event.as_str(), event.data["id"].clone()),
        ("deleted", json!(post))
    );
    assert!(
        reader.next(Duration::from_millis(300)).await.is_none(),
        "nothing else"
    );
    // A block ends the follow: the blocker's posts stop.
    app.command("block", 2, 9).await;
    app.publish(2, "not for 9").await;
    let mut seen = Vec::new();
    while let Some(event) = other.next(Duration::from_millis(500)).await {
        seen.push(event.data["content"].clone());
    }
    assert!(!seen.contains(&json!("not for 9")), "{seen:?}");
}

#[tokio::test]
async fn a_reconnection_with_last_event_id_misses_nothing() {
    let app = spawn_app().await;
    let (_, body) = app.command("follow", 1, 2).await;
    let at = body["position"].as_str().unwrap().to_owned();
    app.get(&format!(
        "/api/v1/relation/status?from=1&to=2&min_position={at}"
    ))
    .await;
    let mut reader = Reader::connect(&app, 1, None).await;
    app.publish(2, "one").await;
    let first = reader.next(DELIVERY).await.unwrap();
    let last_id = first.id.clone().unwrap();
    drop(reader);
    // Posted while the reader was away.
    let mut missed = Vec::new();
    for i in 0..3 {
        let (id, _) = app.publish(2, &format!("away {i}")).await;
        missed.push(json!(id));
    }
    let mut reader = Reader::connect(&app, 1, Some(&last_id)).await;
    let (live, _) = app.publish(2, "after").await;
    let mut got = Vec::new();
    while got.len() < 4 {
        let event = reader.next(DELIVERY).await.expect("every post");
        got.push(event.data["id"].clone());
    }
    missed.push(json!(live));
    assert_eq!(
        got, missed,
        "the missed posts in order, then the live one, once each"
    );
    assert!(reader.next(Duration::from_millis(300)).await.is_none());
    let (status, _) = crate::helpers::read(
        app.client
            .get(format!("{}/api/v1/feed/stream", app.base))
            .bearer_auth(app.token(1))
            .header("last-event-id", "nope")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        app.get("/api/v1/feed/stream").await.0,
        StatusCode::UNAUTHORIZED
    );
    // Shutting down ends open streams, so draining does not wait on them.
    let started = Instant::now();
    app.stop().await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(reader.next(Duration::from_secs(1)).await.is_none());
}
