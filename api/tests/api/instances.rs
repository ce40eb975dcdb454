//! Issue 24: several `relations serve` instances on one database and one Redis, with the
//! projectors in a `relations project` process of their own (the production layout of README's
//! "Deployment"). (One instance's `kill -9` and restart is in `faults`.) An in-process
//! instance without projectors serves as the test's observer (its pool, the helpers).

use std::time::Duration;

use reqwest::StatusCode;

use crate::failover::{assert_all_in_log, Load};
use crate::helpers::{read, test_config, SECRET};
use crate::owned::ServiceProcess;

/// Read-your-writes across instances (a command on one, a `min_position` read on another);
/// `kill -9` of one instance under 16 clients, who retry on the others with the same keys,
/// loses no acknowledged follow; the read models then agree with the log.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_instances_read_their_writes_and_survive_a_kill_9() {
    let config = test_config().await;
    let api = [("RELATIONS_RUN_PROJECTORS", "false")];
    let _projectors = ServiceProcess::start("project", &config, &[]).await;
    let mut instances = Vec::new();
    for _ in 0..3 {
        instances.push(ServiceProcess::start("serve", &config, &api).await);
    }
    let app = crate::helpers::spawn_with({
        let mut observer = config.clone();
        observer.run_projectors = false;
        observer
    })
    .await;
    let client = reqwest::Client::new();
    let jwt = relations_api::auth::JwtKeys::new(SECRET);
    let token = |id| {
        jwt.issue(crate::helpers::user(id), false, Duration::from_secs(600))
            .unwrap()
    };
    for (i, from) in instances.iter().enumerate() {
        let to = &instances[(i + 1) % 3];
        let actor = 500 + i as i64;
        let (status, body) = read(
            client
                .post(format!("{}/api/v1/relation/follow", from.base))
                .bearer_auth(token(actor))
                .json(&serde_json::json!({ "target": 600 }))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let at = body["position"].as_str().unwrap();
        let url = format!(
            "{}/api/v1/relation/status?from={actor}&to=600&min_position={at}",
            to.base
        );
        let (status, body) = read(client.get(url).send().await.unwrap()).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(body["following"], serde_json::json!(true), "{body}");
    }
    let bases: Vec<String> = instances.iter().map(|i| i.base.clone()).collect();
    let load = Load::start(&app, &bases, 16);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    instances[0].kill();
    let killed = std::time::Instant::now();
    let back = load
        .first_ack_sent_after(killed, Duration::from_secs(10))
        .await;
    assert!(back.is_some(), "no command acknowledged after the kill");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let acks = load.stop().await;
    eprintln!(
        "acknowledged {} follows over three instances, one killed",
        acks.len()
    );
    assert_all_in_log(&app.pool, &acks).await;
    let last = acks.iter().max_by_key(|a| a.acked).unwrap();
    let url = format!(
        "{}/api/v1/users/{}/counts?min_position={}",
        instances[1].base, last.actor, last.position
    );
    let (status, body) = read(client.get(url).send().await.unwrap()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    crate::helpers::projector_reached(&app, "feed", &last.position).await;
    crate::helpers::projector_reached(&app, "following", &last.position).await;
    crate::helpers::assert_verified(&app).await;
}
