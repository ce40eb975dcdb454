//! What only an event log can answer (issue 15): relations as of a moment, known followers,
//! follower changes, and moving a following list as CSV; over HTTP against the real services.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{
    assert_verified, code, moment, projector_reached, read, relations, rfc3339, spawn_app, TestApp,
};

fn position(body: &Value) -> String {
    body["position"].as_str().expect("a position").to_owned()
}

/// Every event of `relations replay`, as envelopes.
fn replay(app: &TestApp) -> Vec<Value> {
    let output = relations(app, &["replay"]);
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// (following, followed_by, blocking, blocked_by, requested, requested_by) of `a` to `b`:
/// a fold of the replayed events that occurred at or before `at`, in log order.
fn folded(events: &[Value], a: i64, b: i64, at: DateTime<Utc>) -> [bool; 6] {
    let mut edges: BTreeMap<(&str, i64, i64), bool> = BTreeMap::new();
    for event in events {
        let occurred: DateTime<Utc> = event["occurred_at"].as_str().unwrap().parse().unwrap();
        if event["stream"]["type"] != "relation" || occurred > at {
            continue;
        }
        let data = &event["data"];
        let id = |k: &str| data[k].as_i64();
        let (kind, from, to, present) = match event["type"].as_str().unwrap() {
            "Followed" => ("follow", id("follower"), id("followee"), true),
            "Unfollowed" => ("follow", id("follower"), id("followee"), false),
            "Blocked" => ("block", id("blocker"), id("blocked"), true),
            "Unblocked" => ("block", id("blocker"), id("blocked"), false),
            "FollowRequested" => ("request", id("requester"), id("target"), true),
            t if t.starts_with("FollowRequest") => {
                ("request", id("requester"), id("target"), false)
            }
            _ => continue,
        };
        edges.insert((kind, from.unwrap(), to.unwrap()), present);
    }
    let has = |kind, x, y| edges.get(&(kind, x, y)).copied().unwrap_or(false);
    [
        has("follow", a, b),
        has("follow", b, a),
        has("block", a, b),
        has("block", b, a),
        has("request", a, b),
        has("request", b, a),
    ]
}

fn flags(relation: &Value) -> [bool; 6] {
    [
        "following",
        "followed_by",
        "blocking",
        "blocked_by",
        "requested",
        "requested_by",
    ]
    .map(|f| relation[f].as_bool().unwrap())
}

#[tokio::test]
async fn as_of_answers_each_moment_exactly_as_a_fold_of_the_replayed_log() {
    let app = spawn_app().await;
    let mut moments = vec![moment().await];
    let steps: [(&str, i64, i64); 12] = [
        ("follow", 1, 2),
        ("follow", 2, 1),
        ("follow", 1, 3),
        ("block", 2, 1),
        ("unblock", 2, 1),
        ("follow", 1, 2),
        ("unfollow", 1, 3),
        ("block", 3, 1),
        ("follow", 4, 1),
        ("remove_follower", 1, 4),
        ("follow", 1, 4),
        ("unblock", 3, 1),
    ];
    let mut last = String::new();
    for (i, (verb, a, b)) in steps.into_iter().enumerate() {
        if i == 8 {
            app.set_locked(2, true).await;
            let (_, body) = app.command("follow", 3, 2).await;
            assert_eq!(body["relation"]["requested"], json!(true));
        }
        let (status, body) = app.command(verb, a, b).await;
        assert_eq!(status, StatusCode::OK, "{verb} {a} {b}: {body}");
        if let Some(p) = body["position"].as_str() {
            last = p.to_owned();
        }
        moments.push(moment().await);
    }
    projector_reached(&app, "history", &last).await;
    let events = replay(&app);
    for &at in &moments {
        let at_param = rfc3339(at);
        for a in 1..=4 {
            let to: Vec<String> = (1..=4).map(|b: i64| b.to_string()).collect();
            // As `from`: a locked user's relations are for the pair (issue 26).
            let (status, batch) = app
                .get_as(
                    a,
                    &format!(
                        "/api/v1/relation/batch?from={a}&to={}&as_of={at_param}",
                        to.join(",")
                    ),
                )
                .await;
            assert_eq!(status, StatusCode::OK, "{batch}");
            for (b, relation) in (1..=4).zip(batch["relations"].as_array().unwrap()) {
                if a == b {
                    assert_eq!(relation["state"], json!("self"));
                    continue;
                }
                assert_eq!(
                    flags(relation),
                    folded(&events, a, b, at),
                    "{a} to {b} as of {at_param}"
                );
                assert_eq!(relation["muting"], json!(false));
            }
            let (_, status_answer) = app
                .get_as(
                    a,
                    &format!("/api/v1/relation/status?from={a}&to=3&as_of={at_param}"),
                )
                .await;
            if a != 3 {
                assert_eq!(flags(&status_answer), folded(&events, a, 3, at));
            }
        }
    }
    // Before anything, nothing; now, the present (the replica and history agree).
    let (_, present) = app
        .get_as(
            1,
            &format!("/api/v1/relation/status?from=1&to=2&min_position={last}"),
        )
        .await;
    let (_, now) = app
        .get_as(
            1,
            &format!(
                "/api/v1/relation/status?from=1&to=2&as_of={}&min_position={last}",
                rfc3339(Utc::now())
            ),
        )
        .await;
    assert_eq!(flags(&present), flags(&now));
    let (status, body) = app
        .get("/api/v1/relation/status?from=1&to=2&as_of=yesterday")
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::BAD_REQUEST, "INVALID_INPUT")
    );
    assert_verified(&app).await;
}

async fn known(app: &TestApp, viewer: i64, user: i64, at: &str) -> (Vec<i64>, i64) {
    let mut users = Vec::new();
    let mut cursor: Option<String> = None;
    let mut total;
    loop {
        let path = match &cursor {
            Some(c) => {
                format!("/api/v1/users/{user}/known_followers?limit=2&cursor={c}&min_position={at}")
            }
            None => format!("/api/v1/users/{user}/known_followers?limit=2&min_position={at}"),
        };
        let (status, page) = app.get_as(viewer, &path).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        total = page["total"].as_i64().unwrap();
        users.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["user"].as_i64().unwrap()),
        );
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return (users, total),
        }
    }
}

#[tokio::test]
async fn known_followers_are_the_followers_the_caller_follows_paged_and_after_blocks() {
    let app = spawn_app().await;
    // 100 follows 10..16; of those, 10..14 follow 1 (in this order); 20 and 21 follow 1 too.
    for f in 10..16 {
        app.command("follow", 100, f).await;
    }
    for f in [10, 11, 20, 12, 13, 21, 14] {
        app.command("follow", f, 1).await;
    }
    let (_, body) = app.command("follow", 15, 2).await;
    let at = position(&body);
    let (users, total) = known(&app, 100, 1, &at).await;
    assert_eq!(users, vec![14, 13, 12, 11, 10], "newest follow of 1 first");
    assert_eq!(total, 5);
    // A block ends a follow: gone from the list and the total.
    let (_, body) = app.command("block", 1, 12).await;
    let at = position(&body);
    assert_eq!(known(&app, 100, 1, &at).await, (vec![14, 13, 11, 10], 4));
    let (_, body) = app.command("unfollow", 100, 13).await;
    let at = position(&body);
    assert_eq!(known(&app, 100, 1, &at).await, (vec![14, 11, 10], 3));
    // Someone who follows nobody knows nobody; the token is required.
    assert_eq!(known(&app, 7, 1, &at).await, (vec![], 0));
    let (status, _) = app.get("/api/v1/users/1/known_followers").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

async fn changes(app: &TestApp, user: i64, since: &str, at: &str) -> Vec<(i64, String)> {
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!(
                "/api/v1/me/follower_changes?since={since}&limit=2&cursor={c}&min_position={at}"
            ),
            None => {
                format!("/api/v1/me/follower_changes?since={since}&limit=2&min_position={at}")
            }
        };
        let (status, page) = app.get_as(user, &path).await;
        assert_eq!(status, StatusCode::OK, "{page}");
        for item in page["items"].as_array().unwrap() {
            assert!(item["at"].is_string());
            items.push((
                item["user"].as_i64().unwrap(),
                item["change"].as_str().unwrap().to_owned(),
            ));
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return items,
        }
    }
}

#[tokio::test]
async fn follower_changes_list_every_start_and_stop_since_a_moment_across_a_rebuild() {
    let app = spawn_app().await;
    app.command("follow", 2, 1).await;
    let since = rfc3339(moment().await);
    app.command("follow", 3, 1).await;
    app.command("unfollow", 2, 1).await;
    app.command("follow", 4, 1).await;
    app.command("block", 1, 4).await; // an unfollow by block
    app.command("follow", 5, 1).await;
    app.command("remove_follower", 1, 5).await; // an unfollow by removal
    app.command("follow", 2, 1).await;
    app.command("follow", 6, 7).await; // not about 1
    let (_, body) = app.command("follow", 8, 9).await;
    let at = position(&body);
    let expected: Vec<(i64, String)> = [
        (2, "followed"),
        (5, "unfollowed"),
        (5, "followed"),
        (4, "unfollowed"),
        (4, "followed"),
        (2, "unfollowed"),
        (3, "followed"),
    ]
    .into_iter()
    .map(|(u, c)| (u, c.to_owned()))
    .collect();
    assert_eq!(changes(&app, 1, &since, &at).await, expected);
    // Rebuilt from the log: the same answer.
    relations(&app, &["rebuild", "history"]);
    assert_eq!(changes(&app, 1, &since, &at).await, expected);
    let (status, body) = app.get_as(1, "/api/v1/me/follower_changes").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "since is required: {body}");
    let (status, _) = app
        .get_as(
            1,
            &format!("/api/v1/me/follower_changes?since={since}&cursor=x"),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_verified(&app).await;
}

async fn export(app: &TestApp, user: i64) -> String {
    let response = app
        .client
        .get(format!("{}/api/v1/me/following.csv", app.base))
        .bearer_auth(app.token(user))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/csv"));
    response.text().await.unwrap()
}

async fn import(app: &TestApp, user: i64, csv: String, key: Option<&str>) -> (StatusCode, Value) {
    let mut request = app
        .client
        .post(format!("{}/api/v1/me/following/import", app.base))
        .bearer_auth(app.token(user))
        .header("content-type", "text/csv")
        .body(csv);
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    read(request.send().await.unwrap()).await
}

#[tokio::test]
async fn an_export_imported_elsewhere_follows_the_same_users_line_by_line() {
    let app = spawn_app().await;
    for target in [10, 11, 12, 13, 14, 15] {
        app.command("follow", 1, target).await;
    }
    // The importer already follows 10, is blocked by 11, blocks 12; 13 is locked.
    app.command("follow", 2, 10).await;
    app.command("block", 11, 2).await;
    app.command("block", 2, 12).await;
    app.set_locked(13, true).await;
    let (_, body) = app.command("follow", 1, 2).await;
    projector_reached(&app, "following", &position(&body)).await;
    let csv = export(&app, 1).await;
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "user_id,since");
    let listed: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(
        listed,
        ["2", "15", "14", "13", "12", "11", "10"],
        "newest first"
    );

    let before = app.event_count().await;
    let (status, outcome) = import(&app, 2, csv.clone(), Some("move-1")).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["followed"], json!(2), "{outcome}"); // 14, 15
    assert_eq!(outcome["requested"], json!(1)); // 13
    assert_eq!(outcome["unchanged"], json!(1)); // 10
    assert_eq!(
        outcome["refused"],
        json!([
            {"user": 2, "code": "SELF_RELATION"},
            {"user": 12, "code": "BLOCKING_TARGET"},
            {"user": 11, "code": "BLOCKED"},
        ])
    );
    let at = position(&outcome);
    // A retry with the key answers the same and appends nothing; another body is refused.
    let appended = app.event_count().await;
    assert_eq!(appended - before, 3);
    let (status, again) = import(&app, 2, csv.clone(), Some("move-1")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(again, outcome);
    assert_eq!(app.event_count().await, appended);
    let (status, body) = import(&app, 2, "user_id\n99\n".into(), Some("move-1")).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "IDEMPOTENCY_KEY_REUSED")
    );
    // What it made: the same list, less what the rules refused.
    projector_reached(&app, "following", &at).await;
    let exported: Vec<String> = export(&app, 2)
        .await
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().to_owned())
        .collect();
    let mut exported_sorted = exported.clone();
    exported_sorted.sort();
    assert_eq!(exported_sorted, ["10", "14", "15"]);
    assert_verified(&app).await;
}

#[tokio::test]
async fn a_bad_csv_is_refused_with_its_line_and_changes_nothing() {
    let app = spawn_app().await;
    let before = app.event_count().await;
    let many = std::iter::once("user_id".to_owned())
        .chain((1..=1001).map(|i| (i + 10).to_string()))
        .collect::<Vec<_>>()
        .join("\n");
    for (csv, expected_code, line) in [
        ("id,since\n3\n".to_owned(), "INVALID_CSV", 1),
        ("user_id,since\n3\nthree\n".to_owned(), "INVALID_CSV", 3),
        ("user_id,since\n3,not a time\n".to_owned(), "INVALID_CSV", 2),
        ("user_id,since\n-3\n".to_owned(), "INVALID_CSV", 2),
        ("\n3\n".to_owned(), "INVALID_CSV", 1),
        (many, "TOO_MANY_LINES", 1002),
    ] {
        let (status, body) = import(&app, 1, csv.clone(), None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{csv:.40}: {body}");
        assert_eq!(code(&body), expected_code, "{body}");
        assert_eq!(body["error"]["line"], json!(line), "{body}");
    }
    // Over the body limit (64 KiB): 413; the wrong media type: 415; no token: 401.
    let huge = format!("user_id\n{}", "12345678\n".repeat(8000));
    let (status, body) = import(&app, 1, huge, None).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE")
    );
    let response = app
        .client
        .post(format!("{}/api/v1/me/following/import", app.base))
        .bearer_auth(app.token(1))
        .json(&json!({"user_id": 3}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let response = app
        .client
        .post(format!("{}/api/v1/me/following/import", app.base))
        .header("content-type", "text/csv")
        .body("user_id\n3\n")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    // An empty file lists nobody: it follows nobody.
    let (status, outcome) = import(&app, 1, String::new(), None).await;
    assert_eq!(
        (status, outcome),
        (
            StatusCode::OK,
            json!({"followed": 0, "requested": 0, "unchanged": 0, "refused": [], "position": null})
        )
    );
    assert_eq!(app.event_count().await, before, "nothing changed");
    // Exactly 1,000 lines is fine.
    let full = std::iter::once("user_id".to_owned())
        .chain((1..=1000).map(|i| (i + 10).to_string()))
        .collect::<Vec<_>>()
        .join("\n");
    let (status, outcome) = import(&app, 1, full, None).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["followed"], json!(1000));
}
