//! Likes and comments (issue 16, seed 002) over HTTP against the real services: every rule,
//! the races (likes and unlikes of one post at once; a block racing comments), and a property
//! test of comment threads against a reference, page by page.

use std::collections::BTreeSet;

use futures::future::join_all;
use proptest::prelude::*;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{
    assert_verified, code, projector_reached, read, spawn_app, spawn_with, test_config, TestApp,
};

fn position(body: &Value) -> String {
    body["position"].as_str().expect("a position").to_owned()
}

/// POSTs `path` (no body) as `user`.
async fn post_as(app: &TestApp, user: i64, path: String) -> (StatusCode, Value) {
    read(
        app.client
            .post(format!("{}{path}", app.base))
            .bearer_auth(app.token(user))
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// Comments on `post` as `user` (a reply to `parent`).
pub async fn comment(
    app: &TestApp,
    user: i64,
    post: &str,
    parent: Option<&str>,
) -> (StatusCode, Value) {
    read(
        app.client
            .post(format!("{}/api/v1/posts/{post}/comments", app.base))
            .bearer_auth(app.token(user))
            .json(&json!({ "content": format!("from {user}"), "parent": parent }))
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn delete_comment(app: &TestApp, user: i64, id: &str) -> (StatusCode, Value) {
    read(
        app.client
            .delete(format!("{}/api/v1/comments/{id}", app.base))
            .bearer_auth(app.token(user))
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// Every item of a comment list (`path` with its query), page by page, as `viewer`.
async fn all_pages(
    app: &TestApp,
    viewer: Option<i64>,
    path: &str,
    limit: usize,
) -> Vec<Vec<Value>> {
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let sep = if path.contains('?') { '&' } else { '?' };
        let url = match &cursor {
            Some(c) => format!("{path}{sep}limit={limit}&cursor={c}"),
            None => format!("{path}{sep}limit={limit}"),
        };
        let (status, page) = match viewer {
            Some(v) => app.get_as(v, &url).await,
            None => app.get(&url).await,
        };
        assert_eq!(status, StatusCode::OK, "{url}: {page}");
        pages.push(page["items"].as_array().unwrap().clone());
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return pages,
        }
        assert!(pages.len() < 200, "the list never ended");
    }
}

#[tokio::test]
async fn likes_are_idempotent_counted_listed_and_checked_in_bulk() {
    let app = spawn_app().await;
    let (post, _) = app.publish(1, "like me").await;
    let (other, _) = app.publish(1, "or me").await;
    let (status, body) = post_as(&app, 2, format!("/api/v1/posts/{post}/like")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (body["changed"].clone(), body["liked"].clone()),
        (json!(true), json!(true))
    );
    let (_, again) = post_as(&app, 2, format!("/api/v1/posts/{post}/like")).await;
    assert_eq!(
        (
            again["changed"].clone(),
            again["liked"].clone(),
            again["position"].clone()
        ),
        (json!(false), json!(true), json!(null))
    );
    post_as(&app, 3, format!("/api/v1/posts/{post}/like")).await;
    post_as(&app, 4, format!("/api/v1/posts/{post}/like")).await;
    let (_, body) = post_as(&app, 4, format!("/api/v1/posts/{post}/unlike")).await;
    assert_eq!(
        (body["changed"].clone(), body["liked"].clone()),
        (json!(true), json!(false))
    );
    let at = position(&body);
    // Counts in the author's timeline, `liked` for a bearer.
    let (_, timeline) = app
        .get_as(2, &format!("/api/v1/users/1/posts?min_position={at}"))
        .await;
    let items = timeline["items"].as_array().unwrap();
    let liked_one = items.iter().find(|p| p["id"] == json!(post)).unwrap();
    assert_eq!(liked_one["like_count"], json!(2), "{timeline}");
    assert_eq!(liked_one["comment_count"], json!(0));
    assert_eq!(liked_one["liked"], json!(true));
    let other_one = items.iter().find(|p| p["id"] == json!(other)).unwrap();
    assert_eq!(
        (other_one["like_count"].clone(), other_one["liked"].clone()),
        (json!(0), json!(false))
    );
    let (_, anonymous) = app
        .get(&format!("/api/v1/users/1/posts?min_position={at}"))
        .await;
    assert!(anonymous["items"][0].get("liked").is_none(), "{anonymous}");
    // Likers, newest first, paged.
    let (_, page) = app
        .get(&format!(
            "/api/v1/posts/{post}/likes?limit=1&min_position={at}"
        ))
        .await;
    assert_eq!(page["items"][0]["user"], json!(3), "{page}");
    let cursor = page["next_cursor"].as_str().unwrap();
    let (_, page) = app
        .get(&format!(
            "/api/v1/posts/{post}/likes?limit=1&cursor={cursor}"
        ))
        .await;
    assert_eq!(page["items"][0]["user"], json!(2));
    assert_eq!(page["next_cursor"], json!(null));
    // Which of these do I like: in order, up to 100, from the like-state cache.
    let unknown = "01900000-0000-7000-8000-000000000000";
    let (status, answer) = app
        .get_as(2, &format!("/api/v1/me/liked?ids={other},{post},{unknown}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["liked"], json!([false, true, false]));
    let hundred_one = vec![post.clone(); 101].join(",");
    let (status, _) = app
        .get_as(2, &format!("/api/v1/me/liked?ids={hundred_one}"))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = app.get_as(2, "/api/v1/me/liked?ids=nope").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("relations_like_checks_total{answered_by=\"cache"),
        "{metrics}"
    );
    // Unknown, malformed or deleted posts are 404.
    for path in [
        format!("/api/v1/posts/{unknown}/like"),
        "/api/v1/posts/x/like".to_owned(),
    ] {
        assert_eq!(
            post_as(&app, 2, path.clone()).await.0,
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }
    app.delete_post(1, &other).await;
    assert_eq!(
        post_as(&app, 2, format!("/api/v1/posts/{other}/like"))
            .await
            .0,
        StatusCode::NOT_FOUND
    );
    projector_reached(&app, "engagement", &at).await;
    assert_verified(&app).await;
}

#[tokio::test]
async fn likes_of_posts_older_than_the_cache_window_are_answered_by_the_database() {
    let app = spawn_app().await;
    // A post published ten days ago (its id is a UUID v7 of that time), written to the log as
    // the service writes posts.
    let ten_days_ago = chrono::Utc::now() - chrono::Duration::days(10);
    let old = uuid::Uuid::new_v7(uuid::Timestamp::from_unix(
        uuid::NoContext,
        ten_days_ago.timestamp() as u64,
        0,
    ));
    sqlx::query(
        "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
         VALUES ('post', $1::text, 1, 'PostPublished', '1',
                 json_build_object('PostPublished', json_build_object('post_id', $1::text,
                     'author', 1, 'content', 'old', 'created_at', '2026-11-13T00:00:00Z')),
                 '{\"request_id\": \"test\", \"actor\": \"1\"}')",
    )
    .bind(old.to_string())
    .execute(&app.pool)
    .await
    .unwrap();
    let (status, body) = post_as(&app, 2, format!("/api/v1/posts/{old}/like")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    projector_reached(&app, "engagement", &position(&body)).await;
    let (_, answer) = app.get_as(2, &format!("/api/v1/me/liked?ids={old}")).await;
    assert_eq!(answer["liked"], json!([true]));
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("relations_like_checks_total{answered_by=\"database\"}"),
        "{metrics}"
    );
}

#[tokio::test]
async fn many_likes_and_unlikes_of_one_post_at_once_end_with_the_exact_count() {
    let app = spawn_app().await;
    let (post, _) = app.publish(1, "popular").await;
    // 60 users like; 20 of them also unlike, all at once; then 10 like twice more.
    let mut requests = Vec::new();
    for user in 100..160 {
        requests.push(post_as(&app, user, format!("/api/v1/posts/{post}/like")));
        if user % 3 == 0 {
            requests.push(post_as(&app, user, format!("/api/v1/posts/{post}/unlike")));
        }
    }
    for (status, body) in join_all(requests).await {
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let again = (100..110).map(|u| post_as(&app, u, format!("/api/v1/posts/{post}/like")));
    for (status, body) in join_all(again).await {
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    // The truth: each user's stream's last event.
    let liked: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM (SELECT DISTINCT ON (aggregate_id) event_type FROM events
          WHERE aggregate_type = 'like' ORDER BY aggregate_id, sequence DESC) AS last
          WHERE event_type = 'Liked'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    // A command after every like answered: its position follows all of theirs in the log (the
    // likes' own positions come back in no particular order, so the last one answered need not
    // be the newest).
    let (_, after) = app.command("follow", 1, 2).await;
    let at = position(&after);
    projector_reached(&app, "engagement", &at).await;
    let (_, timeline) = app
        .get(&format!("/api/v1/users/1/posts?min_position={at}"))
        .await;
    assert_eq!(
        timeline["items"][0]["like_count"],
        json!(liked),
        "{timeline}"
    );
    assert!(liked >= 40, "{liked}");
    assert_verified(&app).await;
}

/// Where a deletion (its stream's type and id, and its event type) and every like of `target`
/// sit in the log (global positions).
async fn likes_around_deletion(
    app: &TestApp,
    (stream_type, stream, event_type): (&str, &str, &str),
    target: &str,
) -> (i64, Vec<i64>) {
    let deleted: i64 = sqlx::query_scalar(
        "SELECT global_position FROM events
          WHERE aggregate_type = $1 AND aggregate_id = $2 AND event_type = $3",
    )
    .bind(stream_type)
    .bind(stream)
    .bind(event_type)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    let likes = sqlx::query_scalar(
        "SELECT global_position FROM events
          WHERE aggregate_type = 'like' AND aggregate_id LIKE $1 AND event_type = 'Liked'",
    )
    .bind(format!("{target}:%"))
    .fetch_all(&app.pool)
    .await
    .unwrap();
    (deleted, likes)
}

/// 16 clients like through `path` as new users one after the other until it answers 404,
/// while `delete` runs once 16 likes have been answered, with likes in flight: how many likes
/// were answered, and what the deletion answered.
async fn likes_racing(
    app: &TestApp,
    path: &str,
    delete: impl std::future::Future<Output = (StatusCode, Value)>,
) -> (usize, (StatusCode, Value)) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let answered = AtomicUsize::new(0);
    let client = |c: i64| {
        let answered = &answered;
        async move {
            let mut liked = 0;
            for user in (1_000 * (c + 1)..).take(200) {
                let (status, body) = post_as(app, user, path.to_owned()).await;
                match status {
                    StatusCode::OK => {
                        liked += 1;
                        answered.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => {
                        assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "NOT_FOUND"));
                        return liked;
                    }
                }
            }
            panic!("{path} never went")
        }
    };
    let (liked, deleted) = tokio::join!(join_all((0..16).map(client)), async {
        while answered.load(Ordering::Relaxed) < 16 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        delete.await
    });
    (liked.iter().sum(), deleted)
}

/// Every like answered is in the log, before the deletion; the race had likes to race.
fn assert_none_after((deleted, likes): (i64, Vec<i64>), liked: usize) {
    assert_eq!(likes.len(), liked);
    assert!(likes.len() >= 16, "the likes raced nothing: {likes:?}");
    let late: Vec<_> = likes.iter().filter(|at| **at > deleted).collect();
    assert!(late.is_empty(), "{late:?} after {deleted}");
}

#[tokio::test]
async fn a_post_deleted_on_another_instance_takes_no_more_likes_there() {
    let config = test_config().await;
    let app = spawn_with(config.clone()).await;
    let other = spawn_with({
        let mut config = config.clone();
        config.run_projectors = false;
        config
    })
    .await;
    let (post, _) = app.publish(1, "soon gone").await;
    // `app` knows the post live: it published it, and a like judges it from that knowledge.
    let (status, body) = post_as(&app, 2, format!("/api/v1/posts/{post}/like")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = other.delete_post(1, &post).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    for (user, verb) in [(3, "like"), (2, "unlike"), (2, "like")] {
        let (status, body) = post_as(&app, user, format!("/api/v1/posts/{post}/{verb}")).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::NOT_FOUND, "NOT_FOUND"),
            "{verb} by {user}"
        );
    }
    let (deleted, likes) = likes_around_deletion(
        &app,
        ("post", &post, "PostDeleted"),
        &format!("post:{post}"),
    )
    .await;
    assert_eq!(likes.len(), 1);
    assert!(likes[0] < deleted);
}

#[tokio::test]
async fn likes_racing_a_post_deletion_never_land_after_it() {
    let app = spawn_app().await;
    let (post, _) = app.publish(1, "going").await;
    let path = format!("/api/v1/posts/{post}/like");
    let (liked, (status, body)) = likes_racing(&app, &path, app.delete_post(1, &post)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let target = format!("post:{post}");
    let around = likes_around_deletion(&app, ("post", &post, "PostDeleted"), &target).await;
    assert_none_after(around, liked);
}

#[tokio::test]
async fn likes_racing_a_comment_deletion_never_land_after_it() {
    let app = spawn_app().await;
    let (post, _) = app.publish(1, "a thread").await;
    let (_, body) = comment(&app, 2, &post, None).await;
    let id = body["comment"]["id"].as_str().unwrap().to_owned();
    // A like judged live before the deletion commits is refused, or commits before it.
    let path = format!("/api/v1/comments/{id}/like");
    let (liked, (status, body)) = likes_racing(&app, &path, delete_comment(&app, 2, &id)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let target = format!("comment:{id}");
    let around = likes_around_deletion(&app, ("thread", &post, "CommentDeleted"), &target).await;
    assert_none_after(around, liked);
    // And so no notification of a like outlives the comment.
    let (_, after) = app.command("follow", 5, 6).await;
    projector_reached(&app, "notifications", &position(&after)).await;
    let left: i64 =
        sqlx::query_scalar("SELECT count(*) FROM notify_causes WHERE grp LIKE 'liked_comment:%'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(left, 0);
}

/// `rm_likes`, `rm_post_stats` and the comments' like counts, in key order.
async fn like_rows(app: &TestApp) -> (Vec<(String, i64, String)>, Vec<(String, i64)>, Vec<i64>) {
    let likes = sqlx::query_as(
        "SELECT target, user_id, since::text FROM rm_likes ORDER BY target, user_id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let stats = sqlx::query_as(
        "SELECT post::text, like_count FROM rm_post_stats WHERE like_count <> 0 ORDER BY post",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let comments = sqlx::query_scalar("SELECT like_count FROM rm_comments ORDER BY post, n")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    (likes, stats, comments)
}

#[tokio::test]
async fn likes_taken_back_and_given_again_fold_the_same_in_one_batch_as_one_by_one() {
    let app = spawn_app().await;
    let (post, _) = app.publish(1, "like me, or not").await;
    let (_, body) = comment(&app, 2, &post, None).await;
    let c = body["comment"]["id"].as_str().unwrap().to_owned();
    // Each command waits for the one before, so the projector folds them in small batches;
    // the rebuild below folds the whole log in one batch (one run of likes per target kind).
    let steps = [
        (3, format!("/api/v1/posts/{post}/like")),
        (3, format!("/api/v1/posts/{post}/unlike")),
        (3, format!("/api/v1/posts/{post}/like")),
        (4, format!("/api/v1/posts/{post}/like")),
        (4, format!("/api/v1/posts/{post}/unlike")),
        (5, format!("/api/v1/posts/{post}/unlike")),
        (3, format!("/api/v1/comments/{c}/like")),
        (3, format!("/api/v1/comments/{c}/unlike")),
        (3, format!("/api/v1/comments/{c}/like")),
        (6, format!("/api/v1/comments/{c}/like")),
    ];
    let mut last = String::new();
    for (user, path) in steps {
        let (status, body) = post_as(&app, user, path).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if let Some(at) = body["position"].as_str() {
            last = at.to_owned();
        }
    }
    projector_reached(&app, "engagement", &last).await;
    let one_by_one = like_rows(&app).await;
    // The expected rows, from the rules: user 3 likes the post and the comment (since their
    // last like), user 6 the comment; user 4 took theirs back, user 5 never liked.
    let last_liked: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT ON (aggregate_id) occurred_at::text FROM events
          WHERE aggregate_type = 'like' AND event_type = 'Liked'
          ORDER BY aggregate_id, sequence DESC",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let (likes, stats, comments) = &one_by_one;
    assert_eq!(
        likes.iter().map(|l| l.1).collect::<Vec<_>>(),
        vec![3, 6, 3],
        "{likes:?}"
    );
    for (target, _, since) in likes {
        assert!(last_liked.contains(since), "{target}: {since}");
    }
    assert_eq!(stats.iter().map(|s| s.1).collect::<Vec<_>>(), vec![1]);
    assert_eq!(comments, &vec![2]);
    assert_verified(&app).await;
    crate::helpers::relations(&app, &["rebuild", "engagement"]);
    assert_eq!(like_rows(&app).await, one_by_one);
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_block_either_way_refuses_likes_comments_and_replies_and_hides_comments() {
    let app = spawn_app().await;
    let (post, _) = app.publish(1, "hello").await;
    let (_, c2) = comment(&app, 2, &post, None).await;
    let c2 = c2["comment"]["id"].as_str().unwrap().to_owned();
    let (_, c3) = comment(&app, 3, &post, None).await;
    let c3 = c3["comment"]["id"].as_str().unwrap().to_owned();
    post_as(&app, 2, format!("/api/v1/posts/{post}/like")).await;
    // 1 blocks 2; 3 blocks 4.
    app.command("block", 1, 2).await;
    let (_, blocked) = app.command("block", 3, 4).await;
    let at = position(&blocked);
    for (user, path) in [
        (2, format!("/api/v1/posts/{post}/like")),
        (2, format!("/api/v1/posts/{post}/unlike")),
        (4, format!("/api/v1/comments/{c3}/like")),
        (4, format!("/api/v1/comments/{c3}/unlike")),
    ] {
        let (status, body) = post_as(&app, user, path.clone()).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::FORBIDDEN, "BLOCKED"),
            "{path}"
        );
    }
    let (status, body) = comment(&app, 2, &post, None).await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "BLOCKED"));
    let (status, body) = comment(&app, 4, &post, Some(&c3)).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "BLOCKED"),
        "a reply to a blocker"
    );
    // Nothing is deleted: the like stays counted, and 2's comment stays, hidden only from 1
    // (who blocks 2); 3's is hidden from 4.
    let path = format!("/api/v1/posts/{post}/comments?min_position={at}");
    let ids = |pages: Vec<Vec<Value>>| -> Vec<String> {
        pages
            .concat()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        ids(all_pages(&app, None, &path, 10).await),
        vec![c3.clone(), c2.clone()]
    );
    assert_eq!(
        ids(all_pages(&app, Some(1), &path, 10).await),
        vec![c3.clone()]
    );
    assert_eq!(
        ids(all_pages(&app, Some(2), &path, 10).await),
        vec![c3.clone(), c2.clone()],
        "a block by the post's author does not hide the post's comments"
    );
    assert_eq!(
        ids(all_pages(&app, Some(4), &path, 10).await),
        vec![c2.clone()]
    );
    let (_, timeline) = app
        .get(&format!("/api/v1/users/1/posts?min_position={at}"))
        .await;
    assert_eq!(timeline["items"][0]["like_count"], json!(1));
    assert_eq!(timeline["items"][0]["comment_count"], json!(2));
}

#[tokio::test]
async fn a_block_racing_comments_never_lets_a_comment_land_after_it() {
    let app = spawn_app().await;
    let (post, _) = app.publish(1, "contested").await;
    // Users 10..40 each comment twice while user 1 blocks each of them, all at once.
    let mut racing = Vec::new();
    for user in 10..40 {
        racing.push(futures::future::Either::Left(comment(
            &app, user, &post, None,
        )));
        racing.push(futures::future::Either::Right(
            app.command("block", 1, user),
        ));
        racing.push(futures::future::Either::Left(comment(
            &app, user, &post, None,
        )));
    }
    for (status, body) in join_all(racing).await {
        assert!(
            status.is_success() || (status == StatusCode::FORBIDDEN && code(&body) == "BLOCKED"),
            "{status} {body}"
        );
    }
    // In log order, no user's comment comes after 1's block of them.
    let order: Vec<(String, Value)> = app.events().await;
    let mut blocked: BTreeSet<i64> = BTreeSet::new();
    for (kind, payload) in order {
        match kind.as_str() {
            "Blocked" => {
                blocked.insert(payload["Blocked"]["blocked"].as_i64().unwrap());
            }
            "CommentAdded" => {
                let author = payload["CommentAdded"]["author"].as_i64().unwrap();
                assert!(
                    !blocked.contains(&author),
                    "{author} commented after the block"
                );
            }
            _ => {}
        }
    }
    assert_eq!(blocked.len(), 30);
}

#[tokio::test]
async fn comments_replies_tombstones_pins_and_counts_follow_the_rules() {
    let app = spawn_app().await;
    let (post, _) = app.publish(1, "discuss").await;
    let (status, root) = comment(&app, 2, &post, None).await;
    assert_eq!(status, StatusCode::CREATED, "{root}");
    let root_id = root["comment"]["id"].as_str().unwrap().to_owned();
    assert_eq!(root["comment"]["parent"], json!(null));
    assert_eq!(root["comment"]["liked"], json!(false));
    let (_, reply) = comment(&app, 3, &post, Some(&root_id)).await;
    let reply_id = reply["comment"]["id"].as_str().unwrap().to_owned();
    assert_eq!(reply["comment"]["parent"], json!(root_id));
    // A parent must be a live comment of the same post.
    let (other_post, _) = app.publish(1, "elsewhere").await;
    let (status, _) = comment(&app, 3, &other_post, Some(&root_id)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = comment(&app, 3, &post, Some("nope")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = read(
        app.client
            .post(format!("{}/api/v1/posts/{post}/comments", app.base))
            .bearer_auth(app.token(3))
            .json(&json!({ "content": "" }))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "INVALID_INPUT")
    );
    // Pins: the post's author only.
    let (status, body) = post_as(&app, 2, format!("/api/v1/comments/{root_id}/pin")).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (_, body) = post_as(&app, 1, format!("/api/v1/comments/{root_id}/pin")).await;
    assert_eq!(
        (body["changed"].clone(), body["pinned"].clone()),
        (json!(true), json!(true))
    );
    let (_, body) = post_as(&app, 1, format!("/api/v1/comments/{root_id}/pin")).await;
    assert_eq!(body["changed"], json!(false));
    // Deleting: by someone else 403; the root (with a reply) stays as a tombstone.
    let (status, _) = delete_comment(&app, 3, &root_id).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = delete_comment(&app, 2, &root_id).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let at = position(&body);
    let list = format!("/api/v1/posts/{post}/comments?min_position={at}");
    let roots = all_pages(&app, None, &list, 10).await.concat();
    assert_eq!(roots.len(), 1);
    assert_eq!(
        (
            roots[0]["deleted"].clone(),
            roots[0]["content"].clone(),
            roots[0]["reply_count"].clone()
        ),
        (json!(true), json!(null), json!(1))
    );
    assert_eq!(
        roots[0]["pinned"],
        json!(false),
        "a deleted comment is unpinned"
    );
    let (_, timeline) = app
        .get(&format!("/api/v1/users/1/posts?min_position={at}"))
        .await;
    let counted = timeline["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["id"] == json!(post))
        .unwrap()["comment_count"]
        .clone();
    assert_eq!(counted, json!(1), "live comments, replies included");
    // The reply, by the post's author: the tombstone goes with it.
    let (status, body) = delete_comment(&app, 1, &reply_id).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let at = position(&body);
    let list = format!("/api/v1/posts/{post}/comments?min_position={at}");
    assert!(all_pages(&app, None, &list, 10).await.concat().is_empty());
    let (status, _) = app
        .get(&format!(
            "/api/v1/comments/{root_id}/replies?min_position={at}"
        ))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = delete_comment(&app, 1, &reply_id).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_verified(&app).await;
    // Rebuilt from the log while serving: the same counts and lists.
    let (_, before) = app
        .get(&format!("/api/v1/users/1/posts?min_position={at}"))
        .await;
    crate::helpers::relations(&app, &["rebuild", "engagement"]);
    let (_, after) = app.get("/api/v1/users/1/posts").await;
    assert_eq!(before, after);
    assert_verified(&app).await;
}

#[tokio::test]
async fn comment_pages_stay_stable_while_comments_arrive() {
    let app = spawn_app().await;
    let (post, _) = app.publish(1, "busy").await;
    let mut ids = Vec::new();
    for user in 10..20 {
        let (_, c) = comment(&app, user, &post, None).await;
        ids.push(c["comment"]["id"].as_str().unwrap().to_owned());
    }
    let (_, c) = comment(&app, 99, &post, None).await;
    let at = position(&c);
    ids.push(c["comment"]["id"].as_str().unwrap().to_owned());
    ids.reverse();
    let first = app
        .get(&format!(
            "/api/v1/posts/{post}/comments?limit=4&min_position={at}"
        ))
        .await
        .1;
    let mut seen: Vec<String> = first["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_owned())
        .collect();
    // New comments arrive between pages: they are above the cursor, never repeated or skipped.
    for user in 30..35 {
        comment(&app, user, &post, None).await;
    }
    let mut cursor = first["next_cursor"].as_str().map(str::to_owned);
    while let Some(c) = cursor {
        let (_, page) = app
            .get(&format!("/api/v1/posts/{post}/comments?limit=4&cursor={c}"))
            .await;
        seen.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_str().unwrap().to_owned()),
        );
        cursor = page["next_cursor"].as_str().map(str::to_owned);
    }
    assert_eq!(seen, ids);
}

// ---- The property: random comments, replies, deletions, pins, likes and erasures (issue 25)
// against a reference.

#[derive(Debug, Clone)]
enum Op {
    /// A user comments, replying to the n-th comment made so far (modulo) or not.
    Comment(i64, Option<usize>),
    /// A user deletes the n-th comment (as its author, the post's author, or someone else).
    Delete(usize, u8),
    /// The post's author (or someone else) pins or unpins the n-th comment.
    Pin(usize, bool, bool),
    /// A user likes or unlikes the n-th comment.
    Like(i64, usize, bool),
    /// A commenter erases their account: their comments are deleted, their likes void.
    Erase(i64),
}

fn op() -> impl Strategy<Value = Op> {
    let user = 2i64..6;
    prop_oneof![
        4 => (user.clone(), prop::option::of(0usize..40)).prop_map(|(u, p)| Op::Comment(u, p)),
        2 => (0usize..40, 0u8..3).prop_map(|(n, who)| Op::Delete(n, who)),
        1 => (0usize..40, any::<bool>(), any::<bool>()).prop_map(|(n, pin, owner)| Op::Pin(n, pin, owner)),
        3 => (user, 0usize..40, any::<bool>()).prop_map(|(u, n, like)| Op::Like(u, n, like)),
        // Users 4 and 5 only: user 2 reads the lists at the end.
        1 => (4i64..6).prop_map(Op::Erase),
    ]
}

#[derive(Debug, Clone)]
struct Model {
    id: String,
    author: i64,
    parent: Option<usize>,
    deleted: bool,
    pinned: bool,
    likes: BTreeSet<i64>,
}

const POST_AUTHOR: i64 = 1;

fn visible(comments: &[Model], i: usize) -> bool {
    !comments[i].deleted || visible_replies(comments, i) > 0
}

fn visible_replies(comments: &[Model], i: usize) -> usize {
    (0..comments.len())
        .filter(|&j| comments[j].parent == Some(i) && visible(comments, j))
        .count()
}

/// The reference's root list: (pinned desc, then newest or most liked then newest).
fn expected_roots(comments: &[Model], top: bool) -> Vec<String> {
    let mut roots: Vec<usize> = (0..comments.len())
        .filter(|&i| comments[i].parent.is_none() && visible(comments, i))
        .collect();
    roots.sort_by_key(|&i| {
        let c = &comments[i];
        let likes = if top { c.likes.len() } else { 0 };
        std::cmp::Reverse((c.pinned, likes, i))
    });
    roots.iter().map(|&i| comments[i].id.clone()).collect()
}

fn expected_replies(comments: &[Model], parent: usize) -> Vec<String> {
    (0..comments.len())
        .filter(|&j| comments[j].parent == Some(parent) && visible(comments, j))
        .map(|j| comments[j].id.clone())
        .collect()
}

async fn thread_property(ops: Vec<Op>) {
    let app = spawn_app().await;
    let (post, mut last) = app.publish(POST_AUTHOR, "a thread").await;
    let mut comments: Vec<Model> = Vec::new();
    let mut erased = BTreeSet::new();
    for op in &ops {
        let actor = match *op {
            Op::Comment(user, _) | Op::Like(user, _, _) | Op::Erase(user) => Some(user),
            Op::Delete(..) | Op::Pin(..) => None,
        };
        if let Some(user) = actor.filter(|u| erased.contains(u)) {
            // An erased user's token is refused within a second (401); meanwhile their
            // commands name an erased user (404).
            let (status, body) = comment(&app, user, &post, None).await;
            assert!(
                [StatusCode::UNAUTHORIZED, StatusCode::NOT_FOUND].contains(&status),
                "{op:?}: {body}"
            );
            continue;
        }
        let (status, body, expected) = match *op {
            Op::Erase(user) => {
                let (status, body) = app.erase_me(user).await;
                erased.insert(user);
                for c in comments.iter_mut() {
                    c.likes.remove(&user);
                    if c.author == user {
                        (c.deleted, c.pinned) = (true, false);
                    }
                }
                (status, body, StatusCode::OK)
            }
            Op::Comment(user, parent) => {
                let parent = parent
                    .filter(|_| !comments.is_empty())
                    .map(|p| p % comments.len());
                let parent_id = parent.map(|p| comments[p].id.clone());
                let (status, body) = comment(&app, user, &post, parent_id.as_deref()).await;
                let live_parent = parent.is_none_or(|p| !comments[p].deleted);
                if status == StatusCode::CREATED {
                    comments.push(Model {
                        id: body["comment"]["id"].as_str().unwrap().to_owned(),
                        author: user,
                        parent,
                        deleted: false,
                        pinned: false,
                        likes: BTreeSet::new(),
                    });
                }
                let expected = if live_parent {
                    StatusCode::CREATED
                } else {
                    StatusCode::NOT_FOUND
                };
                (status, body, expected)
            }
            Op::Delete(_, _) | Op::Pin(..) | Op::Like(..) if comments.is_empty() => continue,
            Op::Delete(n, who) => {
                let n = n % comments.len();
                let c = &comments[n];
                let actor = [c.author, POST_AUTHOR, 9][who as usize];
                let (status, body) = delete_comment(&app, actor, &c.id.clone()).await;
                if erased.contains(&actor) {
                    // An erased author's token: 401, or 404 within the second before.
                    let refused = [StatusCode::UNAUTHORIZED, StatusCode::NOT_FOUND];
                    assert!(refused.contains(&status), "{op:?}: {body}");
                    continue;
                }
                let expected = match (c.deleted, who) {
                    (true, _) => StatusCode::NOT_FOUND,
                    (false, 2) => StatusCode::FORBIDDEN,
                    (false, _) => StatusCode::OK,
                };
                if status == StatusCode::OK {
                    comments[n].deleted = true;
                    comments[n].pinned = false;
                }
                (status, body, expected)
            }
            Op::Pin(n, pin, owner) => {
                let n = n % comments.len();
                let actor = if owner { POST_AUTHOR } else { 9 };
                let verb = if pin { "pin" } else { "unpin" };
                let id = comments[n].id.clone();
                let (status, body) =
                    post_as(&app, actor, format!("/api/v1/comments/{id}/{verb}")).await;
                let expected = match (comments[n].deleted, owner) {
                    (true, _) => StatusCode::NOT_FOUND,
                    (false, false) => StatusCode::FORBIDDEN,
                    (false, true) => StatusCode::OK,
                };
                if status == StatusCode::OK {
                    comments[n].pinned = pin;
                }
                (status, body, expected)
            }
            Op::Like(user, n, like) => {
                let n = n % comments.len();
                let verb = if like { "like" } else { "unlike" };
                let id = comments[n].id.clone();
                let (status, body) =
                    post_as(&app, user, format!("/api/v1/comments/{id}/{verb}")).await;
                let expected = if comments[n].deleted {
                    StatusCode::NOT_FOUND
                } else {
                    StatusCode::OK
                };
                if status == StatusCode::OK {
                    match like {
                        true => comments[n].likes.insert(user),
                        false => comments[n].likes.remove(&user),
                    };
                }
                (status, body, expected)
            }
        };
        assert_eq!(status, expected, "{op:?}: {body}");
        if let Some(p) = body["position"].as_str() {
            last = p.to_owned();
        }
    }
    // Every list, page by page (pages of 2), equals the reference.
    for (top, sort) in [(false, "new"), (true, "top")] {
        let path = format!("/api/v1/posts/{post}/comments?sort={sort}&min_position={last}");
        let pages = all_pages(&app, Some(2), &path, 2).await;
        let got: Vec<String> = pages
            .concat()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(got, expected_roots(&comments, top), "{sort}, ops {ops:?}");
        for item in pages.concat() {
            let i = comments
                .iter()
                .position(|c| json!(c.id) == item["id"])
                .unwrap();
            let c = &comments[i];
            assert_eq!(item["like_count"], json!(c.likes.len()), "{item}");
            assert_eq!(item["liked"], json!(c.likes.contains(&2)), "{item}");
            assert_eq!(
                item["reply_count"],
                json!(visible_replies(&comments, i)),
                "{item}"
            );
            assert_eq!(item["deleted"], json!(c.deleted));
            assert_eq!(item["pinned"], json!(c.pinned));
            assert_eq!(item["content"].is_null(), c.deleted);
        }
    }
    for (i, c) in comments.iter().enumerate() {
        if !visible(&comments, i) {
            continue;
        }
        let path = format!("/api/v1/comments/{}/replies?min_position={last}", c.id);
        let got: Vec<String> = all_pages(&app, None, &path, 2)
            .await
            .concat()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            got,
            expected_replies(&comments, i),
            "replies of {}, ops {ops:?}",
            c.id
        );
    }
    let (_, timeline) = app
        .get(&format!("/api/v1/users/1/posts?min_position={last}"))
        .await;
    let live = comments.iter().filter(|c| !c.deleted).count();
    assert_eq!(timeline["items"][0]["comment_count"], json!(live));
    projector_reached(&app, "engagement", &last).await;
    assert_verified(&app).await;
}

#[test]
fn comment_threads_equal_the_reference_page_by_page() {
    crate::helpers::check_property(16, prop::collection::vec(op(), 5..50), thread_property);
}

/// Likes, comments, replies and comment likes by `reader` on `post` (with comment `on` of it
/// to like and reply to); each answer's status.
async fn every_engagement_command(
    app: &TestApp,
    reader: i64,
    post: &str,
    on: &str,
) -> Vec<(&'static str, StatusCode, Value)> {
    let like = post_as(app, reader, format!("/api/v1/posts/{post}/like")).await;
    let commented = comment(app, reader, post, None).await;
    let replied = comment(app, reader, post, Some(on)).await;
    let liked_comment = post_as(app, reader, format!("/api/v1/comments/{on}/like")).await;
    vec![
        ("like", like.0, like.1),
        ("comment", commented.0, commented.1),
        ("reply", replied.0, replied.1),
        ("comment like", liked_comment.0, liked_comment.1),
    ]
}

/// Issue 43's defect: a command judged readability on this process's in-memory graph, which
/// may not yet have folded the follow (or the approval) that lets the actor read the post,
/// and refused it as not found. A lagging model may send a command to the log, never refuse
/// it. Here the graph is held back for certain: a transaction of the test's own holds the
/// log's horizon, so the follow, the approval and the unlock committed after it stay above it.
#[tokio::test]
async fn a_follower_engages_with_a_followers_only_post_the_graph_has_not_folded_yet() {
    let app = spawn_app().await;
    // 1 writes for followers only; 3 is locked.
    let (status, body) = app
        .post_with(
            1,
            json!({"content": "followers only", "visibility": "followers"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let restricted = body["post"]["id"].as_str().unwrap().to_owned();
    app.set_locked(3, true).await;
    let (locked_post, _) = app.publish(3, "for approved followers").await;
    // The authors' own comments, to like and reply to.
    let on_restricted = comment(&app, 1, &restricted, None).await.1["comment"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let on_locked = comment(&app, 3, &locked_post, None).await.1["comment"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // 5 is locked, and unlocks while the graph is held: its public post opens to anyone.
    app.set_locked(5, true).await;
    let (unlocked_post, _) = app.publish(5, "public once unlocked").await;
    let on_unlocked = comment(&app, 5, &unlocked_post, None).await.1["comment"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let held = crate::helpers::hold_open_follow(&app).await;
    app.set_locked(5, false).await;
    assert_eq!(app.command("follow", 2, 1).await.0, StatusCode::OK);
    assert_eq!(app.command("follow", 2, 3).await.0, StatusCode::OK);
    assert_eq!(
        app.command("follow_requests/approve", 3, 2).await.0,
        StatusCode::OK
    );
    // A stranger is still refused, whatever lags.
    for (what, status, body) in every_engagement_command(&app, 4, &restricted, &on_restricted).await
    {
        assert_eq!(
            (what, status, code(&body)),
            (what, StatusCode::NOT_FOUND, "NOT_FOUND")
        );
    }
    let engaged = [
        (2, &restricted, &on_restricted),
        (2, &locked_post, &on_locked),
        (6, &unlocked_post, &on_unlocked),
    ];
    for (reader, post, on) in engaged {
        for (what, status, body) in every_engagement_command(&app, reader, post, on).await {
            assert!(status.is_success(), "{what} on {post}: {status} {body}");
        }
    }
    held.rollback().await.unwrap();
    assert_verified(&app).await;
}

/// The same defect as it showed in the demo: a follower engages with a followers-only post
/// just after it is published, ten times over, while the projectors and the graph catch up.
#[tokio::test]
async fn engagement_racing_its_posts_publication_is_never_refused_to_a_follower() {
    let app = spawn_app().await;
    for round in 0..10i64 {
        let (author, reader) = (10 + 2 * round, 11 + 2 * round);
        assert_eq!(
            app.command("follow", reader, author).await.0,
            StatusCode::OK
        );
        let (status, body) = app
            .post_with(
                author,
                json!({"content": "just out", "visibility": "followers"}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
        let post = body["post"]["id"].as_str().unwrap().to_owned();
        let (like, commented) = tokio::join!(
            post_as(&app, reader, format!("/api/v1/posts/{post}/like")),
            comment(&app, reader, &post, None)
        );
        assert_eq!(like.0, StatusCode::OK, "round {round}: {}", like.1);
        assert_eq!(
            commented.0,
            StatusCode::CREATED,
            "round {round}: {}",
            commented.1
        );
    }
}
