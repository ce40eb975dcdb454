//! Notifications (issue 27) over HTTP: each type, the filters (own actions, blocks both ways,
//! mutes and their expiry), every undo, grouping, paging while groups move, the unread count
//! and the marker, bad input, erasure, `verify` and `rebuild` (the property test is
//! `notifications_model.rs`).

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_verified, code, read, relations, spawn_app, TestApp};
use crate::stream::Reader;

/// The position of a command's answer.
fn position(body: &Value) -> String {
    body["position"].as_str().expect("a position").to_owned()
}

/// A relation command that must succeed; its position (the last one when nothing changed).
async fn relation(app: &TestApp, verb: &str, actor: i64, target: i64) -> Option<String> {
    let (status, body) = app.command(verb, actor, target).await;
    assert_eq!(status, StatusCode::OK, "{verb} {actor} {target}: {body}");
    body["position"].as_str().map(str::to_owned)
}

/// Likes (or unlikes) `item` (`posts/{id}` or `comments/{id}`) as `user`; the position.
pub(crate) async fn like(app: &TestApp, user: i64, item: &str, verb: &str) -> String {
    let (status, body) = app
        .post_as(user, &format!("/api/v1/{item}/{verb}"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{verb} {item}: {body}");
    position(&body)
}

/// Comments on `post` as `user` (a reply to `parent`); (comment id, position).
async fn comment(app: &TestApp, user: i64, post: &str, parent: Option<&str>) -> (String, String) {
    let (status, body) = app
        .post_as(
            user,
            &format!("/api/v1/posts/{post}/comments"),
            json!({ "content": format!("from {user}"), "parent": parent }),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    (
        body["comment"]["id"].as_str().unwrap().to_owned(),
        position(&body),
    )
}

/// Every group of `user`'s notifications (first page of 100) once the projector has folded
/// `after`.
async fn groups(app: &TestApp, user: i64, after: &str) -> Vec<Value> {
    let (status, page) = app
        .get_as(
            user,
            &format!("/api/v1/notifications?limit=100&min_position={after}"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page["next_cursor"].is_null(), "{page}");
    page["items"].as_array().unwrap().clone()
}

/// A group as the tests compare it: (type, post or comment or "", count, actors).
pub(crate) type Summary = (String, String, i64, Vec<i64>);

/// Each group's [`Summary`], in the page's order.
pub(crate) fn summary(groups: &[Value]) -> Vec<Summary> {
    groups
        .iter()
        .map(|g| {
            let about = g["comment"]
                .as_str()
                .or(g["post"].as_str())
                .unwrap_or("")
                .to_owned();
            let actors = g["actors"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_i64().unwrap())
                .collect();
            (
                g["type"].as_str().unwrap().to_owned(),
                about,
                g["count"].as_i64().unwrap(),
                actors,
            )
        })
        .collect()
}

fn group(kind: &str, about: &str, count: i64, actors: &[i64]) -> Summary {
    (kind.to_owned(), about.to_owned(), count, actors.to_vec())
}

pub(crate) async fn unread(app: &TestApp, user: i64, after: &str) -> i64 {
    let (status, body) = app
        .get_as(
            user,
            &format!("/api/v1/notifications/unread_count?min_position={after}"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body["count"].as_i64().unwrap()
}

async fn mark_read(app: &TestApp, user: i64, up_to: &str) -> (StatusCode, Value) {
    app.post_as(
        user,
        "/api/v1/notifications/read",
        json!({ "up_to": up_to }),
    )
    .await
}

#[tokio::test]
async fn follows_requests_and_approvals_notify_grouped_per_day() {
    let app = spawn_app().await;
    relation(&app, "follow", 2, 1).await;
    relation(&app, "follow", 3, 1).await;
    app.set_locked(4, true).await;
    relation(&app, "follow", 2, 4).await;
    let asked = relation(&app, "follow", 3, 4).await.unwrap();
    assert_eq!(
        summary(&groups(&app, 1, &asked).await),
        vec![group("followed", "", 2, &[3, 2])]
    );
    assert_eq!(
        summary(&groups(&app, 4, &asked).await),
        vec![group("follow_request", "", 2, &[3, 2])]
    );
    // An approval: the request's notification goes, the requester is told, and the follow it
    // brings notifies nobody (the approver made it).
    let approved = relation(&app, "follow_requests/approve", 4, 2)
        .await
        .unwrap();
    assert_eq!(
        summary(&groups(&app, 4, &approved).await),
        vec![group("follow_request", "", 1, &[3])]
    );
    assert_eq!(
        summary(&groups(&app, 2, &approved).await),
        vec![group("follow_request_approved", "", 1, &[4])]
    );
    // Undo: a withdrawn request, a rejected one and an unfollow take their notifications away.
    relation(&app, "unfollow", 3, 4).await;
    let asked = relation(&app, "follow", 5, 4).await.unwrap();
    assert_eq!(
        summary(&groups(&app, 4, &asked).await),
        vec![group("follow_request", "", 1, &[5])]
    );
    relation(&app, "follow_requests/reject", 4, 5).await;
    let unfollowed = relation(&app, "unfollow", 3, 1).await.unwrap();
    assert!(groups(&app, 4, &unfollowed).await.is_empty());
    let day = groups(&app, 1, &unfollowed).await;
    assert_eq!(summary(&day), vec![group("followed", "", 1, &[2])]);
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(day[0]["group"], format!("followed:{today}"));
    assert_verified(&app).await;
}

#[tokio::test]
async fn likes_comments_and_replies_notify_their_authors_and_undo_exactly() {
    let app = spawn_app().await;
    let (post, _) = app.publish(1, "a post").await;
    let item = format!("posts/{post}");
    like(&app, 2, &item, "like").await;
    like(&app, 3, &item, "like").await;
    like(&app, 1, &item, "like").await; // one's own: nothing
    let (c2, _) = comment(&app, 2, &post, None).await;
    let (_c3, replied) = comment(&app, 3, &post, Some(&c2)).await;
    let liked_comment = like(&app, 1, &format!("comments/{c2}"), "like").await;
    assert_eq!(
        summary(&groups(&app, 1, &replied).await),
        vec![
            group("commented", &post, 2, &[3, 2]),
            group("liked_post", &post, 2, &[3, 2]),
        ]
    );
    assert_eq!(
        summary(&groups(&app, 2, &liked_comment).await),
        vec![
            group("liked_comment", &c2, 1, &[1]),
            group("replied", &c2, 1, &[3]),
        ]
    );
    // A reply to the post author's own comment tells them once, as `replied`.
    let (c1, _) = comment(&app, 1, &post, None).await;
    let (_, to_author) = comment(&app, 4, &post, Some(&c1)).await;
    assert_eq!(
        summary(&groups(&app, 1, &to_author).await),
        vec![
            group("replied", &c1, 1, &[4]),
            group("commented", &post, 2, &[3, 2]),
            group("liked_post", &post, 2, &[3, 2]),
        ]
    );
    // Undo: an unlike takes exactly its liker; a deleted comment its notifications and those
    // about it.
    let unliked = like(&app, 3, &item, "unlike").await;
    let after = groups(&app, 1, &unliked).await;
    assert!(summary(&after).contains(&group("liked_post", &post, 1, &[2])));
    let (status, deleted) = read(
        app.client
            .delete(format!("{}/api/v1/comments/{c2}", app.base))
            .bearer_auth(app.token(2))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{deleted}");
    let deleted = position(&deleted);
    assert!(groups(&app, 2, &deleted).await.is_empty());
    assert!(summary(&groups(&app, 1, &deleted).await).contains(&group(
        "commented",
        &post,
        1,
        &[3]
    )));
    // A deleted post takes every notification about it.
    let (status, gone) = app.delete_post(1, &post).await;
    assert_eq!(status, StatusCode::OK, "{gone}");
    assert!(groups(&app, 1, &position(&gone)).await.is_empty());
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_comments_likes_and_replies_are_left_out_while_its_post_is_unreadable() {
    let app = spawn_app().await;
    relation(&app, "follow", 2, 1).await;
    relation(&app, "follow", 3, 1).await;
    let (status, body) = app
        .post_with(
            1,
            json!({"content": "for followers", "visibility": "followers"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let post = body["post"]["id"].as_str().unwrap().to_owned();
    let (c2, _) = comment(&app, 2, &post, None).await;
    like(&app, 3, &format!("comments/{c2}"), "like").await;
    let (_, replied) = comment(&app, 3, &post, Some(&c2)).await;
    let both = vec![
        group("replied", &c2, 1, &[3]),
        group("liked_comment", &c2, 1, &[3]),
    ];
    assert_eq!(summary(&groups(&app, 2, &replied).await), both);
    assert_eq!(unread(&app, 2, &replied).await, 2);
    // Issue 26: to a reader who may no longer read the post, its comments' likes and replies
    // do not exist, in the list and the count alike; the post's author still sees theirs.
    let unfollowed = relation(&app, "unfollow", 2, 1).await.unwrap();
    assert!(groups(&app, 2, &unfollowed).await.is_empty());
    assert_eq!(unread(&app, 2, &unfollowed).await, 0);
    assert_eq!(
        summary(&groups(&app, 1, &unfollowed).await),
        vec![
            group("commented", &post, 2, &[3, 2]),
            group("followed", "", 1, &[3]),
        ]
    );
    // Readable again, they are back, as they were.
    let followed = relation(&app, "follow", 2, 1).await.unwrap();
    assert_eq!(summary(&groups(&app, 2, &followed).await), both);
    assert_eq!(unread(&app, 2, &followed).await, 2);
    // A locked author's public post is for followers only too.
    let (public, _) = app.publish(1, "public").await;
    let private_comment = c2;
    let (c2, _) = comment(&app, 2, &public, None).await;
    comment(&app, 3, &public, Some(&c2)).await;
    app.set_locked(1, true).await;
    let unfollowed = relation(&app, "unfollow", 2, 1).await.unwrap();
    assert!(groups(&app, 2, &unfollowed).await.is_empty());
    app.set_locked(1, false).await;
    let (_, last) = comment(&app, 3, &public, Some(&c2)).await;
    assert!(summary(&groups(&app, 2, &last).await).contains(&group("replied", &c2, 2, &[3])));
    // Live: a reply on the post 2 may not read is not sent; the follow after it is.
    let mut stream = listen(&app, 2, None).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    comment(&app, 3, &post, Some(&private_comment)).await;
    let followed = relation(&app, "follow", 4, 2).await.unwrap();
    let sse = stream
        .next(Duration::from_secs(10))
        .await
        .expect("an event");
    assert_eq!(sse.id.as_deref(), Some(followed.as_str()), "{:?}", sse.data);
    assert_eq!(sse.data["type"], "followed");
    assert_verified(&app).await;
}

#[tokio::test]
async fn blocks_either_way_remove_every_notification_between_the_two() {
    let app = spawn_app().await;
    let (post, _) = app.publish(1, "a post").await;
    relation(&app, "follow", 2, 1).await;
    relation(&app, "follow", 3, 1).await;
    like(&app, 2, &format!("posts/{post}"), "like").await;
    like(&app, 3, &format!("posts/{post}"), "like").await;
    let (c1, _) = comment(&app, 1, &post, None).await;
    let (_, at) = comment(&app, 3, &post, Some(&c1)).await;
    assert_eq!(groups(&app, 1, &at).await.len(), 3);
    // The recipient blocks one actor; another actor blocks the recipient.
    relation(&app, "block", 1, 2).await;
    let blocked = relation(&app, "block", 3, 1).await.unwrap();
    assert!(groups(&app, 1, &blocked).await.is_empty());
    // After an unblock nothing comes back, and a block refuses new causes anyway.
    let unblocked = relation(&app, "unblock", 1, 2).await.unwrap();
    assert!(groups(&app, 1, &unblocked).await.is_empty());
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_mute_hides_the_muted_while_it_lasts_and_its_expiry_lets_them_through() {
    let app = spawn_app().await;
    let (p1, _) = app.publish(1, "one").await;
    let (p2, _) = app.publish(1, "two").await;
    let (p3, _) = app.publish(1, "three").await;
    like(&app, 2, &format!("posts/{p1}"), "like").await;
    like(&app, 3, &format!("posts/{p1}"), "like").await;
    let (status, muted) = app.mute(1, 2, json!(4)).await;
    assert_eq!(status, StatusCode::OK, "{muted}");
    // The muted user's notifications go; their actions while muted notify nobody.
    let during = like(&app, 2, &format!("posts/{p2}"), "like").await;
    assert_eq!(
        summary(&groups(&app, 1, &during).await),
        vec![group("liked_post", &p1, 1, &[3])]
    );
    tokio::time::sleep(Duration::from_millis(4_300)).await;
    let after = like(&app, 2, &format!("posts/{p3}"), "like").await;
    assert_eq!(
        summary(&groups(&app, 1, &after).await),
        vec![
            group("liked_post", &p3, 1, &[2]),
            group("liked_post", &p1, 1, &[3]),
        ]
    );
    // A mute for good, lifted by an unmute.
    app.mute(1, 3, Value::Null).await;
    let (_, muted) = comment(&app, 3, &p2, None).await;
    assert!(!summary(&groups(&app, 1, &muted).await)
        .iter()
        .any(|g| g.3.contains(&3)));
    relation(&app, "unmute", 1, 3).await;
    let (_, unmuted) = comment(&app, 3, &p2, None).await;
    assert!(summary(&groups(&app, 1, &unmuted).await).contains(&group("commented", &p2, 1, &[3])));
    assert_verified(&app).await;
}

#[tokio::test]
async fn paging_never_skips_or_repeats_while_groups_move() {
    let app = spawn_app().await;
    let mut posts = Vec::new();
    let mut last = String::new();
    for i in 0..7 {
        let (post, _) = app.publish(1, &format!("post {i}")).await;
        last = like(&app, 2, &format!("posts/{post}"), "like").await;
        posts.push(post);
    }
    let page = |cursor: Option<String>, after: String| {
        let app = &app;
        async move {
            let url = match cursor {
                Some(c) => format!("/api/v1/notifications?limit=2&cursor={c}&min_position={after}"),
                None => format!("/api/v1/notifications?limit=2&min_position={after}"),
            };
            let (status, page) = app.get_as(1, &url).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            page
        }
    };
    let first = page(None, last.clone()).await;
    let mut seen: Vec<String> = Vec::new();
    let mut cursor = first["next_cursor"].as_str().map(str::to_owned);
    seen.extend(
        first["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["post"].as_str().unwrap().to_owned()),
    );
    // While the reader pages: an unseen group (the oldest post's) and a seen one (the newest)
    // move to the top, and a new group is made.
    like(&app, 3, &format!("posts/{}", posts[0]), "like").await;
    like(&app, 3, &format!("posts/{}", posts[6]), "like").await;
    let (fresh, _) = app.publish(1, "fresh").await;
    last = like(&app, 3, &format!("posts/{fresh}"), "like").await;
    while let Some(c) = cursor {
        let next = page(Some(c), last.clone()).await;
        seen.extend(
            next["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|g| g["post"].as_str().unwrap().to_owned()),
        );
        cursor = next["next_cursor"].as_str().map(str::to_owned);
    }
    let mut expected = posts.clone();
    expected.reverse();
    assert_eq!(seen, expected, "every group once, in the reading's order");
    // A new reading starts from the top, with the moved groups first.
    let top = groups(&app, 1, &last).await;
    let order: Vec<&str> = top.iter().map(|g| g["post"].as_str().unwrap()).collect();
    assert_eq!(
        &order[..3],
        &[fresh.as_str(), posts[6].as_str(), posts[0].as_str()]
    );
}

#[tokio::test]
async fn the_unread_count_follows_the_marker_which_never_moves_back() {
    let app = spawn_app().await;
    let (p1, _) = app.publish(1, "one").await;
    let (p2, _) = app.publish(1, "two").await;
    like(&app, 2, &format!("posts/{p1}"), "like").await;
    let at = like(&app, 2, &format!("posts/{p2}"), "like").await;
    assert_eq!(unread(&app, 1, &at).await, 2);
    let listed = groups(&app, 1, &at).await;
    assert!(listed.iter().all(|g| g["unread"] == true));
    let newest = listed[0]["position"].as_str().unwrap().to_owned();
    let oldest = listed[1]["position"].as_str().unwrap().to_owned();
    let (status, body) = mark_read(&app, 1, &oldest).await;
    assert_eq!(
        (status, body["changed"].clone()),
        (StatusCode::OK, json!(true))
    );
    assert_eq!(unread(&app, 1, &at).await, 1);
    let (_, body) = mark_read(&app, 1, &newest).await;
    assert_eq!(body["changed"], true);
    assert_eq!(unread(&app, 1, &at).await, 0);
    assert!(groups(&app, 1, &at)
        .await
        .iter()
        .all(|g| g["unread"] == false));
    // Never back.
    let (_, body) = mark_read(&app, 1, &oldest).await;
    assert_eq!(body["changed"], false);
    assert_eq!(unread(&app, 1, &at).await, 0);
    // Something new joins a read group: it is unread again, and on top.
    let again = like(&app, 3, &format!("posts/{p1}"), "like").await;
    assert_eq!(unread(&app, 1, &again).await, 1);
    let top = groups(&app, 1, &again).await;
    assert_eq!(
        (top[0]["post"].as_str(), top[0]["unread"].clone()),
        (Some(p1.as_str()), json!(true))
    );
}

#[tokio::test]
async fn types_filter_and_bad_input_is_400() {
    let app = spawn_app().await;
    let (post, _) = app.publish(1, "one").await;
    relation(&app, "follow", 2, 1).await;
    let at = like(&app, 2, &format!("posts/{post}"), "like").await;
    let (status, page) = app
        .get_as(
            1,
            &format!("/api/v1/notifications?types=followed,commented&min_position={at}"),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(
        summary(page["items"].as_array().unwrap()),
        vec![group("followed", "", 1, &[2])]
    );
    for bad in [
        "types=followed,nope",
        "types=",
        "cursor=1.2",
        "cursor=x",
        "limit=0",
        "limit=101",
    ] {
        let (status, body) = app.get_as(1, &format!("/api/v1/notifications?{bad}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(code(&body), "INVALID_INPUT", "{bad}");
    }
    for bad in [json!({ "up_to": "x" }), json!({ "up_to": 5 }), json!({})] {
        let (status, body) = app
            .post_as(1, "/api/v1/notifications/read", bad.clone())
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(code(&body), "INVALID_INPUT");
    }
    let (status, _) = app.get("/api/v1/notifications").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn an_erasure_takes_every_notification_both_ways_and_rebuild_gives_the_same_rows() {
    let app = spawn_app().await;
    let (p1, _) = app.publish(1, "one").await;
    let (p2, _) = app.publish(2, "two").await;
    relation(&app, "follow", 2, 1).await;
    relation(&app, "follow", 3, 1).await;
    like(&app, 2, &format!("posts/{p1}"), "like").await;
    like(&app, 1, &format!("posts/{p2}"), "like").await;
    let (c3, _) = comment(&app, 3, &p2, None).await;
    comment(&app, 1, &p2, Some(&c3)).await;
    let (status, erased) = app.erase_me(2).await;
    assert_eq!(status, StatusCode::OK, "{erased}");
    let erased = position(&erased);
    assert_eq!(
        summary(&groups(&app, 1, &erased).await),
        vec![group("followed", "", 1, &[3])]
    );
    // 3's comment was on 2's post, which is gone with its notifications.
    assert!(groups(&app, 3, &erased).await.is_empty());
    assert_verified(&app).await;
    let before: Vec<(i64, String, i64, Vec<i64>)> =
        sqlx::query_as("SELECT recipient, grp, count, actors FROM notify_groups ORDER BY 1, 2")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    relations(&app, &["rebuild", "notifications"]);
    let after: Vec<(i64, String, i64, Vec<i64>)> =
        sqlx::query_as("SELECT recipient, grp, count, actors FROM notify_groups ORDER BY 1, 2")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(before, after);
    let verify = relations(&app, &["verify"]);
    assert!(verify.status.success());
}

/// Every row of the notifications' tables, every column, in key order (the cause keys and
/// groups as text).
async fn notification_rows(app: &TestApp) -> Vec<String> {
    let tables = [
        "SELECT recipient, cause, grp, actor, post, comment, tx, gp, at FROM notify_causes",
        "SELECT recipient, grp, kind, post, comment, count, actors, tx, gp, latest_at, place_tx,
                place_gp FROM notify_groups",
        "SELECT post, n, author, post_author FROM notify_comments",
        "SELECT muter, muted, until FROM notify_mutes",
    ];
    let mut rows = Vec::new();
    for sql in tables {
        let text = format!("SELECT t::text FROM ({sql}) AS t ORDER BY 1");
        let table: Vec<String> = sqlx::query_scalar(&text)
            .fetch_all(&app.pool)
            .await
            .unwrap();
        rows.extend(table);
    }
    rows
}

/// A rebuild folds the whole log in memory (as `verify` does) and writes each table with one
/// `COPY` (issue 43): every row, every column, as the runner wrote it, after a history with
/// every kind of cause and every kind of undo.
#[tokio::test]
async fn a_rebuild_in_memory_writes_every_notification_row_as_the_runner_did() {
    let app = spawn_app().await;
    let (p1, _) = app.publish(1, "one").await;
    let (p2, _) = app.publish(2, "two").await;
    for follower in [2, 3, 4, 5] {
        relation(&app, "follow", follower, 1).await;
    }
    for liker in [2, 3, 4, 5, 6] {
        like(&app, liker, &format!("posts/{p1}"), "like").await;
    }
    like(&app, 6, &format!("posts/{p1}"), "unlike").await;
    let (c3, _) = comment(&app, 3, &p1, None).await;
    comment(&app, 4, &p1, Some(&c3)).await;
    like(&app, 1, &format!("comments/{c3}"), "like").await;
    comment(&app, 5, &p2, None).await;
    let (status, _) = app.mute(1, 5, Value::Null).await;
    assert_eq!(status, StatusCode::OK);
    like(&app, 5, &format!("posts/{p1}"), "unlike").await;
    like(&app, 5, &format!("posts/{p1}"), "like").await;
    relation(&app, "block", 1, 4).await;
    let (status, _) = app.delete_post(2, &p2).await;
    assert_eq!(status, StatusCode::OK);
    let last = relation(&app, "follow", 7, 1).await.expect("a follow");
    groups(&app, 1, &last).await;
    assert_verified(&app).await;
    let before = notification_rows(&app).await;
    assert!(before.len() > 8, "{before:#?}");
    relations(&app, &["rebuild", "notifications"]);
    assert_eq!(notification_rows(&app).await, before);
}

/// `user`'s notification stream on `instance`.
async fn listen(instance: &TestApp, user: i64, last_event_id: Option<&str>) -> Reader {
    let token = instance.token(user);
    Reader::open(
        instance,
        "/api/v1/notifications/stream",
        &token,
        last_event_id,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_are_live_on_every_instance_with_the_same_filters() {
    let app = spawn_app().await;
    // A second instance on the same database, running no projector.
    let other = crate::helpers::spawn_with({
        let mut config = app.config.clone();
        config.run_projectors = false;
        config
    })
    .await;
    let (post, _) = app.publish(1, "live").await;
    let (status, _) = app.mute(1, 3, Value::Null).await;
    assert_eq!(status, StatusCode::OK);
    let mut here = listen(&app, 1, None).await;
    let mut there = listen(&other, 1, None).await;
    // Let both hubs find where the projector stands.
    tokio::time::sleep(Duration::from_millis(500)).await;
    like(&app, 1, &format!("posts/{post}"), "like").await; // own: never sent
    like(&app, 3, &format!("posts/{post}"), "like").await; // muted: never sent
    let started = std::time::Instant::now();
    let liked = like(&app, 2, &format!("posts/{post}"), "like").await;
    for stream in [&mut here, &mut there] {
        let sse = stream.next(Duration::from_secs(10)).await;
        let sse = sse.expect("an event");
        assert_eq!(sse.event, "notification");
        assert_eq!(sse.id.as_deref(), Some(liked.as_str()));
        assert_eq!(sse.data["type"], "liked_post");
        assert_eq!(sse.data["actor"], 2);
        assert_eq!(sse.data["post"], post.as_str());
    }
    eprintln!(
        "delivered on both instances {:?} after the answer",
        started.elapsed()
    );
    // A reconnection with Last-Event-ID is sent what it missed.
    drop(there);
    let followed = relation(&app, "follow", 4, 1).await.unwrap();
    let mut again = listen(&other, 1, Some(&liked)).await;
    let missed = again.next(Duration::from_secs(10)).await;
    let missed = missed.expect("the missed one");
    assert_eq!(
        (missed.id.as_deref(), missed.data["type"].as_str()),
        (Some(followed.as_str()), Some("followed"))
    );
    let live = here.next(Duration::from_secs(10)).await.expect("live too");
    assert_eq!(live.id.as_deref(), Some(followed.as_str()));
    // A ban answered by one instance ends the user's stream on the other.
    let (status, banned) = read(
        app.client
            .post(format!("{}/api/v1/admin/users/1/ban", app.base))
            .bearer_auth(app.admin_token(99))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{banned}");
    let end = again.next(Duration::from_secs(10)).await.expect("an end");
    assert_eq!(
        (end.event.as_str(), end.data["code"].as_str()),
        ("end", Some("USER_BANNED"))
    );
    drop(other);
}

#[tokio::test]
async fn a_follow_with_notify_is_told_of_each_readable_post_until_it_ends() {
    let app = spawn_app().await;
    // Given 2 follows 1 with notify, and 3 follows 1 without.
    let body = json!({ "target": 1, "notify": true });
    let (status, answer) = app.post_as(2, "/api/v1/relation/follow", body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    relation(&app, "follow", 3, 1).await;
    // When 1 posts twice, then 2 is told of each, one notification per post; 3 of none.
    let (first, _) = app.publish(1, "one").await;
    let (second, at) = app.publish(1, "two").await;
    let expected = vec![
        group("posted", &second, 1, &[1]),
        group("posted", &first, 1, &[1]),
    ];
    assert_eq!(summary(&groups(&app, 2, &at).await), expected);
    assert!(groups(&app, 3, &at).await.is_empty());
    // When 1 deletes the first, then its notification goes.
    let (status, deleted) = app.delete_post(1, &first).await;
    assert_eq!(status, StatusCode::OK, "{deleted}");
    let at = position(&deleted);
    assert_eq!(summary(&groups(&app, 2, &at).await), expected[..1].to_vec());
    // When 1 removes 2 as a follower, then a new post notifies nobody: the follow, and its
    // notify, ended.
    relation(&app, "remove_follower", 1, 2).await;
    let (_, at) = app.publish(1, "three").await;
    assert_eq!(summary(&groups(&app, 2, &at).await), expected[..1].to_vec());
    // The types filter knows `posted`.
    let path = format!("/api/v1/notifications?types=posted&min_position={at}");
    let (status, page) = app.get_as(2, &path).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    assert_verified(&app).await;
    let before = notification_rows(&app).await;
    relations(&app, &["rebuild", "notifications"]);
    assert_eq!(
        notification_rows(&app).await,
        before,
        "a rebuild writes the same rows"
    );
}

#[tokio::test]
async fn a_posted_notification_is_live_and_a_followers_only_post_reaches_only_followers() {
    let app = spawn_app().await;
    let body = json!({ "target": 1, "notify": true });
    let (status, answer) = app.post_as(2, "/api/v1/relation/follow", body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let mut stream = listen(&app, 2, None).await;
    // Let the hub find where the projector stands.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let body = json!({ "content": "for followers", "visibility": "followers" });
    let (status, posted) = app.post_with(1, body).await;
    assert_eq!(status, StatusCode::CREATED, "{posted}");
    let post = posted["post"]["id"].as_str().unwrap();
    let sse = stream.next(Duration::from_secs(10)).await.expect("live");
    assert_eq!(sse.event, "notification");
    assert_eq!(
        (sse.data["type"].as_str(), sse.data["post"].as_str()),
        (Some("posted"), Some(post))
    );
    assert_eq!(sse.data["actor"], 1);
}
