//! (c) projection lag under a sustained write rate.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sqlx::PgPool;

use crate::harness::{client, token, Row, Server};

/// (c) projection lag from append to visible, at a sustained write rate (open loop) of
/// `rate` follows a second for `duration`; `round` keeps the rounds' users apart.
pub async fn lag(
    server: &Server,
    pool: &PgPool,
    rate: u32,
    duration: Duration,
    round: i64,
) -> anyhow::Result<Vec<Row>> {
    let (sent, mut received) = tokio::sync::mpsc::unbounded_channel::<(String, Instant)>();
    let writer = spawn_writer(server.base.clone(), rate.max(1), duration, round, sent);
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
        &format!("c. projection lag at {rate} follows/s"),
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
        match round {
            0 => "p99 < 100 ms at 1,000/s",
            _ => "p99 < 250 ms at 70% of the measured maximum",
        },
        match round {
            0 => p99 < 100.0 && rate >= 1000,
            _ => p99 < 250.0,
        },
    )])
}

/// The open-loop writer: `rate` follows a second for `duration`, each answer's position sent
/// with the moment it arrived.
fn spawn_writer(
    base: String,
    rate: u32,
    duration: Duration,
    round: i64,
    sent: tokio::sync::mpsc::UnboundedSender<(String, Instant)>,
) -> tokio::task::JoinHandle<()> {
    let client = client();
    let interval = Duration::from_secs_f64(1.0 / f64::from(rate));
    let total = (duration.as_secs_f64() * f64::from(rate)) as u64;
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        let first = 40_000_000 + round * 1_000;
        let tokens: Arc<Vec<String>> = Arc::new((0..50).map(|u| token(first + u)).collect());
        let mut tasks = Vec::new();
        for i in 0..total {
            ticker.tick().await;
            let (client, base, tokens, sent) =
                (client.clone(), base.clone(), tokens.clone(), sent.clone());
            tasks.push(tokio::spawn(async move {
                let response = client
                    .post(format!("{base}/api/v1/relation/follow"))
                    .bearer_auth(&tokens[(i % 50) as usize])
                    .json(
                        &serde_json::json!({"target": 50_000_000 + round * 10_000_000 + i as i64}),
                    )
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
