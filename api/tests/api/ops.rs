//! `ops/`: the Grafana dashboard and the Prometheus alert rules against a real Prometheus (the
//! Debian package; `scripts/ops.sh` installs it) scraping a running service. Every dashboard
//! query returns series, every metric an alert names is served, and "projector stuck" fires
//! when a projector is made to fail.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::broker::Broker;
use crate::helpers::{spawn_with, test_config, TestApp};

const OPS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../ops");

/// A Prometheus server scraping one target every second, with `ops/alerts.yml` loaded; killed
/// on drop.
struct Prometheus {
    child: Child,
    base: String,
    _dir: tempdir::Dir,
}

mod tempdir {
    /// A directory removed on drop.
    pub struct Dir(pub std::path::PathBuf);

    impl Dir {
        pub fn new() -> Self {
            let path = std::env::temp_dir().join(format!("prom-{}", uuid::Uuid::new_v4().simple()));
            std::fs::create_dir_all(&path).unwrap();
            Self(path)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Prometheus {
    async fn start(target: &str) -> Self {
        let dir = tempdir::Dir::new();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n  - {OPS}/alerts.yml\n\
             scrape_configs:\n  - job_name: relations\n    static_configs:\n      - targets: [\"{target}\"]\n"
        );
        let config_file = dir.0.join("prometheus.yml");
        std::fs::write(&config_file, config).unwrap();
        let port = free_port();
        let bin = std::env::var("PROMETHEUS_BIN").unwrap_or_else(|_| "prometheus".to_owned());
        let child = Command::new(&bin)
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.0.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{bin} (scripts/ops.sh installs it): {e}"));
        let base = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        loop {
            if let Ok(response) = reqwest::get(format!("{base}/-/ready")).await {
                if response.status().is_success() {
                    break;
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "prometheus never got ready"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Self {
            child,
            base,
            _dir: dir,
        }
    }

    /// The series an instant query returns.
    async fn query(&self, expr: &str) -> Vec<Value> {
        let answer: Value = reqwest::Client::new()
            .get(format!("{}/api/v1/query", self.base))
            .query(&[("query", expr)])
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(answer["status"], "success", "{expr}: {answer}");
        answer["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Waits (up to 30 s) until `expr` returns series.
    async fn series(&self, expr: &str) -> Vec<Value> {
        let started = Instant::now();
        loop {
            let result = self.query(expr).await;
            if !result.is_empty() {
                return result;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "no series for {expr}"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    async fn firing(&self) -> Vec<String> {
        let answer: Value = reqwest::get(format!("{}/api/v1/alerts", self.base))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        answer["data"]["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["state"] == "firing")
            .map(|a| a["labels"]["alertname"].as_str().unwrap().to_owned())
            .collect()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Traffic that makes every panel's series exist: commands, reads (cache misses then hits),
/// likes and like checks, errors, rate-limit refusals.
async fn traffic(app: &TestApp) {
    for target in 2..6 {
        app.command("follow", 1, target).await;
    }
    let (post, _) = app.publish(2, "for the dashboards").await;
    for _ in 0..3 {
        app.get_as(1, "/api/v1/feed").await;
    }
    let like = app
        .client
        .post(format!("{}/api/v1/posts/{post}/like", app.base))
        .bearer_auth(app.token(1))
        .send()
        .await
        .unwrap();
    assert_eq!(like.status(), StatusCode::OK);
    for _ in 0..3 {
        app.get_as(1, &format!("/api/v1/me/liked?ids={post}")).await;
    }
    app.command("follow", 1, 1).await; // 400 SELF_RELATION
    let mut refused = false;
    for target in 100..140 {
        if app.command("follow", 9, target).await.0 == StatusCode::TOO_MANY_REQUESTS {
            refused = true;
        }
    }
    assert!(refused, "the rate limiter refused nothing");
}

#[tokio::test]
async fn dashboards_and_alerts_work_against_a_real_prometheus() {
    let broker = Broker::start();
    let mut config = test_config().await;
    config.kafka.kafka_brokers = Some(broker.addr.clone());
    config.kafka.kafka_topic = format!("events.{}", uuid::Uuid::new_v4().simple());
    config.stuck_after_ms = 1000;
    config.rate_capacity = 20;
    config.rate_refill_per_sec = 0.1;
    // Feed pages through the inboxes' path (the Redis cache's misses, then hits), which the
    // held posts would otherwise answer once the replica has loaded: the cache panel found
    // its series only in other tests' traffic (the recorder is one per process), so this test
    // failed when run alone.
    config.feed_memory_per_author = 0;
    let app = spawn_with(config).await;
    let prometheus = Prometheus::start(app.base.trim_start_matches("http://")).await;
    traffic(&app).await;

    // Every dashboard query returns series.
    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{OPS}/grafana-dashboard.json")).unwrap(),
    )
    .unwrap();
    let mut queries = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().unwrap() {
            let expr = target["expr"]
                .as_str()
                .unwrap()
                .replace("$__rate_interval", "1m");
            queries.push((panel["title"].as_str().unwrap().to_owned(), expr));
        }
    }
    assert!(queries.len() >= 15, "{queries:?}");
    for (title, expr) in &queries {
        let series = prometheus.series(expr).await;
        assert!(!series.is_empty(), "{title}: {expr}");
    }

    // Every metric an alert names is served, and the rules loaded.
    let rules: Value = reqwest::get(format!("{}/api/v1/rules", prometheus.base))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let alerts: Vec<&Value> = rules["data"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap())
        .collect();
    assert!(alerts.len() >= 6, "{rules}");
    for alert in &alerts {
        assert_eq!(alert["health"], "ok", "{alert}");
        let expr = alert["query"].as_str().unwrap();
        for metric in expr
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("relations_"))
        {
            prometheus.series(&format!("count({metric})")).await;
        }
    }
    assert!(
        prometheus.firing().await.is_empty(),
        "{:?}",
        prometheus.firing().await
    );

    // A projector made to fail: "projector stuck" fires, and clears when it recovers.
    sqlx::query("ALTER TABLE rm_blocks RENAME TO rm_blocks_away")
        .execute(&app.pool)
        .await
        .unwrap();
    app.command("block", 1, 7).await;
    let started = Instant::now();
    while !prometheus
        .firing()
        .await
        .contains(&"RelationsProjectorStuck".to_owned())
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "RelationsProjectorStuck never fired"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let stuck = prometheus.query("relations_projector_stuck == 1").await;
    assert_eq!(
        stuck[0]["metric"]["projector"],
        json!("following"),
        "{stuck:?}"
    );
    sqlx::query("ALTER TABLE rm_blocks_away RENAME TO rm_blocks")
        .execute(&app.pool)
        .await
        .unwrap();
    let started = Instant::now();
    while prometheus
        .firing()
        .await
        .contains(&"RelationsProjectorStuck".to_owned())
    {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "RelationsProjectorStuck never cleared"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}
