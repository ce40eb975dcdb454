//! The `relations` binary itself: `migrate`, `token`, and `serve` draining on SIGTERM.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;

use crate::helpers::{fresh_database, SECRET};

const BIN: &str = env!("CARGO_BIN_EXE_relations");

#[tokio::test]
async fn migrate_then_serve_then_sigterm_exits_cleanly() {
    let database_url = fresh_database().await;
    let status = Command::new(BIN)
        .arg("migrate")
        .env("DATABASE_URL", &database_url)
        .env("RELATIONS_MASTER_KEY", crate::helpers::MASTER_KEY)
        .status()
        .unwrap();
    assert!(status.success());

    let token = Command::new(BIN)
        .args(["token", "--user", "42"])
        .env("RELATIONS_JWT_SECRET", SECRET)
        .output()
        .unwrap();
    assert!(token.status.success());
    let token = String::from_utf8(token.stdout).unwrap().trim().to_owned();

    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let mut server = Command::new(BIN)
        .arg("serve")
        .env("DATABASE_URL", &database_url)
        .env("RELATIONS_MASTER_KEY", crate::helpers::MASTER_KEY)
        .env("REDIS_URL", "redis://127.0.0.1:6379")
        .env(
            "RELATIONS_REDIS_PREFIX",
            format!("test:{}:", uuid::Uuid::new_v4().simple()),
        )
        .env("RELATIONS_JWT_SECRET", SECRET)
        .env("RELATIONS_HTTP_ADDR", format!("127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    while client.get(format!("{base}/readyz")).send().await.is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "server never came up"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let response = client
        .post(format!("{base}/api/v1/relation/follow"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"target": 7}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);

    let killed = Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(exit) = server.try_wait().unwrap() {
            break exit;
        }
        assert!(Instant::now() < deadline, "serve did not stop on SIGTERM");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(exit.success(), "{exit:?}");
}

#[test]
fn serve_without_required_configuration_fails_with_a_message() {
    let output = Command::new(BIN)
        .arg("serve")
        .env_remove("DATABASE_URL")
        .env_remove("REDIS_URL")
        .env_remove("RELATIONS_JWT_SECRET")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("DATABASE_URL") || stderr.contains("database-url"),
        "{stderr}"
    );
}

/// SPEC's hardening: a JWT key shorter than 32 bytes refuses to start `serve` and `token`,
/// naming the variable and never showing the key.
#[test]
fn a_jwt_secret_shorter_than_32_bytes_refuses_to_start_without_showing_it() {
    let short = "x".repeat(31) + "Z";
    let short = &short[1..]; // 31 bytes, ending in a mark that must not show
    for args in [vec!["serve"], vec!["token", "--user", "1"]] {
        let output = Command::new(BIN)
            .args(&args)
            .env("DATABASE_URL", "postgres://postgres@127.0.0.1:1/none")
            .env("REDIS_URL", "redis://127.0.0.1:1")
            .env("RELATIONS_MASTER_KEY", crate::helpers::MASTER_KEY)
            .env("RELATIONS_JWT_SECRET", short)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("RELATIONS_JWT_SECRET"),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("32 bytes"), "{args:?}: {stderr}");
        assert!(!stderr.contains(short), "{args:?} showed the key: {stderr}");
    }
    // 32 bytes is enough.
    let output = Command::new(BIN)
        .args(["token", "--user", "1"])
        .env("RELATIONS_JWT_SECRET", "y".repeat(32))
        .output()
        .unwrap();
    assert!(output.status.success());
}
