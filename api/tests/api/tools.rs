//! `relations replay`, `verify` and `project`, run as the binary against a live service.

use std::process::{Command, Stdio};
use std::time::Duration;

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{spawn_app, spawn_with, test_config, TestApp};

const BIN: &str = env!("CARGO_BIN_EXE_relations");

fn relations(app: &TestApp, args: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(args)
        .env("DATABASE_URL", &app.config.database.database_url)
        .env("RUST_LOG", "warn")
        .output()
        .unwrap()
}

/// Waits until the `following` projector has applied everything.
async fn settle(app: &TestApp, position: &str) {
    let (status, body) = app
        .get(&format!("/api/v1/users/1/counts?min_position={position}"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn replay_prints_the_versioned_envelope_in_log_order_with_filters() {
    let app = spawn_app().await;
    app.command("follow", 1, 2).await;
    app.command("follow", 3, 1).await;
    app.command("block", 1, 2).await;
    let all = relations(&app, &["replay"]);
    assert!(all.status.success());
    let lines: Vec<Value> = String::from_utf8(all.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = lines.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["Followed", "Followed", "Unfollowed", "Blocked"]);
    let first = &lines[0];
    assert_eq!(first["schema"], "relations.event/1");
    assert_eq!(first["version"], "1");
    assert_eq!(
        first["stream"],
        serde_json::json!({"type": "relation", "id": "1:2", "version": 1})
    );
    assert_eq!(
        first["data"],
        serde_json::json!({"follower": 1, "followee": 2})
    );
    assert_eq!(first["metadata"]["actor"], "1");
    assert!(
        first["event_id"].is_string()
            && first["position"].is_string()
            && first["occurred_at"].is_string()
    );

    let blocked = relations(&app, &["replay", "--type", "Blocked"]);
    assert_eq!(
        String::from_utf8(blocked.stdout).unwrap().lines().count(),
        1
    );
    let of_user_3 = relations(&app, &["replay", "--user", "3"]);
    assert_eq!(
        String::from_utf8(of_user_3.stdout).unwrap().lines().count(),
        1
    );
    let second = lines[1]["position"].as_str().unwrap();
    let after = relations(&app, &["replay", "--after", second]);
    assert_eq!(String::from_utf8(after.stdout).unwrap().lines().count(), 2);
    let up_to = relations(&app, &["replay", "--up-to", second]);
    assert_eq!(String::from_utf8(up_to.stdout).unwrap().lines().count(), 2);
    let future = relations(&app, &["replay", "--since", "2999-01-01T00:00:00Z"]);
    assert_eq!(String::from_utf8(future.stdout).unwrap().lines().count(), 0);
}

#[tokio::test]
async fn verify_passes_on_a_fresh_fold_and_fails_on_a_corrupted_read_model() {
    let app = spawn_app().await;
    app.command("follow", 1, 2).await;
    app.command("follow", 2, 1).await;
    app.command("follow", 3, 1).await;
    let (_, body) = app.command("block", 3, 1).await;
    settle(&app, body["position"].as_str().unwrap()).await;
    let ok = relations(&app, &["verify"]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );

    sqlx::query("INSERT INTO rm_follows (follower, followee, since) VALUES (8, 9, now())")
        .execute(&app.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE rm_follow_counts SET followers = 7 WHERE user_id = 2")
        .execute(&app.pool)
        .await
        .unwrap();
    let bad = relations(&app, &["verify"]);
    assert!(!bad.status.success());
    let report = String::from_utf8(bad.stdout).unwrap();
    assert!(
        report.contains("rm_follows (follower, followee): unexpected (8, 9)"),
        "{report}"
    );
    assert!(report.contains("rm_follow_counts"), "{report}");
}

#[tokio::test]
async fn a_standalone_projector_killed_under_load_resumes_and_matches_a_fresh_fold() {
    let mut config = test_config().await;
    config.run_projectors = false;
    let app = spawn_with(config).await;
    let start = || {
        Command::new(BIN)
            .arg("project")
            .env("DATABASE_URL", &app.config.database.database_url)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut projector = start();
    let mut last = String::new();
    for round in 0..4 {
        let requests = (0..40).map(|i| {
            let (a, b) = (1 + (i + round * 7) % 13, 20 + (i * 3 + round) % 11);
            let verb =
                ["follow", "follow", "unfollow", "block", "unblock"][(i + round) as usize % 5];
            app.command(verb, a, b)
        });
        for (status, body) in join_all(requests).await {
            if let Some(p) = body["position"].as_str() {
                last = p.to_owned();
            }
            assert!(status.is_success() || status.is_client_error(), "{body}");
        }
        // SIGKILL: no chance to finish a batch cleanly.
        projector.kill().unwrap();
        projector.wait().unwrap();
        projector = start();
    }
    let mut caught_up = false;
    for _ in 0..20 {
        let (status, _) = app
            .get(&format!("/api/v1/users/1/counts?min_position={last}"))
            .await;
        if status == StatusCode::OK {
            caught_up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(caught_up);
    projector.kill().unwrap();
    projector.wait().unwrap();
    let verify = relations(&app, &["verify"]);
    assert!(
        verify.status.success(),
        "{}",
        String::from_utf8_lossy(&verify.stdout)
    );
}
