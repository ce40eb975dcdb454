//! (c) projection lag under a sustained write rate.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::PgPool;

use super::Scale;
use crate::harness::{client, token, Row, Server};

/// (c) projection lag from append to visible, at a sustained write rate (open loop).
pub async fn lag(server: &Server, pool: &PgPool, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let (sent, mut received) = tokio::sync::mpsc::unbounded_channel::<(String, Instant)>();
    let writer = spawn_writer(server.base.clone(), scale, sent);
    // The poller: the checkpoint of `following`, every millisecond.
    let mut pending: Vec<((i64, i64), Instant)> = Vec::new();
    let mut lags = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let mut writer = Some(writer);
    loop {
        while let Ok((position, at)) = received.try_recv() {
            let (t, g) = position.split_once('.').expect("a position");
            pending.push(((t.parse()?, g.parse()?), at));
        }
        let (t, g): (i64, i64) = sqlx::query_as(
            "SELECT transaction_id, global_position FROM projector_checkpoints WHERE name = 'following'",
        )
        .fetch_one(pool)
        .await?;
        let now = Instant::now();
        pending.retain(|&(position, at)| {
            if position <= (t, g) {
                let _ = lags.record(now.saturating_duration_since(at).as_micros().max(1) as u64);
                false
            } else {
                true
            }
        });
        if writer.as_ref().is_some_and(|w| w.is_finished()) {
            writer.take();
        }
        if writer.is_none() && pending.is_empty() && received.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let p99 = lags.value_at_quantile(0.99) as f64 / 1000.0;
    Ok(vec![Row::new(
        &format!("c. projection lag at {} follows/s", scale.lag_rate),
        "append (answer) to visible in the read model: p50/p99/max",
        format!(
            "{:.1}/{:.1}/{:.1} ms over {} follows",
            lags.value_at_quantile(0.5) as f64 / 1000.0,
            p99,
            lags.max() as f64 / 1000.0,
            lags.len()
        ),
    )
    .target(
        "p99 < 100 ms at 1,000/s",
        p99 < 100.0 && scale.lag_rate >= 1000,
    )])
}

/// The open-loop writer: `lag_rate` follows a second for `lag_for`, each answer's position sent
/// with the moment it arrived.
fn spawn_writer(
    base: String,
    scale: Scale,
    sent: tokio::sync::mpsc::UnboundedSender<(String, Instant)>,
) -> tokio::task::JoinHandle<()> {
    let client = client();
    let interval = Duration::from_secs_f64(1.0 / f64::from(scale.lag_rate));
    let total = (scale.lag_for.as_secs_f64() * f64::from(scale.lag_rate)) as u64;
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        let tokens: Arc<Vec<String>> = Arc::new((0..50).map(|u| token(40_000_000 + u)).collect());
        let mut tasks = Vec::new();
        for i in 0..total {
            ticker.tick().await;
            let (client, base, tokens, sent) =
                (client.clone(), base.clone(), tokens.clone(), sent.clone());
            tasks.push(tokio::spawn(async move {
                let response = client
                    .post(format!("{base}/api/v1/relation/follow"))
                    .bearer_auth(&tokens[(i % 50) as usize])
                    .json(&serde_json::json!({"target": 50_000_000 + i}))
                    .send()
                    .await;
                if let Ok(response) = response {
                    let at = Instant::now();
                    if let Ok(body) = response.json::<serde_json::Value>().await {
                        if let Some(position) = body["position"].as_str() {
                            let _ = sent.send((position.to_owned(), at));
                        }
                    }
                }
            }));
        }
        for task in tasks {
            let _ = task.await;
        }
    })
}
