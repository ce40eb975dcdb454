//! The operator page (`GET /admin`) in a real headless Chromium (the Debian package;
//! `scripts/ops.sh` installs it): what a person sees after signing in, a user looked up, a
//! rebuild's progress, a refused token; and a screenshot kept under `target/` for CI.

use std::process::Command;
use std::time::Duration;

use relations_projections::runtime::rebuild::PublishedProgress;
use reqwest::StatusCode;

use crate::helpers::{read, spawn_app, TestApp};

/// Chromium's rendering of `url` once its scripts have run (the DOM, serialised).
fn rendered(url: &str) -> String {
    let bin = std::env::var("CHROMIUM_BIN").unwrap_or_else(|_| "chromium".to_owned());
    let output = Command::new(&bin)
        .args(chromium_flags())
        .arg("--dump-dom")
        .arg(url)
        .output()
        .unwrap_or_else(|e| panic!("{bin} (scripts/ops.sh installs it): {e}"));
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

fn chromium_flags() -> [&'static str; 6] {
    [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1280,1100",
        // Let the page's fetches and first refresh finish before the DOM is taken.
        "--virtual-time-budget=6000",
    ]
}

fn screenshot(url: &str, path: &str) {
    let bin = std::env::var("CHROMIUM_BIN").unwrap_or_else(|_| "chromium".to_owned());
    let status = Command::new(&bin)
        .args(chromium_flags())
        .arg(format!("--screenshot={path}"))
        .arg(url)
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
}

/// The visible text of the element with `id` (crudely, from the serialised DOM).
fn text_of(dom: &str, id: &str) -> String {
    let start = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no #{id} in {dom}"));
    let rest = &dom[start..];
    let open_end = rest.find('>').unwrap() + 1;
    let close = rest.find("</p>").or_else(|| rest.find("</div>")).unwrap();
    let inner = &rest[open_end..close];
    let mut text = String::new();
    let mut in_tag = false;
    for c in inner.chars() {
        match c {
            '<' => in_tag = true,
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    text.replace("&amp;", "&").trim().to_owned()
}

async fn arrange(app: &TestApp) -> String {
    app.command("follow", 42, 7).await;
    app.command("follow", 42, 8).await;
    let (_, body) = app.command("follow", 9, 42).await;
    body["position"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_operator_page_shows_projectors_a_rebuild_and_a_user_to_an_admin() {
    let app = spawn_app().await;
    let at = arrange(&app).await;
    crate::helpers::projector_reached(&app, "following", &at).await;
    let (_, page) = read(
        app.client
            .get(format!("{}/admin", app.base))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(page, serde_json::Value::Null, "HTML, not JSON");
    let response = app
        .client
        .get(format!("{}/admin", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));

    // A rebuild in progress, as `relations rebuild` publishes it.
    let progress = PublishedProgress::start(&app.pool, "following");
    progress.update(250, 1000);
    tokio::time::sleep(Duration::from_millis(800)).await;

    let url = format!("{}/admin#token={}&user=42", app.base, app.admin_token(1));
    let dom = tokio::task::spawn_blocking({
        let url = url.clone();
        move || rendered(&url)
    })
    .await
    .unwrap();
    // Projectors, each with its position, lag and state.
    for name in ["following", "feed", "history", "engagement", "graph"] {
        assert!(
            dom.contains(&format!("data-projector=\"{name}\"")),
            "{name}: {dom}"
        );
    }
    assert!(dom.contains("caught_up"), "{dom}");
    assert!(
        text_of(&dom, "relay").contains("not running"),
        "{}",
        text_of(&dom, "relay")
    );
    assert_eq!(text_of(&dom, "horizon"), "free");
    assert!(
        text_of(&dom, "rebuilds").contains("following: 250 / 1000 events (25%)"),
        "{}",
        text_of(&dom, "rebuilds")
    );
    // The user looked up.
    assert_eq!(
        text_of(&dom, "user-counts"),
        "user 42: following 2, followers 1, friends 0, posts 0"
    );
    assert_eq!(text_of(&dom, "user-following"), "following: 8, 7");
    assert_eq!(text_of(&dom, "user-followers"), "followers: 9");
    assert_eq!(text_of(&dom, "error"), "");
    // What a person sees, kept for CI.
    let shot = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/operator-page.png");
    tokio::task::spawn_blocking(move || screenshot(&url, shot))
        .await
        .unwrap();
    assert!(std::fs::metadata(shot).unwrap().len() > 10_000);
    progress.finish().await;
    let (_, admin) = read(
        app.client
            .get(format!("{}/api/v1/admin/projections", app.base))
            .bearer_auth(app.admin_token(1))
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(admin["rebuilds"], serde_json::json!([]), "{admin}");
}

#[tokio::test]
async fn a_token_without_the_admin_role_sees_only_the_refusal() {
    let app = spawn_app().await;
    let url = format!("{}/admin#token={}", app.base, app.token(5));
    let dom = tokio::task::spawn_blocking(move || rendered(&url))
        .await
        .unwrap();
    assert!(
        text_of(&dom, "error").starts_with("Cannot load the status: FORBIDDEN"),
        "{}",
        text_of(&dom, "error")
    );
    assert!(
        !dom.contains("data-projector="),
        "no status for a non-admin"
    );
}
