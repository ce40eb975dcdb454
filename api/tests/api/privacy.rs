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

async fn mute(
    app: &crate::helpers::TestApp,
    a: i64,
    b: i64,
    duration: serde_json::Value,
) -> (StatusCode, serde_json::Value) {
    crate::helpers::read(
        app.client
            .post(format!("{}/api/v1/relation/mute", app.base))
            .bearer_auth(app.token(a))
            .json(&json!({ "target": b, "duration_secs": duration }))
            .send()
            .await
            .unwrap(),
    )
    .await
}

/// Post ids of `reader`'s feed, all pages of `size`, once the feed has applied `at`.
async fn feed_ids(app: &crate::helpers::TestApp, reader: i64, at: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/feed?size=2&cursor={c}&min_position={at}"),
            None => format!("/api/v1/feed?size=2&min_position={at}"),
        };
        let (status, page) = app.get_as(reader, &path).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        ids.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["id"].as_str().unwrap().to_owned()),
        );
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return ids,
        }
    }
}

#[tokio::test]
async fn a_mute_hides_posts_from_the_muters_feed_and_count_until_lifted_and_stays_private() {
    let app = spawn_app().await;
    app.command("follow", 1, 2).await;
    app.command("follow", 1, 3).await;
    let (_, body) = app.command("follow", 4, 2).await;
    app.get_as(
        1,
        &format!(
            "/api/v1/feed?min_position={}",
            body["position"].as_str().unwrap()
        ),
    )
    .await;
    let (muted_post, _) = app.publish(2, "muted author").await;
    let (other_post, at) = app.publish(3, "other author").await;
    let (status, body) = mute(&app, 1, 2, serde_json::Value::Null).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        (body["changed"].clone(), body["relation"]["muting"].clone()),
        (json!(true), json!(true))
    );
    assert_eq!(
        body["relation"]["following"],
        json!(true),
        "a mute changes no follow"
    );
    let muted_at = body["position"].as_str().unwrap().to_owned();
    // The same endless mute again changes nothing; a mute with an end replaces it.
    let (_, again) = mute(&app, 1, 2, serde_json::Value::Null).await;
    assert_eq!(again["changed"], json!(false));
    let (status, bad) = mute(&app, 1, 2, json!(0)).await;
    assert_eq!(
        (status, bad["error"]["code"].clone()),
        (StatusCode::BAD_REQUEST, json!("INVALID_INPUT"))
    );
    let (status, _) = mute(&app, 1, 1, serde_json::Value::Null).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // Gone from the muter's feed and count at once; others' feeds keep it.
    let (_, count) = app
        .get_as(
            1,
            &format!("/api/v1/feed/new_count?min_position={muted_at}"),
        )
        .await;
    assert_eq!(count["count"], json!(1), "{count}");
    assert_eq!(feed_ids(&app, 1, &muted_at).await, vec![other_post.clone()]);
    assert_eq!(feed_ids(&app, 4, &at).await, vec![muted_post.clone()]);
    // Private: the muter sees `muting` with their own token; nobody else does.
    let status_path = format!("/api/v1/relation/status?from=1&to=2&min_position={muted_at}");
    assert_eq!(app.get_as(1, &status_path).await.1["muting"], json!(true));
    assert_eq!(app.get(&status_path).await.1["muting"], json!(false));
    assert_eq!(app.get_as(2, &status_path).await.1["muting"], json!(false));
    let batch = app
        .get_as(1, "/api/v1/relation/batch?from=1&to=2,3")
        .await
        .1;
    assert_eq!(
        (
            batch["relations"][0]["muting"].clone(),
            batch["relations"][1]["muting"].clone()
        ),
        (json!(true), json!(false))
    );
    let listed = app.get_as(1, "/api/v1/users/1/following?viewer=1").await.1;
    assert!(listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|i| i["relation"]["muting"] == json!(false)));
    // The muter's list of mutes.
    let (status, mutes) = app.get_as(1, "/api/v1/me/mutes").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(mutes["items"][0]["user"], json!(2));
    assert_eq!(mutes["items"][0]["expires_at"], json!(null));
    assert_eq!(
        app.get("/api/v1/me/mutes").await.0,
        StatusCode::UNAUTHORIZED
    );
    // Lifted: back in the feed.
    let (_, body) = app.command("unmute", 1, 2).await;
    assert_eq!(
        (body["changed"].clone(), body["relation"]["muting"].clone()),
        (json!(true), json!(false))
    );
    let unmuted_at = body["position"].as_str().unwrap().to_owned();
    assert_eq!(
        feed_ids(&app, 1, &unmuted_at).await,
        vec![other_post, muted_post]
    );
    let (_, again) = app.command("unmute", 1, 2).await;
    assert_eq!(again["changed"], json!(false));
    projector_reached(&app, "feed", &unmuted_at).await;
    projector_reached(&app, "following", &unmuted_at).await;
    assert_verified(&app).await;
}

/// A mute with an end ends by itself, with no command: the posts come back, even in the middle
/// of paging (the pages after the end show them; nothing repeats).
#[tokio::test]
async fn a_mute_ends_by_itself_even_between_two_feed_pages() {
    let app = spawn_app().await;
    app.command("follow", 1, 2).await;
    app.command("follow", 1, 3).await;
    let (b1, _) = app.publish(3, "b1").await;
    let (a1, _) = app.publish(2, "a1").await;
    let (b2, _) = app.publish(3, "b2").await;
    let (b3, _) = app.publish(3, "b3").await;
    let (_, body) = mute(&app, 1, 2, json!(2)).await;
    let at = body["position"].as_str().unwrap().to_owned();
    let first = format!("/api/v1/feed?size=2&min_position={at}");
    let (_, page) = app.get_as(1, &first).await;
    let ids: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![b3.as_str(), b2.as_str()]);
    let cursor = page["next_cursor"].as_str().unwrap().to_owned();
    let (_, mutes) = app.get_as(1, "/api/v1/me/mutes").await;
    assert!(mutes["items"][0]["expires_at"].is_string(), "{mutes}");
    tokio::time::sleep(std::time::Duration::from_millis(2300)).await;
    let (_, page) = app
        .get_as(1, &format!("/api/v1/feed?size=2&cursor={cursor}"))
        .await;
    let ids: Vec<&str> = page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        vec![a1.as_str(), b1.as_str()],
        "the muted author's post is back below the cursor"
    );
    let (_, mutes) = app.get_as(1, "/api/v1/me/mutes").await;
    assert_eq!(mutes["items"], json!([]));
    let (_, status) = app.get_as(1, "/api/v1/relation/status?from=1&to=2").await;
    assert_eq!(status["muting"], json!(false));
    // And an unmute of an ended mute changes nothing.
    let (_, body) = app.command("unmute", 1, 2).await;
    assert_eq!(body["changed"], json!(false));
}
