//! Filters (issue 47), given/when/then over HTTP against the real services: a filter made,
//! listed and deleted, and its refusals (no change of state); the limit of 100 live filters,
//! which an expired one leaves; `hide` and `warn` in each context (the home feed, `new_count`,
//! list feeds, comments and replies, notifications), case-insensitive, whole words in Latin
//! and Chinese text, ending at their expiry; phrases sealed in the log and forgotten at
//! erasure.

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::helpers::{assert_verified, code, head, read, spawn_app, TestApp};

async fn call(
    app: &TestApp,
    user: i64,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = app
        .client
        .request(method, format!("{}{path}", app.base))
        .bearer_auth(app.token(user));
    if let Some(body) = body {
        request = request.json(&body);
    }
    read(request.send().await.unwrap()).await
}

/// `user` makes a filter of `body`: the status and the answer.
async fn make(app: &TestApp, user: i64, body: Value) -> (StatusCode, Value) {
    call(app, user, Method::POST, "/api/v1/filters", Some(body)).await
}

/// `user` makes a filter of `phrase`, `action` in `contexts`; its id.
async fn filter(
    app: &TestApp,
    user: i64,
    phrase: &str,
    whole_word: bool,
    contexts: &[&str],
    action: &str,
) -> String {
    let body =
        json!({"phrase": phrase, "whole_word": whole_word, "contexts": contexts, "action": action});
    let (status, answer) = make(app, user, body).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    answer["filter"]["id"].as_str().unwrap().to_owned()
}

/// `user`'s live filters, once every write is read.
async fn listed(app: &TestApp, user: i64) -> Vec<Value> {
    let path = format!("/api/v1/filters?min_position={}", head(app).await);
    let (status, body) = app.get_as(user, &path).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["items"].as_array().unwrap().clone()
}

/// The contents of `reader`'s page at `path` (every write read), each with its `filtered`.
async fn page(app: &TestApp, reader: i64, path: &str) -> Vec<(String, Value)> {
    let sep = if path.contains('?') { '&' } else { '?' };
    let path = format!("{path}{sep}min_position={}", head(app).await);
    let (status, body) = app.get_as(reader, &path).await;
    assert_eq!(status, StatusCode::OK, "{path}: {body}");
    body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["content"].as_str().unwrap_or_default().to_owned(),
                i["filtered"].clone(),
            )
        })
        .collect()
}

fn contents(items: &[(String, Value)]) -> Vec<&str> {
    items.iter().map(|(c, _)| c.as_str()).collect()
}

#[tokio::test]
async fn a_filter_is_made_listed_and_deleted_and_bad_ones_change_nothing() {
    let app = spawn_app().await;
    let body = json!({"phrase": "Spoiler", "whole_word": true, "contexts": ["home", "comments", "home"],
                      "action": "warn", "expires_in_secs": 3600});
    let (status, answer) = make(&app, 1, body).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let made = &answer["filter"];
    assert_eq!(made["phrase"], "Spoiler");
    assert_eq!(made["whole_word"], true);
    assert_eq!(made["contexts"], json!(["home", "comments"]));
    assert_eq!(made["action"], "warn");
    assert_eq!(made["expires_in_secs"], 3600);
    assert!(
        made["expires_at"].is_string() && answer["position"].is_string(),
        "{answer}"
    );
    let id = made["id"].as_str().unwrap().to_owned();
    let items = listed(&app, 1).await;
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["id"], id.as_str());
    assert!(items[0]["expires_in_secs"].as_i64().unwrap() <= 3600);
    assert!(
        listed(&app, 2).await.is_empty(),
        "another user's filters are theirs"
    );

    // Bad input: 400, and nothing appended.
    let before = app.event_count().await;
    let long = "字".repeat(101);
    let bad = [
        json!({"phrase": "", "contexts": ["home"], "action": "hide"}),
        json!({"phrase": long, "contexts": ["home"], "action": "hide"}),
        json!({"phrase": "a\u{0}b", "contexts": ["home"], "action": "hide"}),
        json!({"phrase": "x", "contexts": [], "action": "hide"}),
        json!({"phrase": "x", "contexts": ["public"], "action": "hide"}),
        json!({"phrase": "x", "contexts": ["home"], "action": "mute"}),
        json!({"phrase": "x", "contexts": ["home"], "action": "hide", "expires_in_secs": 0}),
        json!({"phrase": "x", "contexts": ["home"], "action": "hide", "expires_in_secs": i64::MAX}),
        json!({"phrase": "x", "contexts": ["home"], "action": "hide", "extra": 1}),
        json!({"phrase": "x", "contexts": ["home"], "action": "hide", "expires_in_secs": 1.5}),
        json!({"contexts": ["home"], "action": "hide"}),
    ];
    for body in bad {
        let (status, answer) = make(&app, 1, body.clone()).await;
        assert_eq!(
            (status, code(&answer)),
            (StatusCode::BAD_REQUEST, "INVALID_INPUT"),
            "{body}: {answer}"
        );
    }
    // Another user's filter, an unknown one, a malformed id: 404.
    for (user, path) in [
        (2, format!("/api/v1/filters/{id}")),
        (1, format!("/api/v1/filters/{}", uuid::Uuid::now_v7())),
        (1, "/api/v1/filters/nope".to_owned()),
    ] {
        let (status, answer) = call(&app, user, Method::DELETE, &path, None).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}: {answer}");
    }
    assert_eq!(app.event_count().await, before);

    let (status, answer) = call(
        &app,
        1,
        Method::DELETE,
        &format!("/api/v1/filters/{id}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(answer["position"].is_string(), "{answer}");
    assert!(listed(&app, 1).await.is_empty());
    let (status, _) = call(
        &app,
        1,
        Method::DELETE,
        &format!("/api/v1/filters/{id}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "a deleted filter is gone");
    // An integral number written with a fraction's point is an integer (JSON Schema's rule).
    let body =
        json!({"phrase": "x", "contexts": ["home"], "action": "hide", "expires_in_secs": 120.0});
    let (status, answer) = make(&app, 1, body).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(answer["filter"]["expires_in_secs"], 120);
    assert_verified(&app).await;
}

#[tokio::test]
async fn at_most_a_hundred_live_filters_and_an_expired_one_leaves_room() {
    let app = spawn_app().await;
    for n in 1..100 {
        filter(&app, 1, &format!("word{n}"), false, &["home"], "hide").await;
    }
    // The hundredth ends by itself in two seconds.
    let short = json!({"phrase": "soon over", "contexts": ["home"], "action": "hide", "expires_in_secs": 2});
    let (status, answer) = make(&app, 1, short).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let one_more = json!({"phrase": "one more", "contexts": ["home"], "action": "hide"});
    let (status, answer) = make(&app, 1, one_more.clone()).await;
    assert_eq!(
        (status, code(&answer)),
        (StatusCode::CONFLICT, "FILTER_LIMIT_REACHED"),
        "{answer}"
    );
    assert_eq!(listed(&app, 1).await.len(), 100);
    // Once the first has ended by itself, it is no longer listed nor counted.
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert_eq!(listed(&app, 1).await.len(), 99);
    let (status, answer) = make(&app, 1, one_more).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    assert_eq!(listed(&app, 1).await.len(), 100);
    // The ended one was cleared away with that creation: the table holds the 100 live ones.
    let kept: i64 = sqlx::query_scalar("SELECT count(*) FROM rm_filters WHERE user_id = 1")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(kept, 100);
    assert_verified(&app).await;
}

#[tokio::test]
async fn hide_and_warn_hold_in_the_home_feed_new_count_and_list_feeds() {
    let app = spawn_app().await;
    // Given 1 following 2 and 3, and a list of 1's with 3 in it.
    for b in [2, 3] {
        let (status, body) = app.command("follow", 1, b).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let body = json!({"title": "friends"});
    let (_, list) = call(&app, 1, Method::POST, "/api/v1/lists", Some(body)).await;
    let list = list["list"]["id"].as_str().unwrap().to_owned();
    let members = json!({"users": [3]});
    let (status, body) = call(
        &app,
        1,
        Method::POST,
        &format!("/api/v1/lists/{list}/members"),
        Some(members),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for (author, content) in [
        (2, "plain words"),
        (2, "A SPOILER ahead"),
        (2, "spoilers are fine"),
        (3, "我喜欢猫"),
        (3, "concatenate the cats"),
    ] {
        app.publish(author, content).await;
    }
    let feed = page(&app, 1, "/api/v1/feed").await;
    assert_eq!(feed.len(), 5);
    let (status, count) = app.get_as(1, "/api/v1/feed/new_count").await;
    assert_eq!(
        (status, count["count"].as_i64()),
        (StatusCode::OK, Some(0)),
        "{count}"
    );

    // When 1 hides the whole word "spoiler" and "猫" at home, and warns of "cat" in lists.
    let spoiler = filter(&app, 1, "Spoiler", true, &["home"], "hide").await;
    filter(&app, 1, "猫", true, &["home"], "hide").await;
    let cat = filter(&app, 1, "cat", false, &["lists"], "warn").await;
    // Then the home feed leaves out "A SPOILER ahead" and "我喜欢猫", not "spoilers".
    let feed = page(&app, 1, "/api/v1/feed").await;
    assert_eq!(
        contents(&feed),
        ["concatenate the cats", "spoilers are fine", "plain words"]
    );
    assert!(
        feed.iter().all(|(_, f)| f.is_null()),
        "no warn filter at home: {feed:?}"
    );
    // The same from PostgreSQL (a time bound is never answered from memory).
    let from_postgres = page(&app, 1, "/api/v1/feed?max_time=2100-01-01T00:00:00Z").await;
    assert_eq!(from_postgres, feed);
    // The list feed shows 3's posts, each that holds "cat" marked with the warn filter.
    let listed_feed = page(&app, 1, &format!("/api/v1/lists/{list}/feed")).await;
    assert_eq!(contents(&listed_feed), ["concatenate the cats", "我喜欢猫"]);
    assert_eq!(listed_feed[0].1, json!([{"filter": cat, "phrase": "cat"}]));
    assert!(listed_feed[1].1.is_null());
    let path = format!("/api/v1/lists/{list}/feed?max_time=2100-01-01T00:00:00Z");
    assert_eq!(page(&app, 1, &path).await, listed_feed);
    // new_count counts only what the feed would show.
    for content in ["new spoiler", "new and plain"] {
        app.publish(2, content).await;
    }
    let path = format!("/api/v1/feed/new_count?min_position={}", head(&app).await);
    let (_, count) = app.get_as(1, &path).await;
    assert_eq!(count["count"], 1, "{count}");
    // Once the filter is deleted, what it hid is back.
    call(
        &app,
        1,
        Method::DELETE,
        &format!("/api/v1/filters/{spoiler}"),
        None,
    )
    .await;
    let feed = page(&app, 1, "/api/v1/feed").await;
    assert_eq!(feed.len(), 6, "{feed:?}");
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_filter_screens_comments_and_notifications_and_ends_at_its_expiry() {
    let app = spawn_app().await;
    // Given 1 following 2 with notify, and 2's post with comments by 3.
    let (status, body) = app
        .post_as(
            1,
            "/api/v1/relation/follow",
            json!({"target": 2, "notify": true}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (post, _) = app.publish(2, "the finale, no spoiler").await;
    for content in ["the butler did it", "nothing to see", "BUTLER again"] {
        let path = format!("/api/v1/posts/{post}/comments");
        let (status, body) = app.post_as(3, &path, json!({"content": content})).await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let comments_path = format!("/api/v1/posts/{post}/comments?limit=2");
    assert_eq!(page(&app, 1, &comments_path).await.len(), 2);
    // When 1 hides "butler" in comments for two seconds, and warns of "finale" in notifications.
    let body = json!({"phrase": "butler", "contexts": ["comments"], "action": "hide", "expires_in_secs": 2});
    let (status, answer) = make(&app, 1, body).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    let finale = filter(&app, 1, "FINALE", true, &["notifications"], "warn").await;
    // Then a page of two holds the one comment left, the other two skipped, not cut short.
    assert_eq!(
        contents(&page(&app, 1, &comments_path).await),
        ["nothing to see"]
    );
    // 2's own view is theirs: unfiltered.
    assert_eq!(page(&app, 2, &comments_path).await.len(), 2);
    let path = format!("/api/v1/notifications?min_position={}", head(&app).await);
    let (status, body) = app.get_as(1, &path).await;
    assert_eq!(status, StatusCode::OK);
    let posted = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["type"] == "posted")
        .unwrap_or_else(|| panic!("{body}"));
    assert_eq!(
        posted["filtered"],
        json!([{"filter": finale, "phrase": "FINALE"}]),
        "{body}"
    );
    // A hide filter in notifications leaves the group out, and out of the unread count.
    let (_, before) = app.get_as(1, "/api/v1/notifications/unread_count").await;
    filter(&app, 1, "finale", false, &["notifications"], "hide").await;
    let (status, body) = app
        .get_as(
            1,
            &format!("/api/v1/notifications?min_position={}", head(&app).await),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["type"] != "posted"),
        "{body}"
    );
    let (_, after) = app.get_as(1, "/api/v1/notifications/unread_count").await;
    assert_eq!(
        after["count"].as_i64().unwrap(),
        before["count"].as_i64().unwrap() - 1
    );
    // Once the comments filter has ended by itself, its comments are back.
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert_eq!(page(&app, 1, &comments_path).await.len(), 2);
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_phrase_is_sealed_in_the_log_and_forgotten_at_erasure() {
    let app = spawn_app().await;
    filter(&app, 1, "a secret phrase", false, &["home"], "hide").await;
    let stored: (String, String) = sqlx::query_as(
        "SELECT payload::text, event_version FROM events WHERE event_type = 'FilterCreated'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(
        !stored.0.contains("secret"),
        "the log holds it sealed: {}",
        stored.0
    );
    assert_eq!(stored.1, "2");
    // The archive holds it, phrase and all.
    crate::helpers::projector_reached(&app, "filters", &head(&app).await).await;
    let (status, _, lines) = crate::erasure::archive(&app, 1).await;
    assert_eq!(status, StatusCode::OK);
    let kept = lines
        .iter()
        .find(|l| l["kind"] == "filter")
        .expect("a filter line");
    assert_eq!(
        (&kept["phrase"], &kept["contexts"], &kept["action"]),
        (&json!("a secret phrase"), &json!(["home"]), &json!("hide"))
    );
    let (status, body) = app.erase_me(1).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let at = head(&app).await;
    crate::helpers::projector_reached(&app, "filters", &at).await;
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM rm_filters")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(left, 0, "the read model forgot it");
    assert_verified(&app).await;
}
