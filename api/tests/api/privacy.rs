//! Control over who sees whom (issue 14): removing a follower.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{assert_verified, projector_reached, spawn_app};

#[tokio::test]
async fn removing_a_follower_ends_the_follow_and_their_feed_without_a_block() {
    let app = spawn_app().await;
    app.command("follow", 2, 1).await;
    app.command("follow", 1, 2).await;
    let (post, published) = app.publish(1, "for my followers").await;
    let (_, page) = app
        .get_as(2, &format!("/api/v1/feed?min_position={published}"))
        .await;
    assert_eq!(page["items"][0]["id"], json!(post));
    let (status, body) = app.command("remove_follower", 1, 2).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["changed"], json!(true));
    assert_eq!(
        body["relation"]["following"],
        json!(true),
        "1 still follows 2"
    );
    assert_eq!(body["relation"]["followed_by"], json!(false));
    assert_eq!(body["relation"]["blocking"], json!(false));
    let at = body["position"].as_str().unwrap().to_owned();
    // Their feed loses the remover's posts, as after an unfollow; the counts move.
    let (_, page) = app
        .get_as(2, &format!("/api/v1/feed?min_position={at}"))
        .await;
    assert!(
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["author"] != json!(1)),
        "{page}"
    );
    let (_, counts) = app
        .get(&format!("/api/v1/users/1/counts?min_position={at}"))
        .await;
    assert_eq!(
        (counts["followers"].clone(), counts["friends"].clone()),
        (json!(0), json!(0))
    );
    // The log says why.
    let events = app.events().await;
    let (kind, payload) = events.last().unwrap();
    assert_eq!(kind, "Unfollowed");
    assert_eq!(
        payload["Unfollowed"],
        json!({"follower": 2, "followee": 1, "cause": "removed"})
    );
    // Again: nothing to remove. And the removed follower may follow again.
    let (_, again) = app.command("remove_follower", 1, 2).await;
    assert_eq!(
        (again["changed"].clone(), again["position"].clone()),
        (json!(false), json!(null))
    );
    let (status, _) = app.command("follow", 2, 1).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = app.command("remove_follower", 1, 1).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("SELF_RELATION"))
    );
    projector_reached(&app, "feed", &at).await;
    assert_verified(&app).await;
}
