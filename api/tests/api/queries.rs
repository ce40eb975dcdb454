//! The query API over projector `following`'s read models: statuses, lists, counts,
//! read-your-writes, paging, and a model-based check of all of them.

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{code, read, spawn_app, TestApp};

/// Runs a command and returns its position.
async fn act(app: &TestApp, verb: &str, actor: i64, target: i64) -> Option<String> {
    let (status, body) = app.command(verb, actor, target).await;
    assert!(
        status.is_success(),
        "{verb} {actor} {target}: {status} {body}"
    );
    body["position"].as_str().map(str::to_owned)
}

async fn get_at(app: &TestApp, path: &str, position: &Option<String>) -> Value {
    let sep = if path.contains('?') { '&' } else { '?' };
    let url = match position {
        Some(p) => format!("{path}{sep}min_position={p}"),
        None => path.to_owned(),
    };
    let (status, body) = app.get(&url).await;
    assert_eq!(status, StatusCode::OK, "{url}: {body}");
    body
}

#[tokio::test]
async fn a_write_is_visible_to_a_query_that_names_its_position() {
    let app = spawn_app().await;
    act(&app, "follow", 2, 1).await;
    let position = act(&app, "follow", 1, 2).await;
    let status = get_at(&app, "/api/v1/relation/status?from=1&to=2", &position).await;
    assert_eq!(
        status,
        json!({"from": 1, "to": 2, "state": "friends", "following": true, "followed_by": true,
               "friends": true, "blocking": false, "blocked_by": false, "requested": false, "requested_by": false,
               "muting": false, "show_reposts": false, "notify": false})
    );
    let counts = get_at(&app, "/api/v1/users/1/counts", &position).await;
    assert_eq!(
        counts,
        json!({"following": 1, "followers": 1, "friends": 1, "posts": 0})
    );
    let position = act(&app, "block", 2, 1).await;
    let status = get_at(&app, "/api/v1/relation/status?from=1&to=2", &position).await;
    assert_eq!(status["state"], json!("blocked_by"));
    assert_eq!(status["following"], json!(false));
    let counts = get_at(&app, "/api/v1/users/1/counts", &position).await;
    assert_eq!(
        counts,
        json!({"following": 0, "followers": 0, "friends": 0, "posts": 0})
    );
    let self_status = get_at(&app, "/api/v1/relation/status?from=3&to=3", &None).await;
    assert_eq!(self_status["state"], json!("self"));
}

#[tokio::test]
async fn batch_answers_in_the_order_asked() {
    let app = spawn_app().await;
    act(&app, "follow", 1, 3).await;
    act(&app, "follow", 5, 1).await;
    let position = act(&app, "block", 1, 4).await;
    let body = get_at(
        &app,
        "/api/v1/relation/batch?from=1&to=5,4,3,1,9",
        &position,
    )
    .await;
    let states: Vec<&str> = body["relations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["state"].as_str().unwrap())
        .collect();
    assert_eq!(
        states,
        ["followed_by", "blocking", "following", "self", "none"]
    );
    let too_many = (1..=201)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let (status, body) = app
        .get(&format!("/api/v1/relation/batch?from=1&to={too_many}"))
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "INVALID_INPUT")
    );
}

#[tokio::test]
async fn bad_query_parameters_are_400_and_unknown_users_are_empty() {
    let app = spawn_app().await;
    for path in [
        "/api/v1/relation/status?from=0&to=2",
        "/api/v1/relation/status?from=1",
        "/api/v1/relation/status?from=a&to=2",
        "/api/v1/relation/batch?from=1&to=1,,2",
        "/api/v1/users/1/following?limit=0",
        "/api/v1/users/1/following?limit=101",
        "/api/v1/users/1/following?offset=-1",
        "/api/v1/users/1/followers?cursor=garbage",
        "/api/v1/users/1/counts?min_position=nope",
    ] {
        let (status, body) = app.get(path).await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::BAD_REQUEST, "INVALID_INPUT"),
            "{path}"
        );
    }
    let (status, body) = app.get("/api/v1/users/0/counts").await;
    assert_eq!((status, code(&body)), (StatusCode::NOT_FOUND, "NOT_FOUND"));
    let body = get_at(&app, "/api/v1/users/77/following", &None).await;
    assert_eq!(body, json!({"items": [], "total": 0, "next_offset": null}));
}

#[tokio::test]
async fn lists_are_newest_first_and_annotated_for_a_viewer() {
    let app = spawn_app().await;
    for target in [10, 11, 12] {
        act(&app, "follow", 1, target).await;
    }
    act(&app, "follow", 9, 11).await;
    let position = act(&app, "block", 9, 12).await;
    let body = get_at(
        &app,
        "/api/v1/users/1/following?limit=2&viewer=9",
        &position,
    )
    .await;
    let users: Vec<i64> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["user"].as_i64().unwrap())
        .collect();
    assert_eq!(users, [12, 11]);
    assert_eq!(body["total"], json!(3));
    assert_eq!(body["next_offset"], json!(2));
    assert_eq!(body["items"][0]["relation"]["state"], json!("blocking"));
    assert_eq!(body["items"][1]["relation"]["state"], json!("following"));
    assert!(body["items"][0]["since"].as_str().unwrap().contains('T'));
    let body = get_at(&app, "/api/v1/users/1/following?offset=2&limit=2", &None).await;
    assert_eq!(body["items"][0]["user"], json!(10));
    assert!(body["items"][0].get("relation").is_none());
    assert_eq!(body["next_offset"], json!(null));
}

#[tokio::test]
async fn me_blocks_needs_a_token_and_lists_the_callers_blocks() {
    let app = spawn_app().await;
    act(&app, "block", 1, 2).await;
    let position = act(&app, "block", 1, 3).await;
    let (status, _) = app.get("/api/v1/me/blocks").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let url = format!(
        "{}/api/v1/me/blocks?limit=1&min_position={}",
        app.base,
        position.unwrap()
    );
    let (status, first) = read(
        app.client
            .get(&url)
            .bearer_auth(app.token(1))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(first["items"][0]["user"], json!(3));
    let cursor = first["next_cursor"].as_str().unwrap();
    let url = format!("{}/api/v1/me/blocks?limit=1&cursor={cursor}", app.base);
    let (_, second) = read(
        app.client
            .get(&url)
            .bearer_auth(app.token(1))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(second["items"][0]["user"], json!(2));
    assert_eq!(second["next_cursor"], json!(null));
}

#[tokio::test]
async fn follower_cursors_return_every_follower_once_while_new_follows_arrive() {
    let app = spawn_app().await;
    let mut position = None;
    for follower in 100..145 {
        position = act(&app, "follow", follower, 1).await;
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut newcomer = 1000;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/users/1/followers?limit=7&cursor={c}"),
            None => "/api/v1/users/1/followers?limit=7".to_owned(),
        };
        let body = get_at(&app, &path, &position).await;
        for item in body["items"].as_array().unwrap() {
            seen.push(item["user"].as_i64().unwrap());
        }
        // New followers arrive between pages; they are newer than any cursor, so they never
        // shift what the next page returns.
        position = act(&app, "follow", newcomer, 1).await;
        newcomer += 1;
        match body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let expected: Vec<i64> = (100..145).rev().collect();
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn an_open_writer_transaction_holds_the_projector_back_without_skipping_it() {
    // The horizon is cluster-wide: keep the hold short, other tests share this PostgreSQL.
    let mut config = crate::helpers::test_config().await;
    config.catch_up_wait_ms = 300;
    let app = crate::helpers::spawn_with(config).await;
    // A writer whose transaction stays open: its event has an older transaction id than the
    // ones that commit after it.
    let held = crate::helpers::hold_open_follow(&app).await;
    let later = act(&app, "follow", 1, 2).await.unwrap();
    // The later event is committed, but the projector must not pass the held transaction.
    let (status, body) = app
        .get(&format!(
            "/api/v1/relation/status?from=1&to=2&min_position={later}"
        ))
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::SERVICE_UNAVAILABLE, "NOT_CAUGHT_UP")
    );
    held.commit().await.unwrap();
    // Now both apply (the wait is short here, so ask a few times).
    let mut caught_up = false;
    for _ in 0..20 {
        let url = format!("/api/v1/relation/status?from=1&to=2&min_position={later}");
        if app.get(&url).await.0 == StatusCode::OK {
            caught_up = true;
            break;
        }
    }
    assert!(
        caught_up,
        "the projector never passed the released transaction"
    );
    let status = get_at(&app, "/api/v1/relation/status?from=1&to=2", &None).await;
    assert_eq!(status["following"], json!(true));
    let held_edge = get_at(&app, "/api/v1/relation/status?from=100&to=200", &None).await;
    assert_eq!(
        held_edge["following"],
        json!(true),
        "the held event was not skipped"
    );
    crate::helpers::projector_reached(&app, "following", &later).await;
    let applied: i64 = sqlx::query_scalar(
        "SELECT events_applied FROM projector_checkpoints WHERE name = 'following'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(applied, 2);
}

#[tokio::test]
async fn the_admin_endpoint_reports_each_projector() {
    let app = spawn_app().await;
    let position = act(&app, "follow", 1, 2).await;
    // Reads come from the in-memory graph; the projector is waited for on its own.
    get_at(&app, "/api/v1/users/1/counts", &position).await;
    crate::helpers::projector_reached(&app, "following", position.as_deref().unwrap()).await;
    let url = format!("{}/api/v1/admin/projections", app.base);
    let (status, body) = read(
        app.client
            .get(&url)
            .bearer_auth(app.admin_token(1))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let following = &body["projections"][0];
    assert_eq!(following["name"], json!("following"));
    assert_eq!(following["lag_events"], json!(0));
    assert_eq!(following["state"], json!("caught_up"));
    assert_eq!(following["position"], json!(position.clone().unwrap()));
    let projections = body["projections"].as_array().unwrap();
    let graph = projections.last().unwrap();
    assert_eq!(graph["name"], json!("graph"));
    assert_eq!(graph["position"], json!(position.unwrap()));
    assert_eq!(graph["state"], json!("caught_up"));
    let (status, body) = read(
        app.client
            .get(&url)
            .bearer_auth(app.token(1))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!((status, code(&body)), (StatusCode::FORBIDDEN, "FORBIDDEN"));
    let (status, _) = app.get("/api/v1/admin/projections").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

/// Random commands from a few users, then every status, every list (all pages) and every
/// count against a reference model.
#[tokio::test]
async fn random_commands_leave_read_models_equal_to_a_reference_model() {
    let app = spawn_app().await;
    let users: Vec<i64> = (1..=7).collect();
    let mut follows: BTreeSet<(i64, i64)> = BTreeSet::new();
    let mut blocks: BTreeSet<(i64, i64)> = BTreeSet::new();
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut position = None;
    for _ in 0..160 {
        let (a, b) = (users[next(users.len())], users[next(users.len())]);
        if a == b {
            continue;
        }
        let verb = ["follow", "follow", "unfollow", "block", "unblock"][next(5)];
        let (status, body) = app.command(verb, a, b).await;
        match verb {
            "follow" if blocks.contains(&(b, a)) || blocks.contains(&(a, b)) => {
                assert!(status.is_client_error(), "{body}");
                continue;
            }
            "follow" => {
                follows.insert((a, b));
            }
            "unfollow" => {
                follows.remove(&(a, b));
            }
            "block" => {
                blocks.insert((a, b));
                follows.remove(&(a, b));
                follows.remove(&(b, a));
            }
            _ => {
                blocks.remove(&(a, b));
            }
        }
        assert_eq!(status, StatusCode::OK, "{verb} {a} {b}: {body}");
        if let Some(p) = body["position"].as_str() {
            position = Some(p.to_owned());
        }
    }
    tokio::time::sleep(Duration::from_millis(1)).await;
    for &a in &users {
        for &b in &users {
            if a == b {
                continue;
            }
            let s = get_at(
                &app,
                &format!("/api/v1/relation/status?from={a}&to={b}"),
                &position,
            )
            .await;
            assert_eq!(s["following"], json!(follows.contains(&(a, b))), "{a}->{b}");
            assert_eq!(
                s["followed_by"],
                json!(follows.contains(&(b, a))),
                "{a}<-{b}"
            );
            assert_eq!(
                s["blocking"],
                json!(blocks.contains(&(a, b))),
                "{a} blocks {b}"
            );
            assert_eq!(
                s["blocked_by"],
                json!(blocks.contains(&(b, a))),
                "{b} blocks {a}"
            );
        }
        let following: BTreeSet<i64> = follows.iter().filter(|f| f.0 == a).map(|f| f.1).collect();
        let followers: BTreeSet<i64> = follows.iter().filter(|f| f.1 == a).map(|f| f.0).collect();
        let friends: BTreeSet<i64> = following.intersection(&followers).copied().collect();
        let counts = get_at(&app, &format!("/api/v1/users/{a}/counts"), &position).await;
        assert_eq!(
            counts,
            json!({"following": following.len(), "followers": followers.len(), "friends": friends.len(), "posts": 0}),
            "counts of {a}"
        );
        assert_eq!(
            offset_list(&app, &format!("/api/v1/users/{a}/following")).await,
            following
        );
        assert_eq!(
            offset_list(&app, &format!("/api/v1/users/{a}/friends")).await,
            friends
        );
        assert_eq!(
            cursor_list(&app, &format!("/api/v1/users/{a}/followers")).await,
            followers
        );
    }
}

async fn offset_list(app: &TestApp, path: &str) -> BTreeSet<i64> {
    let mut all = Vec::new();
    let mut offset = 0;
    loop {
        let body = get_at(app, &format!("{path}?limit=2&offset={offset}"), &None).await;
        all.extend(
            body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["user"].as_i64().unwrap()),
        );
        match body["next_offset"].as_i64() {
            Some(next) => offset = next,
            None => break,
        }
    }
    let set: BTreeSet<i64> = all.iter().copied().collect();
    assert_eq!(set.len(), all.len(), "{path} repeated an item");
    set
}

async fn cursor_list(app: &TestApp, path: &str) -> BTreeSet<i64> {
    let mut all = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(c) => format!("{path}?limit=2&cursor={c}"),
            None => format!("{path}?limit=2"),
        };
        let body = get_at(app, &url, &None).await;
        all.extend(
            body["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["user"].as_i64().unwrap()),
        );
        match body["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let set: BTreeSet<i64> = all.iter().copied().collect();
    assert_eq!(set.len(), all.len(), "{path} repeated an item");
    set
}
