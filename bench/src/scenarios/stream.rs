//! (j) The live feed stream at 10,000 connected readers: the memory one instance spends per idle
//! connection, and how long a post takes from its command's answer to every reader's stream.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use hdrhistogram::Histogram;
use serde_json::json;
use tokio::sync::Mutex;

use super::scale::Scale;
use crate::graph;
use crate::harness::{token, Env, Row, Server};

/// The author every reader follows.
const AUTHOR: i64 = 5_000_000;
/// Posts published while the readers listen.
const POSTS: usize = 20;

pub async fn stream(env: &Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let readers: i64 = if scale.graph_users < 10_000 {
        1_000
    } else {
        10_000
    };
    let db = "bench_stream";
    let pool = env.fresh_database(db).await?;
    let (base, author) = (scale.base(), scale.base() + AUTHOR);
    let edges: Vec<(i64, i64)> = (base + 1..=base + readers).map(|r| (r, author)).collect();
    graph::load_follows(&pool, &edges).await?;
    let extra = [("RELATIONS_MAX_CONNECTIONS", (readers * 2).to_string())];
    let server = Server::start(env, db, 18087, &extra, None).await?;
    server.graph_caught_up(&pool).await?;
    let before = server.rss_kib();

    // Every reader connects and records when each post reaches it.
    let received: Received = Arc::default();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()?;
    let connected = Arc::new(tokio::sync::Semaphore::new(0));
    let refused = Arc::new(AtomicU64::new(0));
    for reader in base + 1..=base + readers {
        tokio::spawn(listen(
            client.clone(),
            server.base.clone(),
            reader,
            received.clone(),
            (connected.clone(), refused.clone()),
        ));
    }
    let _ = connected.acquire_many(readers as u32).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = server.rss_kib();
    let per_connection = (idle.saturating_sub(before) as f64 * 1024.0) / readers as f64;

    let answered = publish(&client, &server.base, author).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (latency, delivered) = latencies(&received.lock().await, &answered)?;
    let expected = readers as u64 * POSTS as u64;
    let refused = refused.load(Ordering::Relaxed);
    let ms = |q: f64| latency.value_at_quantile(q) as f64 / 1000.0;
    let rows = vec![
        Row::new(
            &format!("j. live feed stream, {readers} connected readers"),
            "server memory per idle connection (RSS growth / connections)",
            format!(
                "{:.1} KiB ({} MiB for all)",
                per_connection / 1024.0,
                idle.saturating_sub(before) / 1024
            ),
        ),
        Row::new(
            &format!("j. live feed stream, {readers} connected readers"),
            "a post from its command's answer to each reader (p50/p99/max)",
            format!(
                "{:.1}/{:.1}/{:.1} ms; {delivered} of {expected} deliveries; {refused} connections failed",
                ms(0.5),
                ms(0.99),
                latency.max() as f64 / 1000.0
            ),
        )
        .target(
            "every delivery within 1 s",
            delivered == expected && ms(1.0) < 1000.0,
        ),
    ];
    drop(server);
    Ok(rows)
}

/// Each post a reader received, and when.
type Received = Arc<Mutex<Vec<(String, Instant)>>>;

/// One reader: connects (a permit on `connected`; a connection that fails, or is answered
/// anything but 200, counts in `refused`), then records in `received` when each post reaches it.
async fn listen(
    client: reqwest::Client,
    base: String,
    reader: i64,
    received: Received,
    (connected, refused): (Arc<tokio::sync::Semaphore>, Arc<AtomicU64>),
) {
    let response = client
        .get(format!("{base}/api/v1/feed/stream"))
        .bearer_auth(token(reader))
        .send()
        .await;
    connected.add_permits(1);
    let response = match response {
        Ok(response) if response.status().is_success() => response,
        _ => {
            refused.fetch_add(1, Ordering::Relaxed);
            return;
        }
    };
    let mut body = response.bytes_stream();
    let mut buffer = String::new();
    while let Some(Ok(chunk)) = body.next().await {
        let at = Instant::now();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            if let Some(data) = block.lines().find_map(|l| l.strip_prefix("data:")) {
                if let Ok(post) = serde_json::from_str::<serde_json::Value>(data.trim()) {
                    if let Some(id) = post["id"].as_str() {
                        received.lock().await.push((id.to_owned(), at));
                    }
                }
            }
        }
    }
}

/// Posts, one at a time: each one's id and when its command was answered.
async fn publish(
    client: &reqwest::Client,
    base: &str,
    author: i64,
) -> anyhow::Result<Vec<(String, Instant)>> {
    let mut answered = Vec::with_capacity(POSTS);
    for i in 0..POSTS {
        let response: serde_json::Value = client
            .post(format!("{base}/api/v1/posts"))
            .bearer_auth(token(author))
            .json(&json!({"content": format!("live {i}")}))
            .send()
            .await?
            .json()
            .await?;
        let at = Instant::now();
        answered.push((
            response["post"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
            at,
        ));
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Ok(answered)
}

/// From each command's answer to each reader's receipt, and how many deliveries were of the
/// posts published.
fn latencies(
    received: &[(String, Instant)],
    answered: &[(String, Instant)],
) -> anyhow::Result<(Histogram<u64>, u64)> {
    let mut latency = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let mut delivered = 0u64;
    for (id, got) in received {
        if let Some((_, answer)) = answered.iter().find(|(a, _)| a == id) {
            let micros = got.saturating_duration_since(*answer).as_micros().max(1) as u64;
            latency.record(micros.min(60_000_000))?;
            delivered += 1;
        }
    }
    Ok((latency, delivered))
}
