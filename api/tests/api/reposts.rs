//! Reposts (issue 44) over HTTP against the real services: the command's judgment in SPEC's
//! order, its answers and repeats, the counts and the reposters list, erasure, and a repost
//! racing a block between reposter and author.

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_verified, code, projector_reached, spawn_app, TestApp};

/// `POST /api/v1/posts/{post}/{verb}` as `user`.
async fn repost(app: &TestApp, user: i64, post: &str, verb: &str) -> (StatusCode, Value) {
    app.post_as(user, &format!("/api/v1/posts/{post}/{verb}"), json!({}))
        .await
}

/// Publishes as `author` with `visibility`; the post's id.
async fn publish(app: &TestApp, author: i64, visibility: &str) -> String {
    let body = json!({ "content": "travel far", "visibility": visibility });
    let (status, body) = app.post_with(author, body).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["post"]["id"].as_str().unwrap().to_owned()
}

/// `post` as `viewer` reads it on its author's timeline, once `at` is folded.
async fn seen(app: &TestApp, viewer: i64, author: i64, post: &str, at: &str) -> Value {
    let path = format!("/api/v1/users/{author}/posts?min_position={at}");
    let (status, page) = app.get_as(viewer, &path).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let items = page["items"].as_array().unwrap();
    items.iter().find(|p| p["id"] == post).unwrap().clone()
}

fn refused(answer: (StatusCode, Value)) -> (StatusCode, String) {
    (answer.0, code(&answer.1).to_owned())
}

#[tokio::test]
async fn a_repost_is_judged_in_spec_order_answered_counted_and_listed() {
    let app = spawn_app().await;
    let public = publish(&app, 1, "public").await;
    // Given a readable public post, when 2 reposts it twice, then the second changes nothing.
    let (status, first) = repost(&app, 2, &public, "repost").await;
    assert_eq!(status, StatusCode::OK, "{first}");
    assert_eq!(
        (&first["changed"], &first["reposted"]),
        (&json!(true), &json!(true))
    );
    let (_, again) = repost(&app, 2, &public, "repost").await;
    assert_eq!(
        (&again["changed"], &again["position"]),
        (&json!(false), &Value::Null)
    );
    // One may repost one's own post.
    let (status, own) = repost(&app, 1, &public, "repost").await;
    assert_eq!(status, StatusCode::OK, "{own}");
    let at = own["position"].as_str().unwrap();
    let post = seen(&app, 2, 1, &public, at).await;
    assert_eq!(
        (&post["repost_count"], &post["reposted"]),
        (&json!(2), &json!(true))
    );
    let post = seen(&app, 3, 1, &public, at).await;
    assert_eq!(
        (&post["repost_count"], &post["reposted"]),
        (&json!(2), &json!(false))
    );
    let (_, list) = app
        .get(&format!("/api/v1/posts/{public}/reposts?min_position={at}"))
        .await;
    let users: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["user"])
        .collect();
    assert_eq!(users, vec![&json!(1), &json!(2)], "{list}");
    // An unrepost takes it back once; an unrepost of nothing changes nothing.
    let (_, undone) = repost(&app, 2, &public, "unrepost").await;
    assert_eq!(
        (&undone["changed"], &undone["reposted"]),
        (&json!(true), &json!(false))
    );
    let (_, nothing) = repost(&app, 3, &public, "unrepost").await;
    assert_eq!(nothing["changed"], json!(false));
    let at = undone["position"].as_str().unwrap();
    let post = seen(&app, 2, 1, &public, at).await;
    assert_eq!(
        (&post["repost_count"], &post["reposted"]),
        (&json!(1), &json!(false))
    );

    // A followers-only post: 404 to a stranger (they may not read it), 403 to a follower.
    let only = publish(&app, 1, "followers").await;
    assert_eq!(
        refused(repost(&app, 3, &only, "repost").await),
        (StatusCode::NOT_FOUND, "NOT_FOUND".into())
    );
    app.command("follow", 4, 1).await;
    assert_eq!(
        refused(repost(&app, 4, &only, "repost").await),
        (StatusCode::FORBIDDEN, "NOT_REPOSTABLE".into())
    );
    // A block either way is 403 BLOCKED, before the post's own rule.
    app.command("block", 1, 5).await;
    assert_eq!(
        refused(repost(&app, 5, &public, "repost").await),
        (StatusCode::FORBIDDEN, "BLOCKED".into())
    );
    // A locked author's public post: a follower may read it but not repost it.
    app.command("follow", 6, 7).await;
    let locked = publish(&app, 7, "public").await;
    app.set_locked(7, true).await;
    assert_eq!(
        refused(repost(&app, 6, &locked, "repost").await),
        (StatusCode::FORBIDDEN, "NOT_REPOSTABLE".into())
    );
    assert_eq!(
        refused(repost(&app, 2, &locked, "repost").await),
        (StatusCode::NOT_FOUND, "NOT_FOUND".into())
    );
    // Unknown and malformed ids are 404; nothing of it reached the log.
    let unknown = uuid::Uuid::now_v7();
    for id in [unknown.to_string(), "not-an-id".to_owned()] {
        assert_eq!(
            refused(repost(&app, 2, &id, "repost").await).0,
            StatusCode::NOT_FOUND
        );
    }
    let reposts: i64 =
        sqlx::query_scalar("SELECT count(*) FROM events WHERE aggregate_type = 'repost'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(reposts, 3, "two reposts and an unrepost");
    assert_verified(&app).await;
}

#[tokio::test]
async fn an_erasure_voids_the_users_reposts_and_the_count_follows() {
    let app = spawn_app().await;
    let post = publish(&app, 1, "public").await;
    for user in [2, 3] {
        let (status, body) = repost(&app, user, &post, "repost").await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (status, body) = app.erase_me(2).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let at = body["position"].as_str().unwrap();
    projector_reached(&app, "engagement", at).await;
    let seen = seen(&app, 3, 1, &post, at).await;
    assert_eq!(
        (&seen["repost_count"], &seen["reposted"]),
        (&json!(1), &json!(true))
    );
    let left: Vec<i64> = sqlx::query_scalar("SELECT user_id FROM rm_reposts")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(left, vec![3]);
    assert_verified(&app).await;
}

/// Each of 8 users reposts and unreposts the post in turn until refused, while its author
/// blocks each of them once 16 answers are in: no repost event of a pair is ever after its
/// block in the log, and each user's loop ends in 403 BLOCKED.
#[tokio::test]
async fn reposts_racing_a_block_never_stand_beside_it() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let app = spawn_app().await;
    let post = publish(&app, 1, "public").await;
    let answered = AtomicUsize::new(0);
    let users: Vec<i64> = (100..108).collect();
    let client = |user: i64| {
        let (app, post, answered) = (&app, &post, &answered);
        async move {
            for turn in 0..2_000 {
                let verb = if turn % 2 == 0 { "repost" } else { "unrepost" };
                let (status, body) = repost(app, user, post, verb).await;
                if status != StatusCode::OK {
                    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "BLOCKED"));
                    return;
                }
                answered.fetch_add(1, Ordering::Relaxed);
            }
            panic!("{user} was never refused");
        }
    };
    let blocks = async {
        while answered.load(Ordering::Relaxed) < 16 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        join_all(users.iter().map(|&u| app.command("block", 1, u))).await
    };
    let (_, blocked) = tokio::join!(join_all(users.iter().map(|&u| client(u))), blocks);
    assert!(blocked.iter().all(|(status, _)| *status == StatusCode::OK));
    for user in users {
        let stream = format!("1:{user}");
        let block: i64 = sqlx::query_scalar(
            "SELECT global_position FROM events
              WHERE aggregate_type = 'relation' AND aggregate_id = $1 AND event_type = 'Blocked'",
        )
        .bind(&stream)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        let late: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM events WHERE aggregate_type = 'repost' AND aggregate_id = $1
                AND global_position > $2",
        )
        .bind(format!("{post}:{user}"))
        .bind(block)
        .fetch_one(&app.pool)
        .await
        .unwrap();
        assert_eq!(late, 0, "a repost event of {user} after the block");
    }
    assert_verified(&app).await;
}

/// Issue 43's rule for every command that judges visibility: a lagging model may send a
/// repost to the log, never refuse it. A post is reposted just after it is published, ten
/// times over; and a locked author's public post is reposted by a stranger right after the
/// unlock, with the log's horizon held so that no reader has folded the unlock.
#[tokio::test]
async fn a_repost_racing_its_posts_publication_or_an_unlock_is_never_refused() {
    let app = spawn_app().await;
    for round in 0..10i64 {
        let (author, reposter) = (10 + 2 * round, 11 + 2 * round);
        let post = publish(&app, author, "public").await;
        let (status, body) = repost(&app, reposter, &post, "repost").await;
        assert_eq!(status, StatusCode::OK, "round {round}: {body}");
    }
    app.set_locked(5, true).await;
    let post = publish(&app, 5, "public").await;
    let held = crate::helpers::hold_open_follow(&app).await;
    app.set_locked(5, false).await;
    let (status, body) = repost(&app, 6, &post, "repost").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    held.rollback().await.unwrap();
    assert_verified(&app).await;
}

/// Issue 44: a repost notifies the post's author, grouped per post (`post`: the reposted
/// post); an unrepost takes it back; one's own repost notifies nobody.
#[tokio::test]
async fn a_repost_notifies_its_author_grouped_per_post_until_taken_back() {
    let app = spawn_app().await;
    let post = publish(&app, 1, "public").await;
    for user in [1, 2, 3] {
        let (status, body) = repost(&app, user, &post, "repost").await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let (_, last) = repost(&app, 4, &post, "repost").await;
    let at = last["position"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/notifications?types=reposted&min_position={at}");
    let (status, page) = app.get_as(1, &path).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let items = page["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "one group for the post: {page}");
    assert_eq!(
        (&items[0]["type"], &items[0]["post"]),
        (&json!("reposted"), &json!(post))
    );
    assert_eq!(
        items[0]["count"],
        json!(3),
        "2, 3 and 4, not 1 itself: {page}"
    );
    for user in [2, 3, 4] {
        repost(&app, user, &post, "unrepost").await;
    }
    let (_, after) = app.command("follow", 8, 9).await;
    let at = after["position"].as_str().unwrap();
    projector_reached(&app, "notifications", at).await;
    let path = format!("/api/v1/notifications?types=reposted&min_position={at}");
    let (_, page) = app.get_as(1, &path).await;
    assert_eq!(page["items"], json!([]), "every repost taken back: {page}");
    assert_verified(&app).await;
}
