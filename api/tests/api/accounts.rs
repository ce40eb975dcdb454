//! Token revocation, logout and bans (SPEC.md "Token revocation"), over HTTP.

use std::time::{Duration, Instant};

use relations_domain::TokenStamp;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{assert_verified, code, read, spawn_app, spawn_with, user, TestApp};

fn stamped(app: &TestApp, id: i64, client: &str, ver: i64, bat: i64) -> String {
    let stamp = TokenStamp {
        client: client.into(),
        ver,
        bat,
    };
    app.jwt
        .issue_stamped(user(id), false, Duration::from_secs(600), Some(&stamp))
        .unwrap()
}

async fn admin_post(app: &TestApp, path: &str, body: Value) -> (StatusCode, Value) {
    read(
        app.client
            .post(format!("{}{path}", app.base))
            .bearer_auth(app.admin_token(1))
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// A command and a public query with `token`: their statuses.
async fn try_token(app: &TestApp, token: &str) -> (StatusCode, StatusCode) {
    let command = app
        .client
        .post(format!("{}/api/v1/relation/follow", app.base))
        .bearer_auth(token)
        .json(&json!({ "target": 999 }))
        .send()
        .await
        .unwrap()
        .status();
    let query = app
        .client
        .get(format!("{}/api/v1/users/999/counts", app.base))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status();
    (command, query)
}

/// Waits until this instance's graph has folded `position` (every check reads it).
async fn applied(app: &TestApp, position: &Value) {
    let at = position.as_str().expect("a position");
    let (status, body) = app
        .get(&format!(
            "/api/v1/relation/status?from=1&to=2&min_position={at}"
        ))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

const OK: (StatusCode, StatusCode) = (StatusCode::OK, StatusCode::OK);
const REVOKED: (StatusCode, StatusCode) = (StatusCode::UNAUTHORIZED, StatusCode::UNAUTHORIZED);

#[tokio::test]
async fn revocations_refuse_tokens_by_client_version_and_by_batch() {
    let app = spawn_app().await;
    let phone_2 = stamped(&app, 7, "phone", 2, 1);
    let web_1 = stamped(&app, 7, "web", 1, 1);
    let phone_3 = stamped(&app, 7, "phone", 3, 2);
    for token in [&phone_2, &web_1, &phone_3] {
        assert_eq!(try_token(&app, token).await, OK);
    }
    let (status, body) = admin_post(
        &app,
        "/api/v1/admin/users/7/revoke",
        json!({"client": "phone", "up_to": 2}),
    )
    .await;
    assert_eq!(
        (status, &body["changed"]),
        (StatusCode::OK, &json!(true)),
        "{body}"
    );
    applied(&app, &body["position"]).await;
    assert_eq!(try_token(&app, &phone_2).await, REVOKED);
    let (_, refused) = read(
        app.client
            .get(format!("{}/api/v1/users/1/counts", app.base))
            .bearer_auth(&phone_2)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(code(&refused), "TOKEN_REVOKED");
    assert_eq!(try_token(&app, &web_1).await, OK);
    assert_eq!(try_token(&app, &phone_3).await, OK);
    // Revocations only grow.
    let (status, body) = admin_post(
        &app,
        "/api/v1/admin/users/7/revoke",
        json!({"client": "phone", "up_to": 1}),
    )
    .await;
    assert_eq!(
        (status, body),
        (StatusCode::OK, json!({"changed": false, "position": null}))
    );
    // Every token of batch 1 or older.
    let (_, body) = admin_post(
        &app,
        "/api/v1/admin/users/7/revoke",
        json!({"client": null, "up_to": 1}),
    )
    .await;
    applied(&app, &body["position"]).await;
    assert_eq!(try_token(&app, &web_1).await, REVOKED);
    assert_eq!(try_token(&app, &phone_3).await, OK);
    // Only admins revoke; bad input is 400, a bad id 404.
    let (status, _) = read(
        app.client
            .post(format!("{}/api/v1/admin/users/7/revoke", app.base))
            .bearer_auth(app.token(8))
            .json(&json!({"up_to": 9}))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = admin_post(&app, "/api/v1/admin/users/7/revoke", json!({"up_to": "x"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = admin_post(&app, "/api/v1/admin/users/x/revoke", json!({"up_to": 1})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn logout_refuses_the_callers_client_up_to_its_version() {
    let app = spawn_app().await;
    let tab_5 = stamped(&app, 9, "tablet", 5, 0);
    let tab_6 = stamped(&app, 9, "tablet", 6, 0);
    let other = stamped(&app, 9, "desktop", 1, 0);
    let (status, body) = read(
        app.client
            .post(format!("{}/api/v1/me/logout", app.base))
            .bearer_auth(&tab_5)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(
        (status, &body["changed"]),
        (StatusCode::OK, &json!(true)),
        "{body}"
    );
    applied(&app, &body["position"]).await;
    assert_eq!(try_token(&app, &tab_5).await, REVOKED);
    assert_eq!(try_token(&app, &tab_6).await, OK);
    assert_eq!(try_token(&app, &other).await, OK);
}

/// Reader 6's first feed page, as post ids, once the feed has applied `at`.
async fn feed(app: &TestApp, at: String) -> Vec<String> {
    let (_, page) = app
        .get_as(6, &format!("/api/v1/feed?min_position={at}"))
        .await;
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_ban_refuses_every_request_and_hides_posts_until_unbanned() {
    let app = spawn_app().await;
    let (post, _) = app.publish(5, "before the ban").await;
    app.command("follow", 6, 5).await;
    let (_, body) = app.command("follow", 6, 4).await;
    let at = body["position"].as_str().unwrap().to_owned();
    assert_eq!(feed(&app, at.clone()).await, vec![post.clone()]);
    let revoked = stamped(&app, 5, "phone", 1, 0);
    let (_, body) = admin_post(
        &app,
        "/api/v1/admin/users/5/revoke",
        json!({"client": "phone", "up_to": 1}),
    )
    .await;
    applied(&app, &body["position"]).await;
    let (status, body) = admin_post(&app, "/api/v1/admin/users/5/ban", json!({})).await;
    assert_eq!(
        (status, &body["changed"]),
        (StatusCode::OK, &json!(true)),
        "{body}"
    );
    let banned_at = body["position"].as_str().unwrap().to_owned();
    applied(&app, &body["position"]).await;
    let (status, again) = admin_post(&app, "/api/v1/admin/users/5/ban", json!({})).await;
    assert_eq!(
        (status, again["changed"].clone()),
        (StatusCode::OK, json!(false))
    );
    // Every request of theirs, with any token; a revoked token is told so first.
    let (status, body) = app.command("follow", 5, 7).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "USER_BANNED")
    );
    let (status, body) = app.get_as(5, "/api/v1/users/1/counts").await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "USER_BANNED")
    );
    assert_eq!(try_token(&app, &revoked).await, REVOKED);
    // Their posts leave feeds, timelines and new counts; follows stay.
    assert!(feed(&app, banned_at.clone()).await.is_empty());
    let (_, timeline) = app
        .get(&format!("/api/v1/users/5/posts?min_position={banned_at}"))
        .await;
    assert_eq!(timeline["items"], json!([]));
    let (_, status) = app.get("/api/v1/relation/status?from=6&to=5").await;
    assert_eq!(status["following"], json!(true));
    let (status, body) = admin_post(&app, "/api/v1/admin/users/5/unban", json!({})).await;
    assert_eq!(
        (status, &body["changed"]),
        (StatusCode::OK, &json!(true)),
        "{body}"
    );
    let unbanned_at = body["position"].as_str().unwrap().to_owned();
    applied(&app, &body["position"]).await;
    assert_eq!(feed(&app, unbanned_at).await, vec![post]);
    assert_eq!(app.command("follow", 5, 7).await.0, StatusCode::OK);
    crate::helpers::projector_reached(&app, "feed", &banned_at).await;
    assert_verified(&app).await;
}

/// A revocation answered by one instance is enforced by another within a second.
#[tokio::test]
async fn a_revocation_is_enforced_by_every_instance_within_a_second() {
    let first = spawn_app().await;
    let second = spawn_with(first.config.clone()).await;
    let token = stamped(&first, 3, "phone", 1, 0);
    assert_eq!(try_token(&second, &token).await, OK);
    let (status, body) = admin_post(
        &first,
        "/api/v1/admin/users/3/revoke",
        json!({"client": "phone", "up_to": 1}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let answered = Instant::now();
    loop {
        let status = second
            .client
            .get(format!("{}/api/v1/users/1/counts", second.base))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .status();
        if status == StatusCode::UNAUTHORIZED {
            break;
        }
        assert!(
            answered.elapsed() < Duration::from_secs(1),
            "the other instance still accepts the token after {:?}",
            answered.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
