//! SPEC.md's rules 1 to 6, over HTTP, each with the events it leaves.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{code, spawn_app};

#[tokio::test]
async fn follow_answers_the_relation_and_a_position_and_appends_followed() {
    let app = spawn_app().await;
    let (status, body) = app.command("follow", 1, 2).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["changed"], json!(true));
    assert_eq!(
        body["relation"],
        json!({"from": 1, "to": 2, "state": "following", "following": true, "followed_by": false,
               "friends": false, "blocking": false, "blocked_by": false, "requested": false, "requested_by": false,
               "muting": false, "show_reposts": true, "notify": false})
    );
    assert!(body["position"].is_string());
    assert_eq!(
        app.events().await,
        vec![(
            "Followed".to_owned(),
            json!({"Followed": {"follower": 1, "followee": 2}})
        )]
    );
}

#[tokio::test]
async fn following_again_or_unfollowing_a_stranger_changes_nothing() {
    let app = spawn_app().await;
    app.command("follow", 1, 2).await;
    let (status, body) = app.command("follow", 1, 2).await;
    assert_eq!(
        (status, &body["changed"], &body["position"]),
        (StatusCode::OK, &json!(false), &json!(null))
    );
    let (status, body) = app.command("unfollow", 3, 2).await;
    assert_eq!((status, &body["changed"]), (StatusCode::OK, &json!(false)));
    assert_eq!(body["relation"]["state"], json!("none"));
    assert_eq!(app.event_count().await, 1);
}

#[tokio::test]
async fn following_back_makes_friends_and_unfollow_undoes_it() {
    let app = spawn_app().await;
    app.command("follow", 2, 1).await;
    let (_, body) = app.command("follow", 1, 2).await;
    assert_eq!(body["relation"]["state"], json!("friends"));
    assert_eq!(body["relation"]["friends"], json!(true));
    let (_, body) = app.command("unfollow", 1, 2).await;
    assert_eq!(body["changed"], json!(true));
    assert_eq!(body["relation"]["state"], json!("followed_by"));
}

#[tokio::test]
async fn no_relation_with_oneself() {
    let app = spawn_app().await;
    for verb in ["follow", "unfollow", "block", "unblock"] {
        let (status, body) = app.command(verb, 5, 5).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::BAD_REQUEST, "SELF_RELATION"),
            "{verb}"
        );
    }
    assert_eq!(app.event_count().await, 0);
}

#[tokio::test]
async fn follow_is_refused_when_blocked_either_way() {
    let app = spawn_app().await;
    app.command("block", 2, 1).await;
    let (status, body) = app.command("follow", 1, 2).await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "BLOCKED"));
    let (status, body) = app.command("follow", 2, 1).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::CONFLICT, "BLOCKING_TARGET")
    );
    assert_eq!(app.event_count().await, 1);
}

#[tokio::test]
async fn block_removes_both_follows_in_the_same_transaction() {
    let app = spawn_app().await;
    app.command("follow", 1, 2).await;
    app.command("follow", 2, 1).await;
    let (status, body) = app.command("block", 1, 2).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["relation"]["state"], json!("blocking"));
    assert_eq!(body["relation"]["following"], json!(false));
    assert_eq!(body["relation"]["followed_by"], json!(false));
    let block_tx: Vec<(String,)> = sqlx::query_as(
        "SELECT event_type FROM events
          WHERE transaction_id = (SELECT transaction_id FROM events WHERE event_type = 'Blocked')
          ORDER BY global_position",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    let types: Vec<&str> = block_tx.iter().map(|(t,)| t.as_str()).collect();
    assert_eq!(types, ["Unfollowed", "Unfollowed", "Blocked"]);
    // Both users' guard counts went back to zero with the block.
    let guards: Vec<(i64, i32)> =
        sqlx::query_as("SELECT user_id, following FROM follow_guard ORDER BY user_id")
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(guards, vec![(1, 0), (2, 0)]);
}

#[tokio::test]
async fn unblock_restores_no_follow_and_blocking_back_is_mutual() {
    let app = spawn_app().await;
    app.command("follow", 1, 2).await;
    app.command("block", 1, 2).await;
    let (_, body) = app.command("block", 2, 1).await;
    assert_eq!(body["relation"]["state"], json!("mutual_block"));
    let (_, body) = app.command("unblock", 1, 2).await;
    assert_eq!(body["changed"], json!(true));
    assert_eq!(body["relation"]["state"], json!("blocked_by"));
    let (_, body) = app.command("unblock", 2, 1).await;
    assert_eq!(body["relation"]["state"], json!("none"));
    let (_, body) = app.command("unblock", 2, 1).await;
    assert_eq!(body["changed"], json!(false));
}

#[tokio::test]
async fn the_follow_limit_refuses_the_next_follow_and_counts_unfollows() {
    let mut config = crate::helpers::test_config().await;
    config.follow_limit = 2;
    let app = crate::helpers::spawn_with(config).await;
    app.command("follow", 1, 2).await;
    app.command("follow", 1, 3).await;
    let (status, body) = app.command("follow", 1, 4).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::CONFLICT, "FOLLOW_LIMIT_REACHED")
    );
    // Already following at the limit: success, unchanged.
    let (status, body) = app.command("follow", 1, 2).await;
    assert_eq!((status, &body["changed"]), (StatusCode::OK, &json!(false)));
    // A block by the followee frees a slot too.
    app.command("block", 3, 1).await;
    let (status, _) = app.command("follow", 1, 4).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = app.command("follow", 1, 5).await;
    assert_eq!(status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn events_carry_the_request_id_and_the_actor() {
    let app = spawn_app().await;
    let response = app
        .client
        .post(format!("{}/api/v1/relation/follow", app.base))
        .bearer_auth(app.token(7))
        .header("x-request-id", "req-abc-123")
        .json(&json!({"target": 8}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "req-abc-123");
    let (metadata, event_id): (serde_json::Value, uuid::Uuid) =
        sqlx::query_as("SELECT metadata::jsonb, event_id FROM events")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(metadata, json!({"request_id": "req-abc-123", "actor": "7"}));
    assert!(!event_id.is_nil());
}

#[tokio::test]
async fn the_log_refuses_updates_and_deletes() {
    let app = spawn_app().await;
    app.command("follow", 1, 2).await;
    assert!(sqlx::query("UPDATE events SET event_type = 'X'")
        .execute(&app.pool)
        .await
        .is_err());
    assert!(sqlx::query("DELETE FROM events")
        .execute(&app.pool)
        .await
        .is_err());
    assert_eq!(app.event_count().await, 1);
}

#[tokio::test]
async fn operations_endpoints_answer() {
    let app = spawn_app().await;
    assert_eq!(app.get("/healthz").await.0, StatusCode::OK);
    let (status, body) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["checks"]["database"], json!(true));
    app.command("follow", 1, 2).await;
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("relations_http_requests_total"),
        "{metrics}"
    );
    let (status, body) = app.get("/no/such/route").await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "NOT_FOUND"));
}

#[tokio::test]
async fn openapi_describes_every_endpoint() {
    let app = spawn_app().await;
    let (status, doc) = app.get("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let routes = [
        ("post", "/api/v1/relation/follow"),
        ("post", "/api/v1/relation/unfollow"),
        ("post", "/api/v1/relation/block"),
        ("post", "/api/v1/relation/unblock"),
        ("get", "/api/v1/relation/status"),
        ("get", "/api/v1/relation/batch"),
        ("get", "/api/v1/users/{id}/following"),
        ("get", "/api/v1/users/{id}/followers"),
        ("get", "/api/v1/users/{id}/friends"),
        ("get", "/api/v1/users/{id}/counts"),
        ("get", "/api/v1/me/blocks"),
        ("post", "/api/v1/posts"),
        ("delete", "/api/v1/posts/{id}"),
        ("get", "/api/v1/users/{id}/posts"),
        ("get", "/api/v1/feed"),
        ("get", "/api/v1/feed/new_count"),
        ("get", "/api/v1/admin/projections"),
        ("post", "/api/v1/admin/users/{id}/revoke"),
        ("post", "/api/v1/admin/users/{id}/ban"),
        ("post", "/api/v1/admin/users/{id}/unban"),
        ("post", "/api/v1/admin/users/{id}/erase"),
        ("delete", "/api/v1/me"),
        ("get", "/api/v1/me/archive"),
        ("post", "/api/v1/me/logout"),
        ("post", "/api/v1/relation/remove_follower"),
        ("post", "/api/v1/relation/mute"),
        ("post", "/api/v1/relation/unmute"),
        ("get", "/api/v1/me/mutes"),
        ("put", "/api/v1/me/settings"),
        ("put", "/api/v1/me/notification_policy"),
        ("get", "/api/v1/me/follow_requests"),
        ("post", "/api/v1/relation/follow_requests/approve"),
        ("post", "/api/v1/relation/follow_requests/reject"),
        ("get", "/api/v1/users/{id}/known_followers"),
        ("get", "/api/v1/me/follower_changes"),
        ("get", "/api/v1/me/following.csv"),
        ("post", "/api/v1/me/following/import"),
        ("post", "/api/v1/posts/{id}/like"),
        ("post", "/api/v1/posts/{id}/unlike"),
        ("get", "/api/v1/posts/{id}/likes"),
        ("post", "/api/v1/posts/{id}/repost"),
        ("post", "/api/v1/posts/{id}/unrepost"),
        ("get", "/api/v1/posts/{id}/reposts"),
        ("post", "/api/v1/posts/{id}/bookmark"),
        ("post", "/api/v1/posts/{id}/unbookmark"),
        ("get", "/api/v1/me/bookmarks"),
        ("get", "/api/v1/me/suggestions"),
        ("post", "/api/v1/me/suggestions/{id}/dismiss"),
        ("get", "/api/v1/filters"),
        ("post", "/api/v1/filters"),
        ("delete", "/api/v1/filters/{id}"),
        ("get", "/api/v1/lists"),
        ("post", "/api/v1/lists"),
        ("patch", "/api/v1/lists/{id}"),
        ("delete", "/api/v1/lists/{id}"),
        ("get", "/api/v1/lists/{id}/members"),
        ("post", "/api/v1/lists/{id}/members"),
        ("delete", "/api/v1/lists/{id}/members"),
        ("get", "/api/v1/lists/{id}/feed"),
        ("put", "/api/v1/posts/{id}/quote_policy"),
        ("put", "/api/v1/posts/{id}/comment_policy"),
        ("post", "/api/v1/posts/{id}/detach"),
        ("post", "/api/v1/posts/{id}/comments"),
        ("get", "/api/v1/posts/{id}/comments"),
        ("delete", "/api/v1/comments/{id}"),
        ("post", "/api/v1/comments/{id}/like"),
        ("post", "/api/v1/comments/{id}/unlike"),
        ("post", "/api/v1/comments/{id}/pin"),
        ("post", "/api/v1/comments/{id}/unpin"),
        ("get", "/api/v1/comments/{id}/replies"),
        ("get", "/api/v1/me/liked"),
        ("get", "/api/v1/feed/stream"),
        ("get", "/api/v1/notifications"),
        ("get", "/api/v1/notifications/unread_count"),
        ("post", "/api/v1/notifications/read"),
        ("get", "/api/v1/notifications/stream"),
        ("get", "/admin"),
        ("get", "/healthz"),
        ("get", "/readyz"),
        ("get", "/metrics"),
    ];
    for (method, path) in routes {
        assert!(
            doc["paths"][path][method].is_object(),
            "{method} {path} undocumented"
        );
        // And the route is really served (not 404 from the fallback).
        let url = format!("{}{}", app.base, path.replace("{id}", "1"));
        let response = app
            .client
            .request(method.to_uppercase().parse().unwrap(), url)
            .send()
            .await
            .unwrap();
        if response.status() == StatusCode::NOT_FOUND {
            // The handler's own 404 for an unknown id: the path is routed if another method
            // on it is refused as such.
            let other = app
                .client
                .patch(format!("{}{}", app.base, path.replace("{id}", "1")))
                .send()
                .await
                .unwrap();
            assert_eq!(
                other.status(),
                StatusCode::METHOD_NOT_ALLOWED,
                "{method} {path}"
            );
        }
        assert_ne!(
            response.status(),
            StatusCode::METHOD_NOT_ALLOWED,
            "{method} {path}"
        );
    }
    let documented: usize = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|item| item.as_object().unwrap().len())
        .sum();
    assert_eq!(documented, routes.len());
}
