//! Posts, author timelines and the follow feed (issue 4): rule 8, rule 9, the push, pull and
//! cache paths, threshold crossings, paging, the read mark, the recommended feed.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{code, projector_reached, spawn_app, spawn_with, test_config, user, TestApp};

/// Every page of `reader`'s feed, as post ids, at least at `position` (from PostgreSQL).
async fn feed_at(app: &TestApp, reader: i64, size: i64, position: &str) -> Vec<String> {
    pages(app, reader, &format!("size={size}&min_position={position}")).await
}

/// Every page of `reader`'s feed with `query`, following `next_cursor`.
async fn pages(app: &TestApp, reader: i64, query: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..200 {
        let path = match &cursor {
            Some(c) => format!("/api/v1/feed?{query}&cursor={c}"),
            None => format!("/api/v1/feed?{query}"),
        };
        let (status, body) = app.get_as(reader, &path).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        ids.extend(post_ids(&body));
        match body["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return ids,
        }
    }
    panic!("the feed never ended");
}

fn post_ids(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Publishes `n` posts by `author`, returning their ids oldest first and the last position.
async fn publish_many(app: &TestApp, author: i64, n: usize) -> (Vec<String>, String) {
    let mut ids = Vec::new();
    let mut position = String::new();
    for i in 0..n {
        let (id, at) = app.publish(author, &format!("post {i} by {author}")).await;
        ids.push(id);
        position = at;
    }
    (ids, position)
}

fn newest_first(ids: &[String]) -> Vec<String> {
    ids.iter().rev().cloned().collect()
}

async fn position_of(app: &TestApp, verb: &str, actor: i64, target: i64) -> String {
    let (status, body) = app.command(verb, actor, target).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["position"].as_str().unwrap_or_default().to_owned()
}

async fn inbox_rows(app: &TestApp, reader: i64) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM feed_inbox WHERE reader = $1")
        .bind(reader)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn posts_obey_rule_8_and_bad_input_changes_nothing() {
    let app = spawn_app().await;
    let (status, body) = app.post(1, "hello").await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let post = &body["post"];
    assert_eq!(post["author"], json!(1));
    assert_eq!(post["content"], json!("hello"));
    assert!(post["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(body["position"].is_string());
    let id = post["id"].as_str().unwrap().to_owned();

    // 2000 characters of three bytes each is fine; 2001 is not; nor is nothing.
    assert_eq!(app.post(1, &"字".repeat(2000)).await.0, StatusCode::CREATED);
    let events = app.event_count().await;
    for bad in [String::new(), "字".repeat(2001)] {
        let (status, body) = app.post(1, &bad).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::BAD_REQUEST, "INVALID_INPUT")
        );
    }
    for body in [json!({}), json!({"content": 5}), json!([1])] {
        let (status, answer) = crate::helpers::read(
            app.client
                .post(format!("{}/api/v1/posts", app.base))
                .bearer_auth(app.token(1))
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body} -> {answer}");
    }
    let (status, _) = crate::helpers::read(
        app.client
            .post(format!("{}/api/v1/posts", app.base))
            .json(&json!({"content": "anonymous"}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Only the author deletes; unknown and malformed ids are 404.
    let (status, body) = app.delete_post(2, &id).await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "NOT_AUTHOR"));
    for unknown in ["0190f5a2-7b6c-7def-8123-456789abcdef", "nope", "1"] {
        let (status, body) = app.delete_post(1, unknown).await;
        assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "NOT_FOUND"));
    }
    assert_eq!(app.event_count().await, events, "refusals appended events");

    let (status, body) = app.delete_post(1, &id).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["position"].is_string());
    // Gone for good: a second delete finds nothing, the timeline and counts forget it.
    assert_eq!(app.delete_post(1, &id).await.0, StatusCode::NOT_FOUND);
    let position = body["position"].as_str().unwrap();
    let (_, timeline) = app
        .get(&format!("/api/v1/users/1/posts?min_position={position}"))
        .await;
    assert_eq!(timeline["items"].as_array().unwrap().len(), 1);
    assert_ne!(timeline["items"][0]["id"], json!(id));
    let (_, counts) = app
        .get(&format!("/api/v1/users/1/counts?min_position={position}"))
        .await;
    assert_eq!(counts["posts"], json!(1));
}

#[tokio::test]
async fn publishing_is_idempotent_per_key() {
    let app = spawn_app().await;
    let send = |content: &'static str| {
        app.client
            .post(format!("{}/api/v1/posts", app.base))
            .bearer_auth(app.token(1))
            .header("Idempotency-Key", "post-1")
            .json(&json!({ "content": content }))
            .send()
    };
    let (first_status, first) = crate::helpers::read(send("once").await.unwrap()).await;
    assert_eq!(first_status, StatusCode::CREATED);
    let retry = send("once").await.unwrap();
    assert_eq!(retry.headers()["idempotent-replayed"], "true");
    let (status, again) = crate::helpers::read(retry).await;
    assert_eq!((status, &again), (StatusCode::CREATED, &first));
    let (status, other) = crate::helpers::read(send("twice").await.unwrap()).await;
    assert_eq!(
        (status, code(&other)),
        (StatusCode::UNPROCESSABLE_ENTITY, "IDEMPOTENCY_KEY_REUSED")
    );
    assert_eq!(app.event_count().await, 1);
}

#[tokio::test]
async fn timelines_are_newest_first_with_size_cursor_and_max_time() {
    let app = spawn_app().await;
    let (ids, position) = publish_many(&app, 7, 5).await;
    let (status, page) = app
        .get(&format!(
            "/api/v1/users/7/posts?size=2&min_position={position}"
        ))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(post_ids(&page), newest_first(&ids)[..2].to_vec());
    let cursor = page["next_cursor"].as_str().unwrap();
    let (_, next) = app
        .get(&format!("/api/v1/users/7/posts?size=2&cursor={cursor}"))
        .await;
    assert_eq!(post_ids(&next), newest_first(&ids)[2..4].to_vec());
    // max_time: the posts created at or before the third post.
    let (_, all) = app.get("/api/v1/users/7/posts?size=20").await;
    assert_eq!(all["next_cursor"], Value::Null);
    let third = all["items"][2]["created_at"].as_str().unwrap();
    let (_, older) = app
        .get(&format!(
            "/api/v1/users/7/posts?max_time={}",
            third.replace('+', "%2B")
        ))
        .await;
    assert_eq!(post_ids(&older), newest_first(&ids)[2..].to_vec());
    // Defaults: size 10, at most 20.
    for bad in [
        "size=0",
        "size=21",
        "cursor=abc",
        "cursor=-1",
        "max_time=yesterday",
    ] {
        let (status, body) = app.get(&format!("/api/v1/users/7/posts?{bad}")).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::BAD_REQUEST, "INVALID_INPUT"),
            "{bad}"
        );
    }
    assert_eq!(
        app.get("/api/v1/users/0/posts").await.0,
        StatusCode::NOT_FOUND
    );
}

/// An app whose feed pages all come from PostgreSQL (no post held in memory): what the tests of
/// the inboxes and their cache read, the fallback of pages memory cannot answer.
async fn spawn_reading_postgres() -> TestApp {
    let mut config = test_config().await;
    config.feed_memory_per_author = 0;
    spawn_with(config).await
}

#[tokio::test]
async fn small_authors_are_pushed_into_each_followers_inbox() {
    let app = spawn_reading_postgres().await;
    position_of(&app, "follow", 10, 1).await;
    position_of(&app, "follow", 11, 1).await;
    let (ids, position) = publish_many(&app, 1, 3).await;
    crate::helpers::projector_reached(&app, "feed", &position).await;
    // The push path: the posts are rows of both inboxes.
    assert_eq!(inbox_rows(&app, 10).await, 3);
    assert_eq!(inbox_rows(&app, 11).await, 3);
    for reader in [10, 11] {
        assert_eq!(
            feed_at(&app, reader, 2, &position).await,
            newest_first(&ids)
        );
    }
    // And the feed reads them from the inbox: an entry the inbox loses is not in the feed.
    sqlx::query("DELETE FROM feed_inbox WHERE reader = 10 AND seq = (SELECT max(seq) FROM feed_inbox WHERE reader = 10)")
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(
        feed_at(&app, 10, 10, &position).await,
        newest_first(&ids)[1..].to_vec()
    );
}

#[tokio::test]
async fn big_authors_are_pulled_at_read_time() {
    let mut config = test_config().await;
    config.feed.big_v_threshold = 2;
    let app = spawn_with(config).await;
    position_of(&app, "follow", 10, 1).await;
    position_of(&app, "follow", 11, 1).await;
    let (ids, position) = publish_many(&app, 1, 3).await;
    crate::helpers::projector_reached(&app, "feed", &position).await;
    // The pull path: nothing pushed, yet both feeds have the posts.
    assert_eq!(inbox_rows(&app, 10).await, 0);
    assert_eq!(inbox_rows(&app, 11).await, 0);
    for reader in [10, 11] {
        assert_eq!(
            feed_at(&app, reader, 2, &position).await,
            newest_first(&ids)
        );
    }
}

#[tokio::test]
async fn authors_cross_the_threshold_both_ways_while_posting_without_loss_or_doubles() {
    let mut config = test_config().await;
    config.feed.big_v_threshold = 2;
    let app = spawn_with(config).await;
    let mut posts = Vec::new();
    position_of(&app, "follow", 10, 1).await; // 1 follower: push
    posts.push(app.publish(1, "p1").await.0);
    position_of(&app, "follow", 11, 1).await; // 2 followers: pull
    posts.push(app.publish(1, "p2").await.0);
    let at = position_of(&app, "unfollow", 11, 1).await; // back to 1: push, backfilled
    assert_eq!(feed_at(&app, 10, 3, &at).await, newest_first(&posts));
    assert_eq!(
        inbox_rows(&app, 10).await,
        2,
        "the switch to push backfills"
    );
    posts.push(app.publish(1, "p3").await.0);
    position_of(&app, "follow", 11, 1).await; // pull again
    position_of(&app, "follow", 12, 1).await;
    let (id, at) = app.publish(1, "p4").await;
    posts.push(id);
    for reader in [10, 11, 12] {
        assert_eq!(
            feed_at(&app, reader, 3, &at).await,
            newest_first(&posts),
            "reader {reader}"
        );
    }
    let modes: Vec<bool> = sqlx::query_scalar(
        "SELECT pulled FROM feed_mode_changes ORDER BY transaction_id, global_position",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(modes, vec![true, false, true]);
}

#[tokio::test]
async fn follows_backfill_and_unfollows_and_blocks_purge() {
    let app = spawn_app().await;
    let (ids, _) = publish_many(&app, 1, 3).await;
    let at = position_of(&app, "follow", 10, 1).await;
    assert_eq!(feed_at(&app, 10, 10, &at).await, newest_first(&ids));
    let at = position_of(&app, "unfollow", 10, 1).await;
    assert!(feed_at(&app, 10, 10, &at).await.is_empty());
    assert_eq!(inbox_rows(&app, 10).await, 0);
    let at = position_of(&app, "follow", 10, 1).await;
    assert_eq!(feed_at(&app, 10, 10, &at).await, newest_first(&ids));
    // Rule 9: a block either way empties the feed of the other's posts.
    let at = position_of(&app, "block", 1, 10).await;
    assert!(feed_at(&app, 10, 10, &at).await.is_empty());
    assert_eq!(inbox_rows(&app, 10).await, 0);
}

#[tokio::test]
async fn a_deleted_post_disappears_from_pushed_pulled_and_cached_feeds() {
    let mut config = test_config().await;
    config.feed.big_v_threshold = 2;
    let app = spawn_with(config).await;
    position_of(&app, "follow", 10, 1).await; // author 1: push to 10
    position_of(&app, "follow", 10, 2).await; // author 2: pulled by 10 and 11
    position_of(&app, "follow", 11, 2).await;
    let (pushed, _) = app.publish(1, "pushed").await;
    let (pulled, at) = app.publish(2, "pulled").await;
    // Load 10's inbox into the cache.
    projector_reached(&app, "feed_cache", &at).await;
    assert_eq!(
        pages(&app, 10, "size=5").await,
        vec![pulled.clone(), pushed.clone()]
    );
    app.delete_post(1, &pushed).await;
    let (_, body) = app.delete_post(2, &pulled).await;
    let at = body["position"].as_str().unwrap();
    assert!(feed_at(&app, 10, 5, at).await.is_empty());
    assert!(feed_at(&app, 11, 5, at).await.is_empty());
    projector_reached(&app, "feed_cache", at).await;
    assert!(pages(&app, 10, "size=5").await.is_empty());
}

#[tokio::test]
async fn paging_never_skips_or_repeats_while_posts_arrive() {
    let app = spawn_app().await;
    for author in [1, 2, 3] {
        position_of(&app, "follow", 10, author).await;
    }
    let mut expected = Vec::new();
    let mut at = String::new();
    for i in 0..21 {
        let (id, position) = app.publish(1 + i % 3, &format!("post {i}")).await;
        expected.push(id);
        at = position;
    }
    let (_, first) = app
        .get_as(10, &format!("/api/v1/feed?size=4&min_position={at}"))
        .await;
    let mut seen = post_ids(&first);
    let mut cursor = first["next_cursor"].as_str().map(str::to_owned);
    let mut arrived = Vec::new();
    while let Some(c) = cursor {
        // A new post lands between every two pages.
        let (id, position) = app.publish(2, "meanwhile").await;
        arrived.push(id);
        let (status, page) = app
            .get_as(
                10,
                &format!("/api/v1/feed?size=4&cursor={c}&min_position={position}"),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        seen.extend(post_ids(&page));
        cursor = page["next_cursor"].as_str().map(str::to_owned);
    }
    assert_eq!(seen, newest_first(&expected), "skipped or repeated");
    // A fresh first page starts with what arrived.
    let (_, top) = app.get_as(10, "/api/v1/feed?size=20").await;
    assert_eq!(
        post_ids(&top)[..arrived.len()].to_vec(),
        newest_first(&arrived)
    );
}

#[tokio::test]
async fn a_capped_inbox_continues_by_pulling_without_a_false_end() {
    let mut config = test_config().await;
    config.feed.feed_inbox_cap = 4;
    config.feed_memory_per_author = 0; // the inboxes' path
    let app = spawn_with(config).await;
    position_of(&app, "follow", 10, 1).await;
    position_of(&app, "follow", 10, 2).await;
    let mut expected = Vec::new();
    let mut at = String::new();
    for i in 0..13 {
        let (id, position) = app.publish(1 + i % 2, &format!("post {i}")).await;
        expected.push(id);
        at = position;
    }
    assert_eq!(feed_at(&app, 10, 3, &at).await, newest_first(&expected));
    assert_eq!(inbox_rows(&app, 10).await, 4, "the inbox is capped");
    let watermark: i64 = sqlx::query_scalar("SELECT watermark FROM feed_readers WHERE reader = 10")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert!(watermark > 0, "trimming raised the watermark");
    // The cached inbox is capped the same way and pages on past it.
    projector_reached(&app, "feed_cache", &at).await;
    assert_eq!(pages(&app, 10, "size=3").await, newest_first(&expected));
    let (id, at) = app.publish(1, "one more").await;
    expected.push(id);
    projector_reached(&app, "feed_cache", &at).await;
    assert_eq!(pages(&app, 10, "size=5").await, newest_first(&expected));
}

async fn count(app: &TestApp, at: String) -> Value {
    let path = format!("/api/v1/feed/new_count?min_position={at}");
    app.get_as(10, &path).await.1["count"].clone()
}

#[tokio::test]
async fn new_count_counts_pushed_and_pulled_posts_since_the_first_page() {
    let mut config = test_config().await;
    config.feed.big_v_threshold = 2;
    let app = spawn_with(config).await;
    position_of(&app, "follow", 10, 1).await; // 1: pushed to 10
    position_of(&app, "follow", 10, 2).await; // 2: pulled
    let at = position_of(&app, "follow", 11, 2).await;
    app.get_as(10, &format!("/api/v1/feed?min_position={at}"))
        .await;
    assert_eq!(count(&app, at).await, json!(0));
    app.publish(1, "a").await;
    app.publish(2, "b").await;
    app.publish(3, "not followed").await;
    let (id, at) = app.publish(2, "c").await;
    assert_eq!(count(&app, at.clone()).await, json!(3));
    // A deleted post is not new any more; a later page does not move the mark.
    let (_, body) = app.delete_post(2, &id).await;
    let at = body["position"].as_str().unwrap().to_owned();
    assert_eq!(count(&app, at.clone()).await, json!(2));
    // Pages after the first (with a cursor) leave the mark where it is.
    let (status, page) = app
        .get_as(
            10,
            &format!("/api/v1/feed?size=1&cursor={}&min_position={at}", i64::MAX),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    assert_eq!(count(&app, at.clone()).await, json!(2));
    app.get_as(10, "/api/v1/feed").await;
    assert_eq!(count(&app, at).await, json!(0));
    assert_eq!(
        app.get("/api/v1/feed/new_count").await.0,
        StatusCode::UNAUTHORIZED
    );
}

/// The mark is kept in memory and written in batches: the instance that served the page
/// counts from it at once, and a shutdown right after still writes it for every other
/// instance.
#[tokio::test]
async fn read_marks_are_written_off_the_request_path_and_survive_a_shutdown() {
    let app = spawn_app().await;
    position_of(&app, "follow", 10, 1).await;
    let (_, at) = app.publish(1, "a").await;
    assert_eq!(count(&app, at.clone()).await, json!(1));
    app.get_as(10, &format!("/api/v1/feed?min_position={at}"))
        .await;
    assert_eq!(count(&app, at.clone()).await, json!(0));
    let config = app.stop().await;
    let other = spawn_with(config).await;
    assert_eq!(count(&other, at).await, json!(0));
}

#[tokio::test]
async fn users_who_follow_nobody_get_the_recommended_feed_without_blocked_authors() {
    let mut config = test_config().await;
    config.recommended_authors = vec![
        relations_api::config::RecommendedAuthor(Some(user(5))),
        relations_api::config::RecommendedAuthor(Some(user(6))),
    ];
    let app = spawn_with(config).await;
    let (from_5, _) = app.publish(5, "five").await;
    app.publish(6, "six").await;
    let (_, at) = app.publish(7, "not recommended").await;
    let at = {
        let _ = at;
        position_of(&app, "block", 6, 10).await
    };
    assert_eq!(feed_at(&app, 10, 10, &at).await, vec![from_5.clone()]);
    let (_, count) = app.get_as(10, "/api/v1/feed/new_count").await;
    assert_eq!(
        count["count"],
        json!(0),
        "the recommended first page was read"
    );
    // Following someone switches to the follow feed.
    let at = position_of(&app, "follow", 10, 7).await;
    assert_eq!(feed_at(&app, 10, 10, &at).await.len(), 1);
    assert_ne!(feed_at(&app, 10, 10, &at).await, vec![from_5]);
}

async fn zadd(app: &TestApp, reader: i64, seq: i64) {
    let mut redis = redis::Client::open(app.config.redis.redis_url.as_deref().unwrap())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let key = format!("{}feed:{reader}", app.config.redis.redis_prefix);
    let _: () = redis::cmd("ZADD")
        .arg(&key)
        .arg(seq)
        .arg(seq)
        .query_async(&mut redis)
        .await
        .unwrap();
}

async fn seq_of(app: &TestApp, id: &str) -> i64 {
    sqlx::query_scalar("SELECT seq FROM rm_posts WHERE post_id = $1::uuid")
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn the_cache_serves_loaded_inboxes_keeps_them_current_and_never_breaks_rule_9() {
    let app = spawn_reading_postgres().await;
    position_of(&app, "follow", 10, 1).await;
    position_of(&app, "follow", 10, 2).await;
    let (mut expected, _) = publish_many(&app, 1, 2).await;
    let (by_2, at) = app.publish(2, "by 2").await;
    projector_reached(&app, "feed_cache", &at).await;
    expected.reverse();
    assert_eq!(
        pages(&app, 10, "size=10").await,
        vec![by_2.clone(), expected[0].clone(), expected[1].clone()]
    );

    // Rule 8 for cached entries: a deleted post's entry, left behind in the cache, is not shown.
    let (doomed, _) = app.publish(1, "doomed").await;
    let (_, body) = app.delete_post(1, &doomed).await;
    projector_reached(&app, "feed_cache", body["position"].as_str().unwrap()).await;
    zadd(&app, 10, seq_of(&app, &doomed).await).await;
    assert_eq!(pages(&app, 10, "size=2").await.len(), 3);

    // Rule 9 for cached entries: once 2 blocks 10, a cached entry of 2's post is not shown.
    let at = position_of(&app, "block", 2, 10).await;
    projector_reached(&app, "feed_cache", &at).await;
    assert_eq!(pages(&app, 10, "size=10").await, expected);
    zadd(&app, 10, seq_of(&app, &by_2).await).await;
    assert_eq!(pages(&app, 10, "size=10").await, expected);

    // Served from Redis: the inbox rows in PostgreSQL are no longer needed...
    sqlx::query("DELETE FROM feed_inbox WHERE reader = 10")
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(pages(&app, 10, "size=10").await, expected);
    // ...and kept current by projector feed_cache: a new post is added to the cached inbox.
    let (new, at) = app.publish(1, "new").await;
    projector_reached(&app, "feed_cache", &at).await;
    expected.insert(0, new);
    assert_eq!(pages(&app, 10, "size=2").await, expected);
}

#[tokio::test]
async fn racing_deletes_of_one_post_succeed_once() {
    let app = spawn_app().await;
    let (id, _) = app.publish(1, "once").await;
    let results = futures::future::join_all((0..12).map(|_| app.delete_post(1, &id))).await;
    let statuses: Vec<StatusCode> = results.iter().map(|r| r.0).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == StatusCode::OK).count(),
        1,
        "{statuses:?}"
    );
    assert!(statuses
        .iter()
        .all(|s| *s == StatusCode::OK || *s == StatusCode::NOT_FOUND));
    assert_eq!(app.event_count().await, 2);
}

/// The feeds the log says every reader must see: replays the log (in its order, which is the
/// feed's order) with the rules' semantics.
async fn feeds_from_the_log(app: &TestApp, readers: &[i64]) -> Vec<Vec<String>> {
    let mut follows = std::collections::BTreeSet::new();
    let mut posts: Vec<(String, i64, bool)> = Vec::new();
    for (kind, payload) in app.events().await {
        let data = &payload[kind.as_str()];
        let (a, b) = (data["follower"].as_i64(), data["followee"].as_i64());
        match kind.as_str() {
            "Followed" => {
                follows.insert((a.unwrap(), b.unwrap()));
            }
            "Unfollowed" => {
                follows.remove(&(a.unwrap(), b.unwrap()));
            }
            "PostPublished" => posts.push((
                data["post_id"].as_str().unwrap().to_owned(),
                data["author"].as_i64().unwrap(),
                true,
            )),
            "PostDeleted" => {
                let id = data["post_id"].as_str().unwrap();
                posts.iter_mut().find(|p| p.0 == id).unwrap().2 = false;
            }
            _ => {}
        }
    }
    readers
        .iter()
        .map(|&reader| {
            posts
                .iter()
                .rev()
                .filter(|(_, author, live)| *live && follows.contains(&(reader, *author)))
                .map(|(id, _, _)| id.clone())
                .collect()
        })
        .collect()
}

#[tokio::test]
async fn racing_posts_follows_blocks_and_deletes_leave_every_feed_equal_to_the_log() {
    let mut config = test_config().await;
    config.feed.big_v_threshold = 3;
    config.feed.feed_inbox_cap = 5;
    let app = spawn_with(config).await;
    let (authors, readers) = ([1i64, 2, 3, 4], [10i64, 11, 12, 13, 14, 15]);
    // Every reader follows every author first, so the race has followers to push to.
    for reader in readers {
        for author in authors {
            app.command("follow", reader, author).await;
        }
    }
    let (seed, _) = publish_many(&app, 1, 3).await;
    let mut work = Vec::new();
    for round in 0..6i64 {
        for (i, &author) in authors.iter().enumerate() {
            let reader = readers[(round as usize + i) % readers.len()];
            work.push(("post", author, 0));
            // Reads load inboxes into the cache mid-race, so its upkeep races too.
            work.push(("read", reader, 0));
            work.push((
                ["unfollow", "follow", "block", "unblock"][(round as usize + i) % 4],
                reader,
                author,
            ));
        }
    }
    let racing = work.iter().map(|&(verb, a, b)| {
        let app = &app;
        async move {
            if verb == "post" {
                app.post(a, "racing").await.0
            } else if verb == "read" {
                app.get_as(a, "/api/v1/feed").await.0
            } else {
                app.command(verb, a, b).await.0
            }
        }
    });
    let deletes = seed.iter().map(|id| app.delete_post(1, id));
    let (statuses, deleted) = futures::join!(
        futures::future::join_all(racing),
        futures::future::join_all(deletes)
    );
    for status in statuses.iter().chain(deleted.iter().map(|d| &d.0)) {
        // A follow of someone who blocks you is refused; nothing else may fail.
        assert!(
            [
                StatusCode::OK,
                StatusCode::CREATED,
                StatusCode::FORBIDDEN,
                StatusCode::CONFLICT
            ]
            .contains(status),
            "{status}"
        );
    }
    let (_, last) = app.publish(4, "last").await;
    let expected = feeds_from_the_log(&app, &readers).await;
    for (reader, expected) in readers.iter().zip(&expected) {
        assert_eq!(
            &feed_at(&app, *reader, 7, &last).await,
            expected,
            "reader {reader}"
        );
    }
    projector_reached(&app, "feed_cache", &last).await;
    for (reader, expected) in readers.iter().zip(&expected) {
        assert_eq!(
            &pages(&app, *reader, "size=7").await,
            expected,
            "reader {reader} (cache)"
        );
    }
    crate::helpers::assert_verified(&app).await;
}

#[tokio::test]
async fn an_empty_inbox_is_cached_with_its_sentinel() {
    let app = spawn_reading_postgres().await;
    let at = position_of(&app, "follow", 20, 1).await;
    projector_reached(&app, "feed_cache", &at).await;
    assert!(pages(&app, 20, "size=5").await.is_empty());
    let mut redis = redis::Client::open(app.config.redis.redis_url.as_deref().unwrap())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let key = format!("{}feed:20", app.config.redis.redis_prefix);
    let members: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(&key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query_async(&mut redis)
        .await
        .unwrap();
    assert_eq!(members, vec![("w".to_owned(), 0.0)]);
    let ttl: i64 = redis::cmd("TTL")
        .arg(&key)
        .query_async(&mut redis)
        .await
        .unwrap();
    assert!(ttl > 0, "cached inboxes expire");
    // The next post is pushed into the cached (empty) inbox, not lost behind the sentinel.
    let (id, at) = app.publish(1, "first").await;
    projector_reached(&app, "feed_cache", &at).await;
    sqlx::query("DELETE FROM feed_inbox WHERE reader = 20")
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(pages(&app, 20, "size=5").await, vec![id]);
}

#[tokio::test]
async fn a_post_trimmed_in_postgresql_before_the_cache_heard_of_it_is_still_shown() {
    let mut config = test_config().await;
    config.feed.feed_inbox_cap = 3;
    config.feed_memory_per_author = 0; // the inboxes' path
    let app = spawn_with(config).await;
    position_of(&app, "follow", 10, 1).await;
    let (ids, at) = publish_many(&app, 1, 3).await;
    projector_reached(&app, "feed_cache", &at).await;
    assert_eq!(pages(&app, 10, "size=5").await, newest_first(&ids));
    // As if PostgreSQL trimmed the oldest post while the cache projector lagged behind: the
    // cached inbox never gets it, PostgreSQL's watermark passes it.
    let oldest = seq_of(&app, &ids[0]).await;
    let mut redis = redis::Client::open(app.config.redis.redis_url.as_deref().unwrap())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let key = format!("{}feed:10", app.config.redis.redis_prefix);
    let _: () = redis::cmd("ZREM")
        .arg(&key)
        .arg(oldest)
        .query_async(&mut redis)
        .await
        .unwrap();
    sqlx::query("UPDATE feed_readers SET watermark = $1 WHERE reader = 10")
        .bind(oldest)
        .execute(&app.pool)
        .await
        .unwrap();
    assert_eq!(pages(&app, 10, "size=5").await, newest_first(&ids));
}

/// Issue 28: a replica holding posts (as every instance's does) answers a first page as
/// PostgreSQL does, bodies opened, counts and like states included, for posts and engagement
/// it loaded from the read models and for what it folded from the log after (likes taken
/// back, comments deleted, a liker and commenter erased); and `new_count` likewise.
#[tokio::test]
async fn a_replica_holding_posts_answers_feed_pages_as_postgresql_does() {
    use relations_projections::feed::held::page::FeedAsk;
    use relations_projections::feed::held::timelines::Caps;
    use relations_projections::replica::live::LiveGraph;

    let app = spawn_reading_postgres().await;
    position_of(&app, "follow", 10, 1).await;
    position_of(&app, "follow", 10, 2).await;
    let (a, _) = app.publish(1, "loaded from rm_posts").await;
    let (b, _) = app.publish(2, "also loaded").await;
    like(&app, 20, &a, "like").await;
    like(&app, 21, &a, "like").await;
    like(&app, 10, &b, "like").await;
    comment(&app, 20, &a).await;
    let on_b = comment(&app, 21, &b).await;
    let at = comment(&app, 22, &b).await.1;
    projector_reached(&app, "feed", &at).await;
    projector_reached(&app, "engagement", &at).await;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let keys = app.config.keys.keyring(&app.pool).unwrap();
    let caps = Caps {
        per_author: 32,
        total: 1000,
    };
    let graph = LiveGraph::holding_posts(caps, keys);
    let wakeup = relations_projections::Wakeup::listen(app.pool.clone(), shutdown.clone());
    tokio::spawn(
        graph
            .clone()
            .run(app.pool.clone(), wakeup, shutdown.clone()),
    );
    let (c, _) = app.publish(1, "folded from the log").await;
    like(&app, 21, &a, "unlike").await;
    like(&app, 10, &c, "like").await;
    like(&app, 22, &b, "like").await;
    comment(&app, 20, &c).await;
    let (status, _) = app
        .client
        .delete(format!("{}/api/v1/comments/{}", app.base, on_b.0))
        .bearer_auth(app.token(21))
        .send()
        .await
        .map(|r| (r.status(), ()))
        .unwrap();
    assert!(status.is_success(), "{status}");
    let (status, _) = app.erase_me(20).await;
    assert_eq!(status, StatusCode::OK);
    let at = position_of(&app, "follow", 10, 3).await;
    projector_reached(&app, "engagement", &at).await;
    crate::helpers::replica_reached(&graph, &at).await;
    let (_, count) = app
        .get_as(10, &format!("/api/v1/feed/new_count?min_position={at}"))
        .await;
    let (status, page) = app
        .get_as(10, &format!("/api/v1/feed?size=10&min_position={at}"))
        .await;
    assert_eq!(status, StatusCode::OK);
    let ask = FeedAsk {
        reader: user(10),
        recommended: &[],
        now: chrono::Utc::now(),
        list: None,
        screening: Default::default(),
    };
    let (memory, _) = graph
        .with(|g| g.feed_page(ask, None, 10))
        .flatten()
        .expect("memory answers");
    assert_eq!(page["items"].as_array().unwrap().len(), 3, "{page}");
    assert_eq!(page["items"], serde_json::to_value(&memory.items).unwrap());
    // What PostgreSQL answered is what the events say: C (10 likes it; 20's comment void),
    // B (10 and 22 like it; 21's comment deleted, 22's stands), A (20's like void, 21's
    // taken back; 20's comment void).
    let shown: Vec<(i64, i64, bool)> = memory
        .items
        .iter()
        .map(|p| (p.like_count, p.comment_count, p.liked == Some(true)))
        .collect();
    assert_eq!(shown, vec![(1, 0, true), (2, 1, true), (0, 0, false)]);
    assert_eq!(graph.with(|g| g.feed_new_count(ask, 0)).flatten(), Some(3));
    assert_eq!(count["count"], json!(3), "counted before the first page");
    shutdown.cancel();
}

/// `POST /api/v1/posts/{post}/{verb}` (like or unlike) as `user`, asserting success.
async fn like(app: &TestApp, user: i64, post: &str, verb: &str) {
    let path = format!("/api/v1/posts/{post}/{verb}");
    let (status, body) = app.post_as(user, &path, json!({})).await;
    assert!(status.is_success(), "{verb}: {status} {body}");
}

/// Comments on `post` as `user`: the comment's id and the answer's position.
async fn comment(app: &TestApp, user: i64, post: &str) -> (String, String) {
    let path = format!("/api/v1/posts/{post}/comments");
    let (status, body) = app
        .post_as(user, &path, json!({ "content": "a comment" }))
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let id = body["comment"]["id"].as_str().expect("an id").to_owned();
    (
        id,
        body["position"].as_str().expect("a position").to_owned(),
    )
}
