//! Notification policy (issue 47), given/when/then over HTTP against the real services: whose
//! notifications reach a user (`not_following`, `not_followers`: accept, filter or drop; the
//! stricter wins), judged when each is caused against the follows at that moment; the filtered
//! list beside the main one, never unread and never on the live stream; a change of policy
//! changes nothing already kept; verify and a rebuild agree with the log.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_verified, code, relations, spawn_app, TestApp};
use crate::notifications::{like, summary, unread, Summary};

/// `user` sets their policy to `body`: the status and the answer.
pub(crate) async fn set_policy(app: &TestApp, user: i64, body: Value) -> (StatusCode, Value) {
    let path = format!("{}/api/v1/me/notification_policy", app.base);
    let request = app.client.put(path).bearer_auth(app.token(user));
    crate::helpers::read(request.json(&body).send().await.unwrap()).await
}

/// Every group of `user`'s main list, or (`filtered`) of the list beside it, once `at` is
/// folded.
pub(crate) async fn listed(app: &TestApp, user: i64, at: &str, filtered: bool) -> Vec<Value> {
    let path = format!("/api/v1/notifications?limit=100&min_position={at}&filtered={filtered}");
    let (status, page) = app.get_as(user, &path).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page["next_cursor"].is_null(), "{page}");
    page["items"].as_array().unwrap().clone()
}

/// `verb` of `b` by `a`; the position.
async fn relation(app: &TestApp, verb: &str, a: i64, b: i64) -> String {
    let (status, body) = app.command(verb, a, b).await;
    assert_eq!(status, StatusCode::OK, "{verb}: {body}");
    body["position"].as_str().unwrap_or_default().to_owned()
}

fn group(kind: &str, about: &str, count: i64, actors: &[i64]) -> Summary {
    (kind.to_owned(), about.to_owned(), count, actors.to_vec())
}

#[tokio::test]
async fn the_policy_is_set_part_by_part_and_bad_input_changes_nothing() {
    let app = spawn_app().await;
    let (status, body) = set_policy(&app, 1, json!({"not_following": "filter"})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (&body["not_following"], &body["not_followers"]),
        (&json!("filter"), &json!("accept"))
    );
    assert!(body["position"].is_string(), "{body}");
    // An omitted part keeps its value; the same policy again changes nothing.
    let (_, body) = set_policy(&app, 1, json!({"not_followers": "drop"})).await;
    assert_eq!(
        (&body["not_following"], &body["not_followers"]),
        (&json!("filter"), &json!("drop"))
    );
    let events = app.event_count().await;
    let (status, same) = set_policy(&app, 1, json!({"not_following": "filter"})).await;
    assert_eq!((status, &same["position"]), (StatusCode::OK, &Value::Null));
    let (_, empty) = set_policy(&app, 1, json!({})).await;
    assert_eq!(empty["not_followers"], "drop", "{empty}");
    for bad in [
        json!({"not_following": "reject"}),
        json!({"not_followers": null, "other": 1}),
        json!({"not_following": 1}),
    ] {
        let (status, body) = set_policy(&app, 1, bad).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::BAD_REQUEST, "INVALID_INPUT")
        );
    }
    assert_eq!(app.event_count().await, events, "nothing changed");
    let (status, _) = crate::helpers::read(
        app.client
            .put(format!("{}/api/v1/me/notification_policy", app.base))
            .json(&json!({}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn each_notification_is_judged_when_caused_and_the_stricter_rule_wins() {
    let app = spawn_app().await;
    // Given 1 and 2 following each other, 1 following 3, 4 following 1, 5 a stranger; 1's
    // policy: filter whom 1 does not follow, drop who does not follow 1.
    relation(&app, "follow", 1, 2).await;
    relation(&app, "follow", 2, 1).await;
    relation(&app, "follow", 1, 3).await;
    relation(&app, "follow", 4, 1).await;
    let (post, _) = app.publish(1, "policy").await;
    let policy = json!({"not_following": "filter", "not_followers": "drop"});
    let (status, body) = set_policy(&app, 1, policy).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // When each likes 1's post: 2 (both ways) reaches the list; 3 (followed, not a follower)
    // is dropped; 4 (a follower, not followed) is filtered; 5 (neither) is dropped: the
    // stricter of the two rules.
    for user in [2, 3, 4, 5] {
        like(&app, user, &format!("posts/{post}"), "like").await;
    }
    // And 5 follows 1: a follower at that moment, so only `not_following` applies: filtered.
    let at = relation(&app, "follow", 5, 1).await;
    // (2's and 4's follows came before the policy: they stay as they were kept.)
    let main = summary(&listed(&app, 1, &at, false).await);
    let before = group("followed", "", 2, &[4, 2]);
    assert_eq!(main, vec![group("liked_post", &post, 1, &[2]), before]);
    let filtered = listed(&app, 1, &at, true).await;
    let kinds = summary(&filtered);
    assert_eq!(
        kinds,
        vec![
            group("followed", "", 1, &[5]),
            group("liked_post", &post, 1, &[4])
        ]
    );
    assert!(
        filtered.iter().all(|g| g["unread"] == false),
        "{filtered:?}"
    );
    assert_eq!(
        unread(&app, 1, &at).await,
        2,
        "the filtered list is never unread"
    );
    // When 1 accepts everyone again: what was kept stays where it was; 3's like of another
    // post now reaches the list.
    let (_, body) = set_policy(
        &app,
        1,
        json!({"not_following": "accept", "not_followers": "accept"}),
    )
    .await;
    assert!(body["position"].is_string(), "{body}");
    let (other, _) = app.publish(1, "after").await;
    let at = like(&app, 3, &format!("posts/{other}"), "like").await;
    let main = summary(&listed(&app, 1, &at, false).await);
    assert_eq!(main[0], group("liked_post", &other, 1, &[3]));
    assert_eq!(main.len(), 3, "{main:?}");
    assert_eq!(summary(&listed(&app, 1, &at, true).await), kinds);
    // An undo takes a filtered notification as it takes any: 4's unlike.
    let at = like(&app, 4, &format!("posts/{post}"), "unlike").await;
    let filtered = summary(&listed(&app, 1, &at, true).await);
    assert_eq!(filtered, vec![group("followed", "", 1, &[5])]);
    // Then every reader agrees with the log: verify, and a rebuild that judges the same.
    assert_verified(&app).await;
    relations(&app, &["rebuild", "notifications"]);
    assert_verified(&app).await;
    assert_eq!(summary(&listed(&app, 1, &at, true).await), filtered);
    assert_eq!(summary(&listed(&app, 1, &at, false).await), main);
}

#[tokio::test]
async fn an_approval_counts_as_the_follow_it_brings() {
    let app = spawn_app().await;
    // Given 2 locked, and 1 filtering whom they do not follow: 1 asks to follow 2.
    app.set_locked(2, true).await;
    set_policy(&app, 1, json!({"not_following": "filter"})).await;
    relation(&app, "follow", 1, 2).await;
    // When 2 approves, then 1 is told in the main list: they follow 2 from that approval.
    let at = relation(&app, "follow_requests/approve", 2, 1).await;
    let main = summary(&listed(&app, 1, &at, false).await);
    assert_eq!(main, vec![group("follow_request_approved", "", 1, &[2])]);
    assert!(listed(&app, 1, &at, true).await.is_empty());
    assert_verified(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filtered_notification_never_reaches_the_live_stream() {
    use std::time::Duration;
    let app = spawn_app().await;
    // Given 1 follows 2 and filters whom they do not follow, with their stream open.
    relation(&app, "follow", 1, 2).await;
    let (post, _) = app.publish(1, "live").await;
    set_policy(&app, 1, json!({"not_following": "filter"})).await;
    let token = app.token(1);
    let path = "/api/v1/notifications/stream";
    let mut stream = crate::stream::Reader::open(&app, path, &token, None).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // When 3 (not followed) likes the post, then 2 (followed): only 2's is sent.
    like(&app, 3, &format!("posts/{post}"), "like").await;
    let liked = like(&app, 2, &format!("posts/{post}"), "like").await;
    let sse = stream
        .next(Duration::from_secs(10))
        .await
        .expect("an event");
    assert_eq!(sse.id.as_deref(), Some(liked.as_str()), "{:?}", sse.data);
    assert_eq!(sse.data["actor"], 2);
    let filtered = summary(&listed(&app, 1, &liked, true).await);
    assert_eq!(filtered, vec![group("liked_post", &post, 1, &[3])]);
}

#[tokio::test]
async fn an_erasure_forgets_the_policy_and_what_it_filtered() {
    let app = spawn_app().await;
    // Given 1 filtering strangers, with a filtered like kept.
    let (post, _) = app.publish(1, "mine").await;
    set_policy(&app, 1, json!({"not_following": "filter"})).await;
    let at = like(&app, 2, &format!("posts/{post}"), "like").await;
    assert_eq!(listed(&app, 1, &at, true).await.len(), 1);
    // When 1 is erased, then nothing of theirs is left, and verify agrees with the log.
    let (status, body) = app.erase_me(1).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let at = body["position"].as_str().unwrap().to_owned();
    crate::helpers::projector_reached(&app, "notifications", &at).await;
    let left: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM notify_policies WHERE user_id = 1)
              + (SELECT count(*) FROM notify_groups WHERE recipient = 1)",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(left, 0);
    assert_verified(&app).await;
}
