//! A Kafka-protocol broker for a test, and what the tests read back from its topic: shared by
//! the Kafka tests and the fail point tests (a binary of their own, which includes this file).

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::helpers::{projector_reached, test_config, TestApp};

/// A nisshi broker with in-memory storage on a free loopback port; killed on drop
/// (`KAFKA_BROKER_BIN` names another build of it).
pub struct Broker {
    child: Child,
    pub addr: String,
}

impl Broker {
    pub fn start() -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let url = format!("tcp://127.0.0.1:{port}");
        let broker = std::env::var("KAFKA_BROKER_BIN").unwrap_or_else(|_| "nisshi".to_owned());
        let child = Command::new(&broker)
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
            ])
            .args(["--storage-engine", "memory://nisshi/"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{broker} (scripts/kafka.sh installs it): {e}"));
        let addr = format!("127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(&addr).is_err() {
            assert!(
                Instant::now() < deadline,
                "{broker} never listened on {addr}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self { child, addr }
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Freezes the broker (SIGSTOP): connections stay open, nothing is answered.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Thaws it (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.child.id().to_string()])
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A test's configuration publishing to its own topic on `broker`.
pub async fn kafka_config(broker: &Broker) -> relations_api::config::Config {
    let mut config = test_config().await;
    config.kafka.kafka_brokers = Some(broker.addr.clone());
    config.kafka.kafka_topic = format!("events.{}", uuid::Uuid::new_v4().simple());
    config.kafka.kafka_partitions = 4;
    config
}

/// What Python's confluent-kafka reads from the topic, once it has seen `expected` distinct
/// events or nothing more comes: (partition, offset, key, value).
pub fn read_topic(app: &TestApp, expected: usize) -> Vec<(i64, i64, String, Value)> {
    let brokers = app.config.kafka.kafka_brokers.as_ref().unwrap();
    read_topic_of(brokers, &app.config.kafka.kafka_topic, expected)
}

/// [`read_topic`] from `topic` on `brokers`.
pub fn read_topic_of(
    brokers: &str,
    topic: &str,
    expected: usize,
) -> Vec<(i64, i64, String, Value)> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/read_topic.py");
    let output = Command::new("python3")
        .arg(script)
        .arg(brokers)
        .arg(topic)
        .arg(expected.to_string())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "read_topic.py: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let m: Value = serde_json::from_str(line).unwrap();
            (
                m["partition"].as_i64().unwrap(),
                m["offset"].as_i64().unwrap(),
                m["key"].as_str().unwrap().to_owned(),
                m["value"].clone(),
            )
        })
        .collect()
}

/// The topic against the log: what at-least-once allows (duplicates, by event id) and what it
/// does not (a stream's first copies out of its order or under another key, an event missing,
/// a message the log never held).
#[derive(Debug, Default)]
pub struct TopicCheck {
    pub messages: usize,
    pub duplicates: usize,
    /// "stream out of order at partition/offset" (or keyed by another stream).
    pub out_of_order: Vec<String>,
    pub missing: usize,
    pub foreign: usize,
}

/// Reads the topic on `pool`'s log from `brokers` and checks it.
pub async fn check_topic(pool: &sqlx::PgPool, brokers: &str, topic: &str) -> TopicCheck {
    let log: Vec<(uuid::Uuid,)> =
        sqlx::query_as("SELECT event_id FROM events ORDER BY transaction_id, global_position")
            .fetch_all(pool)
            .await
            .unwrap();
    let mut messages = read_topic_of(brokers, topic, log.len());
    messages.sort_by_key(|m| (m.0, m.1));
    let logged: BTreeSet<uuid::Uuid> = log.iter().map(|e| e.0).collect();
    let mut check = TopicCheck {
        messages: messages.len(),
        ..TopicCheck::default()
    };
    let mut seen = BTreeSet::new();
    let mut last_version: BTreeMap<String, i64> = BTreeMap::new();
    for (partition, offset, key, value) in &messages {
        assert_eq!(value["schema"], "relations.event/1");
        let id: uuid::Uuid = value["event_id"].as_str().unwrap().parse().unwrap();
        if !seen.insert(id) {
            check.duplicates += 1;
            continue;
        }
        if !logged.contains(&id) {
            check.foreign += 1;
        }
        let stream = format!(
            "{}:{}",
            value["stream"]["type"].as_str().unwrap(),
            value["stream"]["id"].as_str().unwrap()
        );
        let version = value["stream"]["version"].as_i64().unwrap();
        let previous = last_version.insert(stream.clone(), version).unwrap_or(0);
        if key != &stream || version != previous + 1 {
            let at = format!(
                "{stream} (key {key}) version {version} after {previous} at {partition}/{offset}"
            );
            check.out_of_order.push(at);
        }
    }
    check.missing = logged.difference(&seen).count();
    check
}

/// Checks the topic against the log: every event exactly once after de-duplication by event
/// id, each keyed by its stream, each stream in order. Returns how many duplicates there were.
pub async fn assert_topic_matches_the_log(app: &TestApp) -> usize {
    let brokers = app.config.kafka.kafka_brokers.as_ref().unwrap();
    let check = check_topic(&app.pool, brokers, &app.config.kafka.kafka_topic).await;
    assert!(
        check.out_of_order.is_empty() && check.missing == 0 && check.foreign == 0,
        "the topic ({} messages) against the log: {check:?}",
        check.messages
    );
    check.duplicates
}

/// A mix of relation commands and posts; returns the last position.
pub async fn some_events(app: &TestApp, from: i64, n: i64) -> String {
    let mut last = String::new();
    for i in from..from + n {
        let (status, body) = if i % 5 == 4 {
            app.post(1 + i % 6, &format!("post {i}")).await
        } else {
            let verb = ["follow", "follow", "block", "unfollow"][(i % 4) as usize];
            app.command(verb, 1 + i % 6, 1 + (i * 7) % 11).await
        };
        assert!(status.is_success() || status.is_client_error(), "{body}");
        if let Some(position) = body["position"].as_str() {
            last = position.to_owned();
        }
    }
    last
}

pub async fn relay_checkpoint_reached(app: &TestApp, position: &str) {
    projector_reached(app, relations_kafka::relay::NAME, position).await;
}
