//! The log readers' two windows: between a projector's apply and its checkpoint, and between
//! the relay's publish and its checkpoint. Whatever fails there, the reader goes on from its
//! checkpoint: every read model ends equal to a fresh fold of the log (each event applied
//! exactly once), and every event reaches the topic at least once, in stream order.

use std::time::Duration;

use fail::FailScenario;
use relations_store::faults::{PROJECTOR_AFTER_APPLY, RELAY_AFTER_PUBLISH};

use crate::broker::{
    assert_topic_matches_the_log, kafka_config, relay_checkpoint_reached, some_events, Broker,
};
use crate::helpers::{assert_verified, projector_reached, spawn_with, test_config, TestApp};
use crate::{delay, ERROR, PANIC};

const RELAY: &str = relations_kafka::relay::NAME;

/// Every reader's name (the projectors and the relay) and whether it has reached `position`.
async fn reached(app: &TestApp, position: &str) -> Vec<(String, bool)> {
    let (tx, pos) = position.split_once('.').unwrap();
    sqlx::query_as(
        "SELECT name, (transaction_id, global_position) >= ($1::bigint, $2::bigint)
           FROM projector_checkpoints ORDER BY name",
    )
    .bind(tx.parse::<i64>().unwrap())
    .bind(pos.parse::<i64>().unwrap())
    .fetch_all(&app.pool)
    .await
    .unwrap()
}

/// Whether the relay has reached `position`.
async fn reached_by_relay(app: &TestApp, position: &str) -> bool {
    let all = reached(app, position).await;
    all.iter().any(|(name, at)| name == RELAY && *at)
}

/// Commands meet every projector's window configured with `action` (on `instances` servers
/// sharing the database, which race for each projector's batches). A failing action holds
/// every read model back; once the point is off, each catches up and equals a fresh fold.
async fn the_read_models_through(action: &str, instances: usize) {
    let scenario = FailScenario::setup();
    let config = test_config().await;
    let app = spawn_with(config.clone()).await;
    let mut others = Vec::new();
    for _ in 1..instances {
        others.push(spawn_with(config.clone()).await);
    }
    fail::cfg(PROJECTOR_AFTER_APPLY, action).unwrap();
    let last = some_events(&app, 0, 30).await;
    if action == ERROR || action == PANIC {
        tokio::time::sleep(Duration::from_millis(700)).await;
        let held = reached(&app, &last).await;
        assert!(
            held.len() >= 5 && held.iter().all(|(_, at)| !at),
            "{held:?}"
        );
    }
    fail::remove(PROJECTOR_AFTER_APPLY);
    for (name, _) in reached(&app, &last).await {
        assert_ne!(name, RELAY, "no relay runs here");
        projector_reached(&app, &name, &last).await;
    }
    assert_verified(&app).await;
    drop(others);
    drop(app);
    scenario.teardown();
}

#[tokio::test]
async fn an_error_between_apply_and_checkpoint_applies_each_event_once() {
    the_read_models_through(ERROR, 1).await;
}

#[tokio::test]
async fn a_panic_between_apply_and_checkpoint_applies_each_event_once() {
    the_read_models_through(PANIC, 1).await;
}

#[tokio::test]
async fn a_delay_between_apply_and_checkpoint_with_two_instances_applies_each_event_once() {
    the_read_models_through(&delay(150), 2).await;
}

/// Events meet the relay's window configured with `action`. A failing action publishes the
/// batch again and again without a checkpoint; once the point is off, the topic holds every
/// event, each stream in order, with the duplicates at-least-once allows (de-duplicated by
/// event id).
async fn the_topic_through(action: &str) {
    let scenario = FailScenario::setup();
    let broker = Broker::start();
    let app = spawn_with(kafka_config(&broker).await).await;
    fail::cfg(RELAY_AFTER_PUBLISH, action).unwrap();
    let last = some_events(&app, 0, 30).await;
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let failing = action == ERROR || action == PANIC;
    if failing {
        let held = reached_by_relay(&app, &last).await;
        assert!(!held, "the relay's checkpoint passed a failing window");
    }
    fail::remove(RELAY_AFTER_PUBLISH);
    relay_checkpoint_reached(&app, &last).await;
    let duplicates = assert_topic_matches_the_log(&app).await;
    if failing {
        assert!(duplicates > 0, "published again from the checkpoint");
    }
    drop(app);
    scenario.teardown();
}

#[tokio::test]
async fn an_error_between_publish_and_checkpoint_publishes_again_in_order() {
    the_topic_through(ERROR).await;
}

#[tokio::test]
async fn a_panic_between_publish_and_checkpoint_publishes_again_in_order() {
    the_topic_through(PANIC).await;
}

#[tokio::test]
async fn a_delay_between_publish_and_checkpoint_loses_nothing() {
    the_topic_through(&delay(300)).await;
}
