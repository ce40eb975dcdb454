//! Reposts in feeds (issue 44), given/when/then over HTTP against the real services: a repost
//! brings a post into the reposter's followers' feeds, pushed and pulled; a post shows once, at
//! its newest appearance, with its `reposted_by`; every undo takes the repost out; mutes and
//! blocks cover the post's author as well as the reposter; `new_count` follows; the author's
//! timeline interleaves their reposts when asked.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{projector_reached, spawn_app, spawn_with, test_config, TestApp};

/// `POST /api/v1/posts/{post}/{verb}` as `user`; the answer's position.
async fn repost(app: &TestApp, user: i64, post: &str, verb: &str) -> String {
    let path = format!("/api/v1/posts/{post}/{verb}");
    let (status, body) = app.post_as(user, &path, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{verb}: {body}");
    body["position"].as_str().expect("a change").to_owned()
}

/// `verb` (`follow`, `mute`, ...) of `b` by `a`; the answer's position.
async fn relation(app: &TestApp, verb: &str, a: i64, b: i64) -> String {
    let (status, body) = app.command(verb, a, b).await;
    assert_eq!(status, StatusCode::OK, "{verb}: {body}");
    body["position"].as_str().expect("a change").to_owned()
}

/// The items of `page`: `(post id, reposted_by)`.
fn items(page: &Value) -> Vec<(String, Vec<i64>)> {
    let items = page["items"].as_array().expect("items");
    items
        .iter()
        .map(|p| {
            let by = p["reposted_by"]
                .as_array()
                .expect("a feed item's reposted_by");
            let by = by.iter().map(|u| u.as_i64().expect("a user id")).collect();
            (p["id"].as_str().unwrap().to_owned(), by)
        })
        .collect()
}

/// `reader`'s feed once `at` is folded, as `(post id, reposted_by)`.
async fn feed(app: &TestApp, reader: i64, at: &str) -> Vec<(String, Vec<i64>)> {
    let path = format!("/api/v1/feed?size=20&min_position={at}");
    let (status, page) = app.get_as(reader, &path).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    items(&page)
}

/// `reader`'s count of new posts once `at` is folded.
async fn new_count(app: &TestApp, reader: i64, at: &str) -> i64 {
    let path = format!("/api/v1/feed/new_count?min_position={at}");
    let (status, body) = app.get_as(reader, &path).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["count"].as_i64().unwrap()
}

fn item(post: &str, by: &[i64]) -> (String, Vec<i64>) {
    (post.to_owned(), by.to_vec())
}

#[tokio::test]
async fn a_post_shows_once_at_its_newest_appearance_until_each_undo() {
    let app = spawn_app().await;
    // Given 10 follows 2 and 3, not 1, and 1's public post.
    relation(&app, "follow", 10, 2).await;
    relation(&app, "follow", 10, 3).await;
    let (post, _) = app.publish(1, "travel far").await;
    // When 2 reposts it, then it is in 10's feed, reposted by 2, and counted as new.
    let at = repost(&app, 2, &post, "repost").await;
    assert_eq!(new_count(&app, 10, &at).await, 1);
    assert_eq!(feed(&app, 10, &at).await, vec![item(&post, &[2])]);
    // When 3 reposts it too and 10 follows its author, then it shows once, at 3's repost,
    // reposted by both, newest first; and counted once.
    repost(&app, 3, &post, "repost").await;
    let at = relation(&app, "follow", 10, 1).await;
    assert_eq!(feed(&app, 10, &at).await, vec![item(&post, &[3, 2])]);
    // When 1 posts again, then that post is above it, the one new post.
    let (newer, at) = app.publish(1, "and on").await;
    assert_eq!(new_count(&app, 10, &at).await, 1);
    let both = feed(&app, 10, &at).await;
    assert_eq!(both, vec![item(&newer, &[]), item(&post, &[3, 2])]);
    // When 3 and 2 take their reposts back, then it is back at its publication, below.
    repost(&app, 3, &post, "unrepost").await;
    let at = repost(&app, 2, &post, "unrepost").await;
    let plain = feed(&app, 10, &at).await;
    assert_eq!(plain, vec![item(&newer, &[]), item(&post, &[])]);
    // When 2 reposts it again, then it moves up above the newer post.
    let at = repost(&app, 2, &post, "repost").await;
    let moved = feed(&app, 10, &at).await;
    assert_eq!(moved, vec![item(&post, &[2]), item(&newer, &[])]);
    // When 10 mutes its author, then it shows neither way; when the mute is lifted, it is back.
    let at = relation(&app, "mute", 10, 1).await;
    assert_eq!(feed(&app, 10, &at).await, vec![]);
    let at = relation(&app, "unmute", 10, 1).await;
    assert_eq!(feed(&app, 10, &at).await, moved);
    // When 10 mutes the reposter, then the post is back at its publication.
    let at = relation(&app, "mute", 10, 2).await;
    assert_eq!(feed(&app, 10, &at).await, plain);
    relation(&app, "unmute", 10, 2).await;
    // When 10 unfollows the author, then it shows by the repost only; when its author deletes
    // it, then it is gone everywhere.
    let at = relation(&app, "unfollow", 10, 1).await;
    assert_eq!(feed(&app, 10, &at).await, vec![item(&post, &[2])]);
    let (status, body) = app.delete_post(1, &post).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let at = body["position"].as_str().unwrap();
    assert_eq!(feed(&app, 10, at).await, vec![]);
    crate::helpers::assert_verified(&app).await;
}

#[tokio::test]
async fn an_unfollow_a_block_and_erasures_take_reposts_out_and_a_follow_brings_them_in() {
    let app = spawn_app().await;
    let (post, _) = app.publish(1, "travel far").await;
    let (other, _) = app.publish(4, "another").await;
    // Given 2's reposts made before 10 follows 2, when 10 follows 2, then they are backfilled.
    repost(&app, 2, &post, "repost").await;
    repost(&app, 2, &other, "repost").await;
    let at = relation(&app, "follow", 10, 2).await;
    let both = vec![item(&other, &[2]), item(&post, &[2])];
    assert_eq!(feed(&app, 10, &at).await, both);
    // When 10 blocks the post's author, then that repost leaves 10's feed; unblocked, it is back.
    let at = relation(&app, "block", 10, 1).await;
    assert_eq!(feed(&app, 10, &at).await, vec![item(&other, &[2])]);
    let at = relation(&app, "unblock", 10, 1).await;
    assert_eq!(feed(&app, 10, &at).await, both);
    // When 10 unfollows the reposter, then both leave; a re-follow brings them back.
    let at = relation(&app, "unfollow", 10, 2).await;
    assert_eq!(feed(&app, 10, &at).await, vec![]);
    let at = relation(&app, "follow", 10, 2).await;
    assert_eq!(feed(&app, 10, &at).await, both);
    // When a post's author is erased, then its reposts leave every feed.
    let (status, body) = app.erase_me(4).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let at = body["position"].as_str().unwrap();
    assert_eq!(feed(&app, 10, at).await, vec![item(&post, &[2])]);
    // When the reposter is erased, then theirs leave too.
    let (status, body) = app.erase_me(2).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let at = body["position"].as_str().unwrap();
    assert_eq!(feed(&app, 10, at).await, vec![]);
    crate::helpers::assert_verified(&app).await;
}

#[tokio::test]
async fn a_big_v_reposters_reposts_are_pulled_and_the_cached_inbox_agrees() {
    let mut config = test_config().await;
    config.feed.big_v_threshold = 2;
    let app = spawn_with(config).await;
    // Given 2 followed by 10 and 11 (pulled) and 3 followed by 10 (pushed).
    relation(&app, "follow", 10, 2).await;
    relation(&app, "follow", 11, 2).await;
    relation(&app, "follow", 10, 3).await;
    let (post, _) = app.publish(1, "travel far").await;
    let (older, _) = app.publish(5, "older").await;
    // When both repost, then 10 sees each post once; 11 sees what 2 reposted.
    repost(&app, 3, &older, "repost").await;
    repost(&app, 2, &post, "repost").await;
    let at = repost(&app, 3, &post, "repost").await;
    assert_eq!(new_count(&app, 10, &at).await, 2);
    let ten = vec![item(&post, &[3, 2]), item(&older, &[3])];
    assert_eq!(feed(&app, 10, &at).await, ten);
    assert_eq!(feed(&app, 11, &at).await, vec![item(&post, &[2])]);
    // Read through the inbox cache once it has folded as far: the same pages.
    projector_reached(&app, "feed_cache", &at).await;
    for (reader, expected) in [(10, &ten), (11, &vec![item(&post, &[2])])] {
        let (status, page) = app.get_as(reader, "/api/v1/feed?size=20").await;
        assert_eq!(status, StatusCode::OK, "{page}");
        assert_eq!(&items(&page), expected, "reader {reader}");
    }
    // When 3 takes back the repost of the older post, then it leaves 10's cached feed too.
    let at = repost(&app, 3, &older, "unrepost").await;
    projector_reached(&app, "feed_cache", &at).await;
    let (_, page) = app.get_as(10, "/api/v1/feed?size=20").await;
    assert_eq!(items(&page), vec![item(&post, &[3, 2])]);
    crate::helpers::assert_verified(&app).await;
}

#[tokio::test]
async fn reposted_by_names_the_newest_three_and_pages_never_repeat_a_post() {
    let app = spawn_app().await;
    let reposters = [2, 3, 4, 5];
    for r in reposters {
        relation(&app, "follow", 10, r).await;
    }
    let (post, _) = app.publish(1, "travel far").await;
    let (mut at, mut others) = (String::new(), Vec::new());
    for r in reposters {
        let (own, _) = app.publish(r, "own").await;
        others.push(own);
        at = repost(&app, r, &post, "repost").await;
    }
    // The post shows once, at 5's repost, by the newest three; each reposter's own post below.
    let mut expected = vec![item(&post, &[5, 4, 3])];
    for own in others.iter().rev() {
        expected.push(item(own, &[]));
    }
    assert_eq!(feed(&app, 10, &at).await, expected);
    // Read 1 at a time, the reading is the same: nothing repeated, nothing skipped.
    let mut read = Vec::new();
    let mut cursor = String::new();
    loop {
        let path = format!("/api/v1/feed?size=1&min_position={at}{cursor}");
        let (status, page) = app.get_as(10, &path).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        read.extend(items(&page));
        match page["next_cursor"].as_str() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => break,
        }
    }
    assert_eq!(read, expected);
}

#[tokio::test]
async fn a_timeline_interleaves_reposts_only_when_asked() {
    let app = spawn_app().await;
    let (post, _) = app.publish(1, "travel far").await;
    let (own, _) = app.publish(2, "mine").await;
    let at = repost(&app, 2, &post, "repost").await;
    let timeline = |query: &'static str| {
        let app = &app;
        let at = at.clone();
        async move {
            let path = format!("/api/v1/users/2/posts?min_position={at}{query}");
            let (status, page) = app.get_as(10, &path).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            page
        }
    };
    let plain = timeline("").await;
    let ids: Vec<&str> = (plain["items"].as_array().unwrap().iter())
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![own.as_str()]);
    assert!(plain["items"][0].get("reposted_by").is_none(), "{plain}");
    let with = timeline("&include_reposts=true").await;
    assert_eq!(items(&with), vec![item(&post, &[2]), item(&own, &[])]);
    // The reposted post is shown as itself: its author, its counts.
    assert_eq!(with["items"][0]["author"], 1);
    assert_eq!(with["items"][0]["repost_count"], 1);
    // When 2 takes it back, then it is gone from the timeline.
    let at = repost(&app, 2, &post, "unrepost").await;
    let path = format!("/api/v1/users/2/posts?include_reposts=true&min_position={at}");
    let (_, page) = app.get_as(10, &path).await;
    assert_eq!(items(&page), vec![item(&own, &[])]);
}

#[tokio::test]
async fn a_ban_of_the_posts_author_or_of_the_reposter_hides_the_repost_while_it_lasts() {
    let app = spawn_app().await;
    relation(&app, "follow", 10, 2).await;
    let (post, _) = app.publish(1, "travel far").await;
    let at = repost(&app, 2, &post, "repost").await;
    assert_eq!(feed(&app, 10, &at).await, vec![item(&post, &[2])]);
    for banned in [1, 2] {
        let ban = |verb: &'static str| {
            let app = &app;
            async move {
                let url = format!("{}/api/v1/admin/users/{banned}/{verb}", app.base);
                let sent = app.client.post(url).bearer_auth(app.admin_token(99));
                let answer = sent.send().await.unwrap();
                assert_eq!(answer.status(), StatusCode::OK);
                let body: Value = answer.json().await.unwrap();
                body["position"].as_str().unwrap().to_owned()
            }
        };
        let at = ban("ban").await;
        assert_eq!(feed(&app, 10, &at).await, vec![], "{banned} banned");
        let at = ban("unban").await;
        assert_eq!(feed(&app, 10, &at).await, vec![item(&post, &[2])]);
    }
}
