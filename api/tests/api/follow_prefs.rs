//! Per-follow preferences (issue 44), given/when/then over HTTP: `show_reposts` and `notify`
//! on a follow, changed by following again (an omitted one kept), private to the follower,
//! carried through a follow request's approval, ended by an unfollow; `show_reposts` decides
//! whether the followee's reposts reach the follower's feed.

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_verified, spawn_app, TestApp};

/// `a` follows `b` with `body`'s preferences; the answer.
async fn follow(app: &TestApp, a: i64, b: i64, prefs: Value) -> Value {
    let mut body = json!({ "target": b });
    for (key, value) in prefs.as_object().unwrap() {
        body[key] = value.clone();
    }
    let (status, body) = app.post_as(a, "/api/v1/relation/follow", body).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// `(show_reposts, notify)` of a relation.
fn prefs(relation: &Value) -> (bool, bool) {
    let flag = |key: &str| relation[key].as_bool().expect("a flag");
    (flag("show_reposts"), flag("notify"))
}

/// `from`'s relation to `to` as `asker` sees it once `at` is folded (`None`: no token).
async fn status(app: &TestApp, asker: Option<i64>, (from, to): (i64, i64), at: &str) -> Value {
    let path = format!("/api/v1/relation/status?from={from}&to={to}&min_position={at}");
    let (code, body) = match asker {
        Some(asker) => app.get_as(asker, &path).await,
        None => app.get(&path).await,
    };
    assert_eq!(code, StatusCode::OK, "{body}");
    body
}

/// `reader`'s feed once `at` is folded: the posts' ids.
async fn feed(app: &TestApp, reader: i64, at: &str) -> Vec<String> {
    let path = format!("/api/v1/feed?min_position={at}");
    let (code, page) = app.get_as(reader, &path).await;
    assert_eq!(code, StatusCode::OK, "{page}");
    let items = page["items"].as_array().unwrap().iter();
    items
        .map(|p| p["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn preferences_are_set_changed_kept_private_and_ended_by_an_unfollow() {
    let app = spawn_app().await;
    // Given 1 follows 2 hiding their reposts, when 2 reposts 3's post, then 1's feed lacks it.
    let answer = follow(&app, 1, 2, json!({ "show_reposts": false })).await;
    assert_eq!(prefs(&answer["relation"]), (false, false), "{answer}");
    let (post, _) = app.publish(3, "travel far").await;
    let path = format!("/api/v1/posts/{post}/repost");
    let (code, reposted) = app.post_as(2, &path, json!({})).await;
    assert_eq!(code, StatusCode::OK, "{reposted}");
    let at = reposted["position"].as_str().unwrap();
    assert_eq!(feed(&app, 1, at).await, Vec::<String>::new());
    // Private: the follower sees them with their own token; nobody else does.
    assert_eq!(
        prefs(&status(&app, Some(1), (1, 2), at).await),
        (false, false)
    );
    let anonymous = status(&app, None, (1, 2), at).await;
    assert_eq!(prefs(&anonymous), (false, false));
    let defaults_hidden = status(&app, Some(2), (1, 2), at).await;
    assert_eq!(prefs(&defaults_hidden), (false, false));
    // When 1 follows again with notify, then it changes only that; show_reposts is kept.
    let answer = follow(&app, 1, 2, json!({ "notify": true })).await;
    assert_eq!(answer["changed"], json!(true), "{answer}");
    assert_eq!(prefs(&answer["relation"]), (false, true));
    // The same values again change nothing.
    let again = follow(&app, 1, 2, json!({ "notify": true, "show_reposts": false })).await;
    assert_eq!(again["changed"], json!(false), "{again}");
    // When show_reposts is switched back on, then 2's repost is in 1's feed.
    let answer = follow(&app, 1, 2, json!({ "show_reposts": true })).await;
    let at = answer["position"].as_str().unwrap();
    assert_eq!(
        prefs(&status(&app, Some(1), (1, 2), at).await),
        (true, true)
    );
    assert_eq!(feed(&app, 1, at).await, vec![post.clone()]);
    // The archive holds them beside the follow.
    let (code, _, archive) = crate::erasure::archive(&app, 1).await;
    assert_eq!(code, StatusCode::OK);
    let following: Vec<&Value> = archive
        .iter()
        .filter(|l| l["kind"] == "following")
        .collect();
    assert_eq!(following.len(), 1, "{archive:?}");
    assert_eq!(prefs(following[0]), (true, true));
    // When 1 unfollows and follows again, then the follow starts from the defaults.
    let (code, body) = app.command("unfollow", 1, 2).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(
        prefs(&body["relation"]),
        (false, false),
        "no follow, no preferences"
    );
    let answer = follow(&app, 1, 2, json!({})).await;
    assert_eq!(prefs(&answer["relation"]), (true, false), "{answer}");
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_requests_preferences_are_the_approved_follows() {
    let app = spawn_app().await;
    app.set_locked(2, true).await;
    // Given 1 asks to follow locked 2 hiding their reposts and asking to be notified.
    let asked = follow(&app, 1, 2, json!({ "show_reposts": false, "notify": true })).await;
    assert_eq!(asked["relation"]["requested"], json!(true), "{asked}");
    // A pending request's show once it is a follow; following again changes nothing.
    assert_eq!(prefs(&asked["relation"]), (false, false));
    let again = follow(&app, 1, 2, json!({ "notify": false })).await;
    assert_eq!(again["changed"], json!(false), "{again}");
    // When 2 approves, then the follow has them.
    let (code, approved) = app.command("follow_requests/approve", 2, 1).await;
    assert_eq!(code, StatusCode::OK, "{approved}");
    let at = approved["position"].as_str().unwrap();
    let relation = status(&app, Some(1), (1, 2), at).await;
    assert_eq!(relation["following"], json!(true), "{relation}");
    assert_eq!(prefs(&relation), (false, true));
    // And the replica answers the same as PostgreSQL (no min_position: memory when loaded).
    let (_, from_memory) = app.get_as(1, "/api/v1/relation/status?from=1&to=2").await;
    assert_eq!(prefs(&from_memory), (false, true), "{from_memory}");
    assert_verified(&app).await;
}
