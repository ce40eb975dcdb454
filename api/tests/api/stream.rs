//! The live feed stream (`GET /api/v1/feed/stream`, Server-Sent Events) read by a real SSE
//! client over HTTP: posts entering the feed arrive, every feed rule holds (mutes, blocks,
//! bans, deletions), and a reconnection with `Last-Event-ID` loses nothing. How fast they
//! arrive (within a second of the command's answer) is measured by `scripts/bench.sh` (j), not
//! here: the log's horizon is cluster-wide, and other tests running beside these hold it open
//! on purpose. A stream's end on its token's revocation or its user's ban is held to a second
//! here, as `accounts.rs` holds every other request's refusal.

use std::time::{Duration, Instant};

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{json, Value};

use relations_domain::TokenStamp;

use crate::helpers::{read, spawn_app, spawn_with, user, TestApp};

/// How long a test waits for an item it expects (the read-your-writes wait of the other tests).
const DELIVERY: Duration = Duration::from_secs(15);

/// One server-sent event.
#[derive(Debug, Clone)]
pub(crate) struct Sse {
    pub(crate) id: Option<String>,
    pub(crate) event: String,
    pub(crate) data: Value,
}

/// A connected reader: parses the `text/event-stream` body as it arrives.
pub(crate) struct Reader {
    body: futures::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
}

impl Reader {
    async fn connect(app: &TestApp, user: i64, last_event_id: Option<&str>) -> Self {
        Self::connect_with(app, &app.token(user), last_event_id).await
    }

    /// Connects with `token`, waiting out a replica still loading (503).
    async fn connect_with(app: &TestApp, token: &str, last_event_id: Option<&str>) -> Self {
        Self::open(app, "/api/v1/feed/stream", token, last_event_id).await
    }

    /// Connects to the stream at `path` with `token`, waiting out a replica still loading.
    pub(crate) async fn open(
        app: &TestApp,
        path: &str,
        token: &str,
        last_event_id: Option<&str>,
    ) -> Self {
        let deadline = Instant::now() + DELIVERY;
        let response = loop {
            let mut request = app
                .client
                .get(format!("{}{path}", app.base))
                .bearer_auth(token);
            if let Some(id) = last_event_id {
                request = request.header("last-event-id", id);
            }
            let response = request.send().await.unwrap();
            if response.status() != StatusCode::SERVICE_UNAVAILABLE || Instant::now() > deadline {
                break response;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
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
    pub(crate) async fn next(&mut self, wait: Duration) -> Option<Sse> {
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

    /// Whether the server closes the stream within `wait`, sending no further event.
    async fn closes(&mut self, wait: Duration) -> bool {
        let closed = tokio::time::timeout(wait, async {
            while let Some(chunk) = self.body.next().await {
                self.buffer
                    .push_str(&String::from_utf8_lossy(&chunk.unwrap()));
            }
        })
        .await
        .is_ok();
        // Keep-alive comments aside, nothing came after the last event.
        closed
            && self
                .buffer
                .lines()
                .all(|l| l.is_empty() || l.starts_with(':'))
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

/// A token of `id` for `client` at version 1.
fn client_token(app: &TestApp, id: i64, client: &str) -> String {
    let stamp = TokenStamp {
        client: client.into(),
        ver: 1,
        bat: 0,
    };
    app.jwt
        .issue_stamped(user(id), false, Duration::from_secs(600), Some(&stamp))
        .unwrap()
}

/// `POST path` as an admin, which must answer 200.
async fn as_admin(app: &TestApp, path: &str, body: Value) {
    let (status, body) = read(
        app.client
            .post(format!("{}{path}", app.base))
            .bearer_auth(app.admin_token(99))
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// User 1 follows 2, and `app`'s replica has it (and is loaded).
async fn one_follows_two(app: &TestApp, via: &TestApp) {
    let (_, body) = via.command("follow", 1, 2).await;
    let at = body["position"].as_str().unwrap().to_owned();
    let (status, body) = app
        .get(&format!(
            "/api/v1/relation/status?from=1&to=2&min_position={at}"
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// How long after `since` the instance `app` first refuses `token` (any other request).
async fn refused_after(app: &TestApp, token: &str, since: Instant) -> Duration {
    loop {
        let status = app
            .client
            .get(format!("{}/api/v1/users/2/counts", app.base))
            .bearer_auth(token)
            .send()
            .await
            .unwrap()
            .status();
        if status.is_client_error() {
            return since.elapsed();
        }
        assert!(since.elapsed() < DELIVERY, "{token} is still accepted");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits for the `event: end` of `reader` (on `app`, with `token`), which must name `code`
/// and come within a second of `since` (the revocation's or ban's answer); the stream then
/// closes. The log's horizon is cluster-wide and other tests hold it open on purpose, so when
/// `app` itself learns of the change later than that (its other requests with `token` are
/// still accepted after a second), the stream must end within 250 ms of when it learns.
async fn ends_within_a_second(
    reader: &mut Reader,
    (app, token): (&TestApp, &str),
    since: Instant,
    code: &str,
) {
    let (event, refused) = tokio::join!(
        async {
            let event = reader.next(DELIVERY).await.expect("an end event");
            (event, since.elapsed())
        },
        refused_after(app, token, since)
    );
    let (event, ended) = event;
    assert_eq!(
        (event.event.as_str(), event.data["code"].as_str()),
        ("end", Some(code)),
        "{event:?}"
    );
    assert!(event.data["message"].is_string(), "{event:?}");
    eprintln!(
        "stream ended ({code}) {ended:?} after the answer; requests refused after {refused:?}"
    );
    assert!(
        ended < Duration::from_secs(1).max(refused + Duration::from_millis(250)),
        "the stream ended {ended:?} after the answer, the instance refused the token after {refused:?}"
    );
    assert!(
        reader.closes(Duration::from_secs(2)).await,
        "then it closes"
    );
}

/// A post by 2, published through `via`, reaches `reader`: its stream goes on.
async fn still_open(reader: &mut Reader, via: &TestApp) {
    let (post, _) = via.publish(2, "still here").await;
    let event = reader.next(DELIVERY).await.expect("the post");
    assert_eq!(
        (event.event.as_str(), &event.data["id"]),
        ("post", &json!(post))
    );
}

#[tokio::test]
async fn a_revoked_tokens_stream_ends_within_a_second_and_the_users_other_clients_stay_open() {
    let app = spawn_app().await;
    one_follows_two(&app, &app).await;
    let phone = client_token(&app, 1, "phone");
    let mut on_phone = Reader::connect_with(&app, &phone, None).await;
    let mut on_desktop = Reader::connect_with(&app, &client_token(&app, 1, "desktop"), None).await;

    let (status, body) = read(
        app.client
            .post(format!("{}/api/v1/me/logout", app.base))
            .bearer_auth(&phone)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    ends_within_a_second(
        &mut on_phone,
        (&app, &phone),
        Instant::now(),
        "TOKEN_REVOKED",
    )
    .await;

    // The desktop's token is not revoked: its stream goes on, and a new post reaches it.
    still_open(&mut on_desktop, &app).await;
    // The revoked token cannot open another stream.
    let response = app
        .client
        .get(format!("{}/api/v1/feed/stream", app.base))
        .bearer_auth(&phone)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_banned_users_stream_ends_within_a_second() {
    let app = spawn_app().await;
    one_follows_two(&app, &app).await;
    let token = app.token(1);
    let mut reader = Reader::connect_with(&app, &token, None).await;
    let mut other = Reader::connect(&app, 2, None).await;
    as_admin(&app, "/api/v1/admin/users/1/ban", json!({})).await;
    ends_within_a_second(&mut reader, (&app, &token), Instant::now(), "USER_BANNED").await;
    assert!(
        other.next(Duration::from_millis(300)).await.is_none(),
        "another user's stream goes on, sent nothing"
    );
    assert!(!other.closes(Duration::from_millis(100)).await);
}

/// Instances share no memory: the one holding the stream learns of the revocation from the
/// log, through its replica.
#[tokio::test]
async fn a_revocation_answered_by_one_instance_ends_the_stream_held_by_another_within_a_second() {
    let first = spawn_app().await;
    let second = spawn_with(first.config.clone()).await;
    one_follows_two(&second, &first).await;
    let (phone, tablet) = (
        client_token(&second, 1, "phone"),
        client_token(&second, 1, "tablet"),
    );
    let mut revoked = Reader::connect_with(&second, &phone, None).await;
    let mut kept = Reader::connect_with(&second, &tablet, None).await;

    as_admin(
        &first,
        "/api/v1/admin/users/1/revoke",
        json!({"client": "phone", "up_to": 1}),
    )
    .await;
    let on_second = (&second, phone.as_str());
    ends_within_a_second(&mut revoked, on_second, Instant::now(), "TOKEN_REVOKED").await;

    still_open(&mut kept, &first).await;

    // A ban answered by the first ends the rest on the second.
    as_admin(&first, "/api/v1/admin/users/1/ban", json!({})).await;
    ends_within_a_second(&mut kept, (&second, &tablet), Instant::now(), "USER_BANNED").await;
}

#[tokio::test]
async fn an_erased_users_stream_ends_within_a_second() {
    let app = spawn_app().await;
    one_follows_two(&app, &app).await;
    let token = app.token(1);
    let mut reader = Reader::connect_with(&app, &token, None).await;
    as_admin(&app, "/api/v1/admin/users/1/erase", json!({})).await;
    ends_within_a_second(
        &mut reader,
        (&app, &token),
        Instant::now(),
        "ACCOUNT_ERASED",
    )
    .await;
}

#[tokio::test]
async fn a_reader_whose_follow_ends_receives_no_later_followers_only_post() {
    let app = spawn_app().await;
    // 2 will unfollow 1, 3 is removed by 1, 4 is blocked by 1; all follow 9 too, whose posts
    // mark how far each stream has come.
    let mut at = String::new();
    for reader in [2, 3, 4] {
        for author in [1, 9] {
            let (_, body) = app.command("follow", reader, author).await;
            at = body["position"].as_str().unwrap().to_owned();
        }
    }
    app.get(&format!(
        "/api/v1/relation/status?from=4&to=9&min_position={at}"
    ))
    .await;
    let mut readers = Vec::new();
    for reader in [2, 3, 4] {
        readers.push(Reader::connect(&app, reader, None).await);
    }
    let publish = |content: &'static str, author: i64, visibility: &'static str| {
        let app = &app;
        async move {
            let body = json!({"content": content, "visibility": visibility});
            let (status, body) = app.post_with(author, body).await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
        }
    };
    publish("for followers", 1, "followers").await;
    for reader in &mut readers {
        let event = reader
            .next(DELIVERY)
            .await
            .expect("the followers-only post");
        assert_eq!(event.data["content"], json!("for followers"));
        assert_eq!(event.data["visibility"], json!("followers"));
    }
    // The follows end, each its own way; the next followers-only post reaches none of them.
    assert_eq!(app.command("unfollow", 2, 1).await.0, StatusCode::OK);
    assert_eq!(app.command("remove_follower", 1, 3).await.0, StatusCode::OK);
    assert_eq!(app.command("block", 1, 4).await.0, StatusCode::OK);
    publish("after the end", 1, "followers").await;
    publish("public, unfollowed", 1, "public").await;
    publish("marker", 9, "public").await;
    for (reader, who) in readers.iter_mut().zip([2, 3, 4]) {
        let event = reader.next(DELIVERY).await.expect("the marker");
        assert_eq!(
            event.data["content"],
            json!("marker"),
            "reader {who}: {event:?}"
        );
    }
}

/// SPEC's hardening: at most `RELATIONS_STREAMS_PER_USER` (5 here) live streams per user,
/// feed and notifications together; one more is 429 `TOO_MANY_STREAMS` and leaves the open
/// ones open; a stream closed gives its slot back; another user is not counted.
#[tokio::test]
async fn a_user_holds_at_most_five_live_streams_and_one_more_is_refused() {
    let app = spawn_app().await;
    let token = app.token(1);
    let mut open = Vec::new();
    for path in ["/api/v1/feed/stream", "/api/v1/notifications/stream"]
        .iter()
        .cycle()
        .take(5)
    {
        open.push(Reader::open(&app, path, &token, None).await);
    }
    for path in ["/api/v1/feed/stream", "/api/v1/notifications/stream"] {
        let (status, body) = crate::helpers::read(
            app.client
                .get(format!("{}{path}", app.base))
                .bearer_auth(&token)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(
            (status, crate::helpers::code(&body)),
            (StatusCode::TOO_MANY_REQUESTS, "TOO_MANY_STREAMS"),
            "{path}"
        );
    }
    // Another user is not counted; the open streams still carry what happens.
    let _other = Reader::open(&app, "/api/v1/feed/stream", &app.token(2), None).await;
    assert_eq!(app.command("follow", 1, 3).await.0, StatusCode::OK);
    let (post, _) = app.publish(3, "still live").await;
    let event = open[0]
        .next(DELIVERY)
        .await
        .expect("the open stream carries on");
    assert_eq!(event.data["id"], json!(post));
    // A stream closed gives its slot back: the server notices at a write to it (a post in
    // its feed here; the keep-alive otherwise, within 15 s).
    drop(open.remove(0));
    let deadline = Instant::now() + DELIVERY;
    loop {
        app.publish(3, "noticed?").await;
        let response = app
            .client
            .get(format!("{}/api/v1/feed/stream", app.base))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap();
        if response.status() == StatusCode::OK {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the closed stream's slot never came back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_repost_reaches_the_reposters_followers_live_and_on_reconnection_under_the_rules() {
    let app = spawn_app().await;
    // 1 follows 2 (the reposter), not 3 (the author); 1 mutes 4.
    app.mute(1, 4, Value::Null).await;
    let (post, _) = app.publish(3, "travel far").await;
    let (muted, _) = app.publish(4, "muted author").await;
    // The replica has the follow before the reader connects.
    one_follows_two(&app, &app).await;
    let mut reader = Reader::connect(&app, 1, None).await;
    let repost = |user: i64, post: String| {
        let app = &app;
        async move {
            let path = format!("/api/v1/posts/{post}/repost");
            let (status, body) = app.post_as(user, &path, json!({})).await;
            assert_eq!(status, StatusCode::OK, "{body}");
        }
    };
    // A repost of a muted author's post does not arrive; the other does, as the post itself
    // with its reposter.
    repost(2, muted.clone()).await;
    repost(2, post.clone()).await;
    let event = reader.next(DELIVERY).await.expect("the repost");
    assert_eq!(event.event, "post");
    assert_eq!(
        (
            &event.data["id"],
            &event.data["author"],
            &event.data["reposted_by"]
        ),
        (&json!(post), &json!(3), &json!([2]))
    );
    assert_eq!(event.data["content"], json!("travel far"));
    let last_id = event.id.clone().unwrap();
    assert!(reader.next(Duration::from_millis(300)).await.is_none());
    drop(reader);
    // Reposted while the reader was away: sent on reconnection, in order.
    let (other, _) = app.publish(5, "another").await;
    repost(2, other.clone()).await;
    let mut reader = Reader::connect(&app, 1, Some(&last_id)).await;
    let event = reader.next(DELIVERY).await.expect("the missed repost");
    assert_eq!(
        (&event.data["id"], &event.data["reposted_by"]),
        (&json!(other), &json!([2]))
    );
}

#[tokio::test]
async fn a_quote_arrives_live_with_its_quoted_post_as_the_reader_may_see_it() {
    let app = spawn_app().await;
    // 1 follows 2; 3's public post, and 4's post, 4 blocking 1.
    let (open, _) = app.publish(3, "quoted in the open").await;
    let (hidden, _) = app.publish(4, "not for 1").await;
    app.command("block", 4, 1).await;
    one_follows_two(&app, &app).await;
    let mut reader = Reader::connect(&app, 1, None).await;
    let quote = |post: String| {
        let app = &app;
        async move {
            let body = json!({ "content": "look", "quote_of": post });
            let (status, body) = app.post_with(2, body).await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
        }
    };
    // 2's quote of 3's post arrives with the post embedded; of 4's, unavailable, no content.
    quote(open.clone()).await;
    let event = reader.next(DELIVERY).await.expect("the first quote");
    assert_eq!(event.data["quote"]["id"], json!(open));
    assert_eq!(event.data["quote"]["content"], json!("quoted in the open"));
    assert!(event.data["quote"].get("quote").is_none(), "{}", event.data);
    quote(hidden.clone()).await;
    let event = reader.next(DELIVERY).await.expect("the second quote");
    assert_eq!(
        event.data["quote"],
        json!({ "id": hidden, "state": "unavailable" })
    );
    // 2's repost of 5's quote of 3's post arrives with the quoted post embedded too.
    let body = json!({ "content": "quoting too", "quote_of": open });
    let (status, quoting) = app.post_with(5, body).await;
    assert_eq!(status, StatusCode::CREATED, "{quoting}");
    let quoting = quoting["post"]["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/posts/{quoting}/repost");
    let (status, body) = app.post_as(2, &path, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let event = reader.next(DELIVERY).await.expect("the repost of a quote");
    assert_eq!(
        (&event.data["id"], &event.data["reposted_by"]),
        (&json!(quoting), &json!([2]))
    );
    assert_eq!(event.data["quote"]["content"], json!("quoted in the open"));
}

#[tokio::test]
async fn the_readers_home_filters_hold_on_the_live_stream() {
    let app = spawn_app().await;
    one_follows_two(&app, &app).await;
    // 1 hides "spoiler" and warns of "finale" at home.
    let mut ids = Vec::new();
    for (phrase, action) in [("spoiler", "hide"), ("Finale", "warn")] {
        let body = json!({ "phrase": phrase, "contexts": ["home"], "action": action });
        let (status, made) = app.post_as(1, "/api/v1/filters", body).await;
        assert_eq!(status, StatusCode::CREATED, "{made}");
        ids.push(made["filter"]["id"].clone());
    }
    let mut reader = Reader::connect(&app, 1, None).await;
    for content in ["a SPOILER here", "the finale", "plain"] {
        app.publish(2, content).await;
    }
    // The hidden post never arrives; the warned one arrives marked, the plain one as it is.
    let event = reader.next(DELIVERY).await.expect("the warned post");
    assert_eq!(event.data["content"], "the finale", "{}", event.data);
    let marks = json!([{ "filter": ids[1], "phrase": "Finale" }]);
    assert_eq!(event.data["filtered"], marks);
    let event = reader.next(DELIVERY).await.expect("the plain post");
    assert_eq!(event.data["content"], "plain", "{}", event.data);
    assert!(event.data.get("filtered").is_none(), "{}", event.data);
}
