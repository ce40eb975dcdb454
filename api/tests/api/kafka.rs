//! The Kafka relay and Kafka-fed projectors against a real Kafka-protocol broker (nisshi), one
//! broker per test on a port of its own, so a test may pause or kill it.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rand::Rng;
use reqwest::StatusCode;
use serde_json::Value;

use crate::broker::{
    assert_topic_matches_the_log, kafka_config, relay_checkpoint_reached, some_events, Broker,
};
use crate::helpers::{spawn_with, TestApp};

const BIN: &str = env!("CARGO_BIN_EXE_relations");

/// A `relations` process a test started; killed (SIGKILL) when dropped, so a failing test
/// never leaves it running.
struct Background(Child);

impl Drop for Background {
    fn drop(&mut self) {
        kill_hard(self);
    }
}

/// `relations ARGS` in the background, with the app's database and Kafka settings.
fn background(app: &TestApp, args: &[&str]) -> Background {
    let child = Command::new(BIN)
        .args(args)
        .env("DATABASE_URL", &app.config.database.database_url)
        .env("RELATIONS_MASTER_KEY", crate::helpers::MASTER_KEY)
        .env(
            "KAFKA_BROKERS",
            app.config.kafka.kafka_brokers.as_ref().unwrap(),
        )
        .env("KAFKA_TOPIC", &app.config.kafka.kafka_topic)
        .env(
            "KAFKA_PARTITIONS",
            app.config.kafka.kafka_partitions.to_string(),
        )
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(log_file(args))
        .spawn()
        .unwrap();
    Background(child)
}

/// Where a background process logs: `target/kafka-logs/`, one file per process (a failed run's
/// story is there; a pipe would be held open by a process that outlives its test).
fn log_file(args: &[&str]) -> Stdio {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/kafka-logs");
    let _ = std::fs::create_dir_all(dir);
    let name = format!(
        "{dir}/{}-{}.log",
        args.join("_").replace(['-', '/'], ""),
        uuid::Uuid::new_v4().simple()
    );
    std::fs::File::create(name).map_or_else(|_| Stdio::null(), Stdio::from)
}

fn kill_hard(process: &mut Background) {
    let _ = process.0.kill(); // SIGKILL: no drain, no goodbye
    let _ = process.0.wait();
}

#[tokio::test]
async fn every_event_reaches_the_topic_in_stream_order_even_across_a_frozen_broker() {
    let broker = Broker::start();
    let app = spawn_with(kafka_config(&broker).await).await;
    let first = some_events(&app, 0, 40).await;
    relay_checkpoint_reached(&app, &first).await;

    broker.pause();
    // The write side does not depend on Kafka: commands go on while the broker is frozen.
    let last = some_events(&app, 40, 40).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (status, admin) = app
        .client
        .get(format!("{}/api/v1/admin/projections", app.base))
        .bearer_auth(app.admin_token(1))
        .send()
        .await
        .map(|r| (r.status(), r))
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    let admin: Value = admin.json().await.unwrap();
    let relay = admin["projections"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == relations_kafka::relay::NAME)
        .expect("the relay is reported")
        .clone();
    assert!(relay["lag_events"].as_i64().unwrap() > 0, "{relay}");
    broker.resume();

    relay_checkpoint_reached(&app, &last).await;
    assert_topic_matches_the_log(&app).await;
    let text = app.metrics().await;
    assert!(
        text.contains("relations_projector_lag_events{projector=\"kafka_relay\"}"),
        "relay lag not in the metrics"
    );
}

#[tokio::test]
async fn a_relay_killed_mid_stream_and_restarted_loses_nothing() {
    let broker = Broker::start();
    let mut config = kafka_config(&broker).await;
    config.run_projectors = false;
    let app = spawn_with(config).await;
    let mut relay = background(&app, &["project", "--only", "kafka_relay"]);
    let load = {
        let app = &app;
        async move { some_events(app, 0, 150).await }
    };
    let killer = async {
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_millis(400)).await;
            kill_hard(&mut relay);
            tokio::time::sleep(Duration::from_millis(200)).await;
            relay = background(&app, &["project", "--only", "kafka_relay"]);
        }
    };
    let (last, ()) = futures::join!(load, killer);
    relay_checkpoint_reached(&app, &last).await;
    kill_hard(&mut relay);
    assert_topic_matches_the_log(&app).await;
}

/// On the broker's consumer group protocol (the default).
#[tokio::test]
async fn two_consumer_processes_killed_at_random_end_equal_to_a_fresh_fold() {
    consumers_killed_at_random("broker").await;
}

/// On the fallback coordinator: advisory locks in PostgreSQL.
#[tokio::test]
async fn two_consumer_processes_killed_at_random_end_equal_to_a_fresh_fold_with_postgres_coordination(
) {
    consumers_killed_at_random("postgres").await;
}

async fn consumers_killed_at_random(coordinator: &str) {
    let broker = Broker::start();
    let mut config = kafka_config(&broker).await;
    config.run_projectors = false;
    let app = spawn_with(config).await;
    let mut relay = background(&app, &["project", "--only", "kafka_relay"]);
    let consume = [
        "project",
        "--source",
        "kafka",
        "--group",
        "test",
        "--coordinator",
        coordinator,
    ];
    let mut consumers = [background(&app, &consume), background(&app, &consume)];
    let load = {
        let app = &app;
        async move {
            let mut last = String::new();
            for i in 0..240i64 {
                let verb = ["follow", "follow", "unfollow", "block", "follow", "unblock"]
                    [(i % 6) as usize];
                let (_, body) = app.command(verb, 1 + i % 13, 1 + (i * 5) % 17).await;
                if let Some(position) = body["position"].as_str() {
                    last = position.to_owned();
                }
            }
            last
        }
    };
    // Random kills (seeded; the seed is printed to replay a failure): a consumer or the relay,
    // SIGKILLed mid-stream, restarted shortly after. A killed relay re-publishes what it had
    // not checkpointed, so the consumers also meet duplicates.
    // CHAOS_SEED=<seed> replays a run's kills (their timing still depends on the machine).
    let seed: u64 = std::env::var("CHAOS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("chaos seed {seed}");
    let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(seed);
    let chaos = async {
        for _ in 0..6 {
            tokio::time::sleep(Duration::from_millis(rng.random_range(100..400))).await;
            match rng.random_range(0..5) {
                0 => {
                    kill_hard(&mut relay);
                    relay = background(&app, &["project", "--only", "kafka_relay"]);
                }
                n => {
                    let victim = n % 2;
                    kill_hard(&mut consumers[victim]);
                    tokio::time::sleep(Duration::from_millis(rng.random_range(0..300))).await;
                    consumers[victim] = background(&app, &consume);
                }
            }
        }
    };
    let (last, ()) = futures::join!(load, chaos);
    relay_checkpoint_reached(&app, &last).await;
    // Everything reached the topic (the relay's side), whatever the consumers make of it.
    assert_topic_matches_the_log(&app).await;

    // Once the group has caught up, the read models equal a fresh fold of the whole log.
    let deadline = Instant::now() + Duration::from_secs(90);
    let verdict = loop {
        let verify = Command::new(BIN)
            .args(["verify", "--whole-log", "--only", "following"])
            .env("DATABASE_URL", &app.config.database.database_url)
            .env("RELATIONS_MASTER_KEY", crate::helpers::MASTER_KEY)
            .env("RUST_LOG", "error")
            .output()
            .unwrap();
        if verify.status.success() || Instant::now() > deadline {
            break verify;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    for consumer in consumers.iter_mut() {
        kill_hard(consumer);
    }
    kill_hard(&mut relay);
    assert!(
        verdict.status.success(),
        "{}{}",
        String::from_utf8_lossy(&verdict.stdout),
        String::from_utf8_lossy(&verdict.stderr)
    );
    let partitions: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM kafka_offsets WHERE consumer = 'test.following' AND next_offset > 0",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(
        partitions >= 2,
        "the group consumed {partitions} partitions"
    );
}

#[tokio::test]
async fn a_duplicate_published_after_newer_events_is_skipped_by_stream_version() {
    use rdkafka::producer::{FutureProducer, FutureRecord};
    let broker = Broker::start();
    let mut config = kafka_config(&broker).await;
    config.run_projectors = false;
    let app = spawn_with(config).await;
    let mut relay = background(&app, &["project", "--only", "kafka_relay"]);
    app.command("follow", 1, 2).await;
    let (_, body) = app.command("unfollow", 1, 2).await;
    relay_checkpoint_reached(&app, body["position"].as_str().unwrap()).await;
    kill_hard(&mut relay);

    // What a relay that crashed before its checkpoint would publish again: the Followed,
    // now behind the Unfollowed that ended it.
    let replay = Command::new(BIN)
        .args(["replay", "--type", "Followed"])
        .env("DATABASE_URL", &app.config.database.database_url)
        .env("RELATIONS_MASTER_KEY", crate::helpers::MASTER_KEY)
        .output()
        .unwrap();
    let followed = String::from_utf8(replay.stdout).unwrap();
    let producer: FutureProducer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", &broker.addr)
        .create()
        .unwrap();
    producer
        .send(
            FutureRecord::to(&app.config.kafka.kafka_topic)
                .key("relation:1:2")
                .payload(followed.trim()),
            Duration::from_secs(5),
        )
        .await
        .unwrap();

    let mut consumer = background(&app, &["project", "--source", "kafka", "--group", "dup"]);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let consumed: Option<i64> = sqlx::query_scalar(
            "SELECT sum(next_offset)::bigint FROM kafka_offsets WHERE consumer = 'dup.following'",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        if consumed == Some(3) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "consumed {consumed:?} of 3 messages"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    kill_hard(&mut consumer);
    let follows: i64 = sqlx::query_scalar("SELECT count(*) FROM rm_follows")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(follows, 0, "the stale duplicate brought the follow back");
}
