//! Bookmarks (issue 46) over HTTP against the real services: the command's answers and
//! repeats, its refusals in SPEC's order, `bookmarked` on `Post` for the bookmarking reader
//! alone, the list newest first with its cursor and each post judged at the moment of reading
//! (a block, an unfollow, a deletion; back once readable again), privacy (no count, no
//! notification), erasure and the archive, and a retry under its key.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_verified, code, projector_reached, read, spawn_app, TestApp};

/// `POST /api/v1/posts/{post}/{verb}` (`bookmark` or `unbookmark`) as `user`.
async fn mark(app: &TestApp, user: i64, post: &str, verb: &str) -> (StatusCode, Value) {
    app.post_as(user, &format!("/api/v1/posts/{post}/{verb}"), json!({}))
        .await
}

/// [`mark`], answered 200 with a change; its position.
async fn marked(app: &TestApp, user: i64, post: &str, verb: &str) -> String {
    let (status, body) = mark(app, user, post, verb).await;
    assert_eq!(status, StatusCode::OK, "{verb} of {post} by {user}: {body}");
    assert_eq!(body["changed"], json!(true), "{body}");
    position(&body)
}

/// Publishes as `author` with `visibility`; the post's id.
async fn publish(app: &TestApp, author: i64, visibility: &str) -> String {
    let body = json!({ "content": "worth keeping", "visibility": visibility });
    let (status, body) = app.post_with(author, body).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    body["post"]["id"].as_str().unwrap().to_owned()
}

fn position(body: &Value) -> String {
    body["position"].as_str().expect("a position").to_owned()
}

/// A relation command that must succeed; its position.
async fn relation(app: &TestApp, verb: &str, actor: i64, target: i64) -> String {
    let (status, body) = app.command(verb, actor, target).await;
    assert_eq!(status, StatusCode::OK, "{verb} {actor} -> {target}: {body}");
    position(&body)
}

/// A page of `user`'s bookmarks (`query`: extra parameters), once `at` is folded: the posts'
/// ids, and the next cursor.
async fn bookmarks(app: &TestApp, user: i64, query: &str, at: &str) -> (Vec<String>, Value) {
    let path = format!("/api/v1/me/bookmarks?min_position={at}{query}");
    let (status, page) = app.get_as(user, &path).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let items = page["items"].as_array().unwrap();
    for item in items {
        assert_eq!(item["bookmarked"], json!(true), "{item}");
    }
    let ids = items.iter().map(|p| p["id"].as_str().unwrap().to_owned());
    (ids.collect(), page["next_cursor"].clone())
}

/// `post` as `viewer` (none: anonymous) reads it on its author's timeline, once `at` is
/// folded.
async fn seen(app: &TestApp, viewer: Option<i64>, author: i64, post: &str, at: &str) -> Value {
    let path = format!("/api/v1/users/{author}/posts?min_position={at}");
    let (status, page) = match viewer {
        Some(viewer) => app.get_as(viewer, &path).await,
        None => app.get(&path).await,
    };
    assert_eq!(status, StatusCode::OK, "{page}");
    let items = page["items"].as_array().unwrap();
    items.iter().find(|p| p["id"] == post).unwrap().clone()
}

fn refused(answer: (StatusCode, Value)) -> (StatusCode, String) {
    (answer.0, code(&answer.1).to_owned())
}

/// How many events the log holds of `bookmark` streams.
async fn bookmark_events(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM events WHERE aggregate_type = 'bookmark'")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_bookmark_toggles_repeats_change_nothing_and_shows_to_its_bookmarker_alone() {
    let app = spawn_app().await;
    relation(&app, "follow", 2, 1).await;
    let post = publish(&app, 1, "public").await;
    // Given a readable public post, when 2 bookmarks it twice, then the second changes nothing.
    let at = marked(&app, 2, &post, "bookmark").await;
    let (status, again) = mark(&app, 2, &post, "bookmark").await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(
        (&again["changed"], &again["bookmarked"], &again["position"]),
        (&json!(false), &json!(true), &Value::Null)
    );
    // `bookmarked` answers the bookmarking reader only: false to another, absent without a
    // token; and no count shows it to anyone.
    let mine = seen(&app, Some(2), 1, &post, &at).await;
    assert_eq!(mine["bookmarked"], json!(true), "{mine}");
    let theirs = seen(&app, Some(3), 1, &post, &at).await;
    assert_eq!(theirs["bookmarked"], json!(false), "{theirs}");
    let anonymous = seen(&app, None, 1, &post, &at).await;
    assert!(anonymous.get("bookmarked").is_none(), "{anonymous}");
    // The feed shows it so too (a first page from the replica's memory when it can answer).
    let (status, feed) = app
        .get_as(2, &format!("/api/v1/feed?min_position={at}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{feed}");
    assert_eq!(feed["items"][0]["id"], json!(post), "{feed}");
    assert_eq!(feed["items"][0]["bookmarked"], json!(true), "{feed}");
    assert!(
        mine.as_object()
            .unwrap()
            .keys()
            .all(|k| !k.contains("bookmark_")),
        "no count: {mine}"
    );
    // One may bookmark one's own post; nobody is notified of a bookmark.
    let at = marked(&app, 1, &post, "bookmark").await;
    let path = format!("/api/v1/notifications?min_position={at}");
    let (status, notifications) = app.get_as(1, &path).await;
    assert_eq!(status, StatusCode::OK, "{notifications}");
    let kinds: Vec<&Value> = notifications["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| &n["type"])
        .collect();
    assert_eq!(
        kinds,
        vec![&json!("followed")],
        "2's follow alone: {notifications}"
    );
    // An unbookmark takes it back once; an unbookmark of nothing changes nothing.
    let at = marked(&app, 2, &post, "unbookmark").await;
    let (_, nothing) = mark(&app, 2, &post, "unbookmark").await;
    assert_eq!(
        (
            &nothing["changed"],
            &nothing["bookmarked"],
            &nothing["position"]
        ),
        (&json!(false), &json!(false), &Value::Null)
    );
    let (_, never) = mark(&app, 3, &post, "unbookmark").await;
    assert_eq!(never["changed"], json!(false));
    assert_eq!(
        seen(&app, Some(2), 1, &post, &at).await["bookmarked"],
        json!(false)
    );
    assert_eq!(
        bookmark_events(&app).await,
        3,
        "two bookmarks and an unbookmark"
    );
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_bookmark_is_refused_where_the_caller_may_not_read_or_a_block_stands() {
    let app = spawn_app().await;
    let public = publish(&app, 1, "public").await;
    // A followers-only post: 404 to a stranger, who may not read it; a follower may.
    let only = publish(&app, 1, "followers").await;
    assert_eq!(
        refused(mark(&app, 3, &only, "bookmark").await),
        (StatusCode::NOT_FOUND, "NOT_FOUND".into())
    );
    relation(&app, "follow", 4, 1).await;
    marked(&app, 4, &only, "bookmark").await;
    // A block either way is 403 BLOCKED, whoever blocked whom, and changes nothing.
    relation(&app, "block", 1, 5).await;
    relation(&app, "block", 6, 1).await;
    for user in [5, 6] {
        for verb in ["bookmark", "unbookmark"] {
            assert_eq!(
                refused(mark(&app, user, &public, verb).await),
                (StatusCode::FORBIDDEN, "BLOCKED".into()),
                "{verb} by {user}"
            );
        }
    }
    // Unknown and malformed ids are 404; an unauthenticated call 401.
    let unknown = uuid::Uuid::now_v7();
    for id in [unknown.to_string(), "not-an-id".to_owned()] {
        assert_eq!(
            refused(mark(&app, 2, &id, "bookmark").await).0,
            StatusCode::NOT_FOUND
        );
    }
    let anonymous = app
        .client
        .post(format!("{}/api/v1/posts/{public}/bookmark", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    let at = relation(&app, "follow", 8, 9).await;
    for user in [3, 5, 6] {
        assert_eq!(bookmarks(&app, user, "", &at).await.0, Vec::<String>::new());
    }
    assert_eq!(
        bookmark_events(&app).await,
        1,
        "the follower's bookmark alone"
    );
    assert_verified(&app).await;
}

#[tokio::test]
async fn the_list_is_newest_bookmark_first_and_pages_with_its_cursor() {
    let app = spawn_app().await;
    let mut posts = Vec::new();
    for _ in 0..3 {
        posts.push(publish(&app, 1, "public").await);
    }
    let (p1, p2, p3) = (&posts[0], &posts[1], &posts[2]);
    // Bookmarked in another order than published: the list follows the bookmarks' times.
    for post in [p2, p1, p3] {
        marked(&app, 2, post, "bookmark").await;
    }
    // A bookmark taken back and made again moves up.
    marked(&app, 2, p2, "unbookmark").await;
    let at = marked(&app, 2, p2, "bookmark").await;
    let (all, end) = bookmarks(&app, 2, "", &at).await;
    assert_eq!(all, vec![p2.clone(), p3.clone(), p1.clone()]);
    assert_eq!(end, Value::Null);
    let (first, cursor) = bookmarks(&app, 2, "&limit=2", &at).await;
    assert_eq!(first, vec![p2.clone(), p3.clone()]);
    let cursor = cursor
        .as_str()
        .expect("a cursor after a full page")
        .to_owned();
    let (second, end) = bookmarks(&app, 2, &format!("&limit=2&cursor={cursor}"), &at).await;
    assert_eq!((second, end), (vec![p1.clone()], Value::Null));
    // Bad paging is 400; another user's bookmarks are theirs alone.
    for bad in ["&cursor=x", "&limit=0", "&limit=101"] {
        let path = format!("/api/v1/me/bookmarks?min_position={at}{bad}");
        let (status, body) = app.get_as(2, &path).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    assert_eq!(bookmarks(&app, 3, "", &at).await.0, Vec::<String>::new());
    let (status, _) = app.get("/api/v1/me/bookmarks").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_post_unreadable_now_is_left_out_and_comes_back_once_readable_again() {
    let app = spawn_app().await;
    let public = publish(&app, 1, "public").await;
    let only = publish(&app, 4, "followers").await;
    let doomed = publish(&app, 1, "public").await;
    relation(&app, "follow", 2, 4).await;
    for post in [&public, &only, &doomed] {
        marked(&app, 2, post, "bookmark").await;
    }
    // The followers-only post leaves with the follow; it cannot be unbookmarked meanwhile (an
    // unbookmark is judged as a bookmark), and it comes back with a new follow.
    let at = relation(&app, "unfollow", 2, 4).await;
    let (ids, _) = bookmarks(&app, 2, "", &at).await;
    assert_eq!(ids, vec![doomed.clone(), public.clone()]);
    assert_eq!(
        refused(mark(&app, 2, &only, "unbookmark").await),
        (StatusCode::NOT_FOUND, "NOT_FOUND".into())
    );
    let at = relation(&app, "follow", 2, 4).await;
    let (ids, _) = bookmarks(&app, 2, "", &at).await;
    assert_eq!(ids, vec![doomed.clone(), only.clone(), public.clone()]);
    // A block by the author hides their posts, a page refilled from further down; an unblock
    // brings them back.
    let at = relation(&app, "block", 1, 2).await;
    let (ids, next) = bookmarks(&app, 2, "&limit=1", &at).await;
    assert_eq!(ids, vec![only.clone()]);
    // Past it only a hidden one: the page is the last.
    assert_eq!(next, Value::Null);
    let at = relation(&app, "unblock", 1, 2).await;
    let (ids, _) = bookmarks(&app, 2, "", &at).await;
    assert_eq!(ids, vec![doomed.clone(), only.clone(), public.clone()]);
    // A deletion takes its post out for good.
    let (status, body) = app.delete_post(1, &doomed).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (ids, _) = bookmarks(&app, 2, "", &position(&body)).await;
    assert_eq!(ids, vec![only.clone(), public.clone()]);
    assert_verified(&app).await;
}

#[tokio::test]
async fn an_erasure_takes_the_users_bookmarks_and_the_authors_posts_leave_every_list() {
    let app = spawn_app().await;
    let post = publish(&app, 1, "public").await;
    let other = publish(&app, 5, "public").await;
    for user in [2, 3] {
        marked(&app, user, &post, "bookmark").await;
    }
    let at = marked(&app, 3, &other, "bookmark").await;
    // The archive holds the user's bookmarks.
    projector_reached(&app, "engagement", &at).await;
    let (status, _, lines) = crate::erasure::archive(&app, 3).await;
    assert_eq!(status, StatusCode::OK);
    let kept: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "bookmark").collect();
    assert_eq!(kept.len(), 2, "{lines:#?}");
    assert_eq!(kept[0]["post"], json!(other), "newest first: {kept:#?}");
    assert!(kept.iter().all(|l| l["at"].is_string()));
    // The bookmarking user's erasure takes their rows.
    let (status, body) = app.erase_me(2).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    projector_reached(&app, "engagement", &position(&body)).await;
    let left: Vec<i64> = sqlx::query_scalar("SELECT DISTINCT user_id FROM rm_bookmarks")
        .fetch_all(&app.pool)
        .await
        .unwrap();
    assert_eq!(left, vec![3]);
    // The author's erasure takes the post out of every list.
    let (status, body) = app.erase_me(1).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (ids, _) = bookmarks(&app, 3, "", &position(&body)).await;
    assert_eq!(ids, vec![other]);
    assert_verified(&app).await;
}

/// A bookmark retried under its key is answered as it was, even once the post is no longer
/// the caller's to read (the key's first answer comes before the readability check); a new
/// key is judged afresh.
#[tokio::test]
async fn a_retried_bookmark_is_answered_as_it_was() {
    let app = spawn_app().await;
    relation(&app, "follow", 2, 1).await;
    let post = publish(&app, 1, "followers").await;
    let keyed = |key: &'static str| {
        app.client
            .post(format!("{}/api/v1/posts/{post}/bookmark", app.base))
            .bearer_auth(app.token(2))
            .header("idempotency-key", key)
            .send()
    };
    let first = read(keyed("keep-once").await.unwrap()).await;
    assert_eq!(first.0, StatusCode::OK, "{first:?}");
    let again = keyed("keep-once").await.unwrap();
    assert!(again.headers().contains_key("idempotent-replayed"));
    assert_eq!(read(again).await, first);
    relation(&app, "unfollow", 2, 1).await;
    let retry = keyed("keep-once").await.unwrap();
    assert!(retry.headers().contains_key("idempotent-replayed"));
    assert_eq!(read(retry).await, first);
    let fresh = read(keyed("keep-again").await.unwrap()).await;
    assert_eq!(fresh.0, StatusCode::NOT_FOUND, "{fresh:?}");
    assert_eq!(bookmark_events(&app).await, 1);
    assert_verified(&app).await;
}
