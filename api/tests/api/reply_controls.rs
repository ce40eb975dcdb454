//! Reply controls (issue 47), given/when/then over HTTP against the real services: who may
//! comment on a post or reply under it, by its `comment_policy`; the author's changes of it
//! (comments made before stay); `comment_policy` on `Post` from PostgreSQL and from memory; a
//! comment raced against a policy change and against an unfollow; the log's other readers.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::engagement::comment;
use crate::helpers::{assert_verified, code, relations, spawn_app, TestApp};

/// `user` sets who may comment on `post`: the status and the answer.
async fn set_policy(app: &TestApp, user: i64, post: &str, policy: Value) -> (StatusCode, Value) {
    let path = format!("{}/api/v1/posts/{post}/comment_policy", app.base);
    let request = app.client.put(path).bearer_auth(app.token(user));
    let body = json!({ "comment_policy": policy });
    crate::helpers::read(request.json(&body).send().await.unwrap()).await
}

/// `author` publishes a post open to comments by `policy`: its id and the answer.
async fn publish(app: &TestApp, author: i64, policy: &str) -> (String, Value) {
    let body = json!({"content": format!("open to {policy}"), "comment_policy": policy});
    let (status, answer) = app.post_with(author, body).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    (answer["post"]["id"].as_str().unwrap().to_owned(), answer)
}

/// `verb` of `b` by `a`; the position.
async fn relation(app: &TestApp, verb: &str, a: i64, b: i64) -> String {
    let (status, body) = app.command(verb, a, b).await;
    assert_eq!(status, StatusCode::OK, "{verb}: {body}");
    body["position"].as_str().unwrap_or_default().to_owned()
}

/// Post `id` in `author`'s timeline, as `reader` sees it once `at` is folded.
async fn shown(app: &TestApp, reader: i64, author: i64, at: &str, id: &str) -> Value {
    let path = format!("/api/v1/users/{author}/posts?min_position={at}");
    let (status, page) = app.get_as(reader, &path).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let items = page["items"].as_array().unwrap();
    items.iter().find(|p| p["id"] == id).unwrap().clone()
}

/// A position's (transaction, place in the log).
fn place(answer: &Value) -> (i64, i64) {
    let position = answer["position"].as_str().unwrap();
    let (xid, at) = position.split_once('.').unwrap();
    (xid.parse().unwrap(), at.parse().unwrap())
}

#[tokio::test]
async fn each_policy_lets_in_whom_it_names_for_comments_and_replies_alike() {
    let app = spawn_app().await;
    // Given 1 the author, 2 who follows 1, 3 whom 1 follows, 4 a stranger.
    relation(&app, "follow", 2, 1).await;
    relation(&app, "follow", 1, 3).await;
    // (policy, who may comment among [1, 2, 3, 4])
    let table = [
        ("everyone", [true, true, true, true]),
        ("followers", [true, true, false, false]),
        ("following", [true, false, true, false]),
        ("nobody", [true, false, false, false]),
    ];
    for (policy, allowed) in table {
        let (post, answer) = publish(&app, 1, policy).await;
        assert_eq!(answer["post"]["comment_policy"], policy, "{answer}");
        // The author's own comment, which the others reply to.
        let (status, own) = comment(&app, 1, &post, None).await;
        assert_eq!(status, StatusCode::CREATED, "{own}");
        let parent = own["comment"]["id"].as_str().unwrap().to_owned();
        for (user, allowed) in (1..=4).zip(allowed) {
            for parent in [None, Some(parent.as_str())] {
                let before = app.event_count().await;
                let (status, body) = comment(&app, user, &post, parent).await;
                if allowed {
                    assert_eq!(status, StatusCode::CREATED, "{policy} {user}: {body}");
                } else {
                    let refused = (status, code(&body));
                    let expected = (StatusCode::FORBIDDEN, "COMMENTS_RESTRICTED");
                    assert_eq!(refused, expected, "{policy} {user} {parent:?}: {body}");
                    assert_eq!(app.event_count().await, before, "a refusal changes nothing");
                }
            }
        }
        let at = answer["position"].as_str().unwrap();
        let seen = shown(&app, 4, 1, at, &post).await;
        assert_eq!(seen["comment_policy"], policy, "{seen}");
    }
    // A post that says nothing is open to everyone, and shows it.
    let (post, _) = app.publish(1, "plain").await;
    let (status, body) = comment(&app, 4, &post, None).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let seen = shown(&app, 4, 1, body["position"].as_str().unwrap(), &post).await;
    assert_eq!(seen["comment_policy"], "everyone");
    // A block still answers BLOCKED first, and an unknown policy is 400.
    relation(&app, "block", 1, 4).await;
    let (post, _) = publish(&app, 1, "nobody").await;
    let (status, body) = comment(&app, 4, &post, None).await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "BLOCKED"));
    let bad = json!({"content": "x", "comment_policy": "friends"});
    let (status, body) = app.post_with(1, bad).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "INVALID_INPUT")
    );
}

#[tokio::test]
async fn only_the_author_changes_the_policy_and_comments_made_before_stay() {
    let app = spawn_app().await;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let graph = crate::feed_model::replica(&app, &shutdown);
    relation(&app, "follow", 2, 1).await;
    let (post, _) = publish(&app, 1, "everyone").await;
    let (status, before) = comment(&app, 3, &post, None).await;
    assert_eq!(status, StatusCode::CREATED, "{before}");
    // Someone else's post: 403; an unknown one 404; an unknown policy 400; each changes
    // nothing.
    let events = app.event_count().await;
    let (status, body) = set_policy(&app, 2, &post, json!("nobody")).await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "NOT_AUTHOR"));
    let unknown = "0190f5a2-7b6c-7def-8123-456789abcdef";
    let (status, _) = set_policy(&app, 1, unknown, json!("nobody")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    for bad in [json!("anyone"), json!(null), json!(3)] {
        let (status, body) = set_policy(&app, 1, &post, bad).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::BAD_REQUEST, "INVALID_INPUT")
        );
    }
    let (status, same) = set_policy(&app, 1, &post, json!("everyone")).await;
    assert_eq!((status, &same["changed"]), (StatusCode::OK, &json!(false)));
    assert_eq!(app.event_count().await, events);
    // When 1 lets only followers in: 3's new comment is refused, 2's accepted, 3's old stays.
    let (status, changed) = set_policy(&app, 1, &post, json!("followers")).await;
    assert_eq!(
        (status, &changed["changed"]),
        (StatusCode::OK, &json!(true))
    );
    let (status, body) = comment(&app, 3, &post, None).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "COMMENTS_RESTRICTED")
    );
    let (status, body) = comment(&app, 2, &post, None).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let at = body["position"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/posts/{post}/comments?min_position={at}");
    let (status, comments) = app.get_as(3, &path).await;
    assert_eq!(status, StatusCode::OK, "{comments}");
    let authors: Vec<&Value> = comments["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["author"])
        .collect();
    assert!(
        authors.contains(&&json!(3)) && authors.contains(&&json!(2)),
        "{comments}"
    );
    // Then the post shows the policy: from PostgreSQL, in the follower's first page from
    // memory, and after a rebuild; every reader agrees with the log.
    assert_eq!(
        shown(&app, 3, 1, &at, &post).await["comment_policy"],
        "followers"
    );
    crate::helpers::replica_reached(&graph, &at).await;
    let page = crate::feed_model::home_from_memory(&graph, 2, 10);
    let held = page.iter().find(|p| p.id.to_string() == post).unwrap();
    assert_eq!(held.comment_policy.as_str(), "followers");
    shutdown.cancel();
    assert_verified(&app).await;
    relations(&app, &["rebuild", "feed"]);
    assert_verified(&app).await;
    assert_eq!(
        shown(&app, 3, 1, &at, &post).await["comment_policy"],
        "followers"
    );
    let (status, _, archive) = crate::erasure::archive(&app, 1).await;
    assert_eq!(status, StatusCode::OK);
    let mine = archive
        .iter()
        .find(|r| r["kind"] == "post" && r["id"] == post.as_str());
    assert_eq!(mine.unwrap()["comment_policy"], "followers");
}

#[tokio::test]
async fn a_comment_never_passes_a_policy_change_or_an_unfollow() {
    let app = spawn_app().await;
    relation(&app, "follow", 2, 1).await;
    for round in 0..6 {
        // Given 1's post open to followers, which 2 is; when 2 comments as 1 closes it (even
        // rounds) or as 2 unfollows 1 (odd rounds), at once.
        let (post, _) = publish(&app, 1, "followers").await;
        let (change, said) = match round % 2 {
            0 => {
                let close = set_policy(&app, 1, &post, json!("nobody"));
                let (closed, said) = tokio::join!(close, comment(&app, 2, &post, None));
                (closed, said)
            }
            _ => {
                let unfollow = app.command("unfollow", 2, 1);
                let (unfollowed, said) = tokio::join!(unfollow, comment(&app, 2, &post, None));
                (unfollowed, said)
            }
        };
        assert_eq!(change.0, StatusCode::OK, "{}", change.1);
        let (status, body) = said;
        let events = app.events().await;
        let commented = events
            .iter()
            .any(|(t, d)| t == "CommentAdded" && d[t]["post_id"] == post.as_str());
        // Then a comment accepted was decided before the change: its transaction's events
        // went in first (the post stream's lock, or the pair's, orders the two); a refused
        // one left nothing in the log.
        match status {
            StatusCode::CREATED => {
                let (said, changed) = (place(&body), place(&change.1));
                assert!(
                    said.1 < changed.1,
                    "round {round}: {body} before {}",
                    change.1
                );
                assert!(commented);
            }
            _ => {
                assert_eq!(code(&body), "COMMENTS_RESTRICTED", "round {round}: {body}");
                assert!(!commented, "{body}");
            }
        }
        if round % 2 == 1 {
            relation(&app, "follow", 2, 1).await;
        }
    }
}
