//! (q) the soak (issue 48): one server, 16 clients and 100 users, a steady mix for minutes on
//! end, with the server's resident memory sampled every half minute. What grows without bound
//! under a steady load shows as a slope that does not flatten; the last third's slope is the
//! figure, beside the in-memory gauges the server publishes for what it holds.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng;

use crate::harness::{client, token, Env, Row, Server};

/// Users of the soak's world.
const USERS: i64 = 100;
/// Clients sending back to back.
const CLIENTS: usize = 16;
/// Recent posts kept by the clients, liked at random.
const RECENT: usize = 256;

/// The soak's request kinds, in shares of 100.
const MIX: [(Kind, u32); 7] = [
    (Kind::Follow, 12),
    (Kind::Unfollow, 12),
    (Kind::Post, 8),
    (Kind::Like, 16),
    (Kind::Feed, 22),
    (Kind::Followers, 15),
    (Kind::Status, 15),
];

#[derive(Debug, Clone, Copy)]
enum Kind {
    Follow,
    Unfollow,
    Post,
    Like,
    Feed,
    Followers,
    Status,
}

/// The gauges of what the server holds, summed over their labels, in the order reported.
const HELD: [(&str, &str); 5] = [
    ("graph", "relations_graph_bytes"),
    ("posts held", "relations_feed_memory_bytes"),
    ("stream caches", "relations_stream_cache_bytes"),
    ("streams cached", "relations_stream_cache_streams"),
    ("posts held (count)", "relations_feed_memory_posts"),
];

/// One request of the soak; whether the service answered (a refusal is an answer, a 5xx or a
/// transport error is not).
async fn request(
    client: &reqwest::Client,
    base: &str,
    tokens: &[String],
    recent: &Mutex<Vec<String>>,
    i: u64,
) -> bool {
    let (user, other, mut pick) = {
        let mut rng = rand::rng();
        (
            rng.random_range(1..=USERS),
            rng.random_range(1..=USERS),
            rng.random_range(0..100u32),
        )
    };
    let kind = MIX
        .iter()
        .find(|(_, share)| {
            let here = pick < *share;
            pick = pick.saturating_sub(*share);
            here
        })
        .map_or(Kind::Status, |m| m.0);
    let token = &tokens[(user - 1) as usize];
    let url = |path: &str| format!("{base}{path}");
    let key = format!("soak-{i}-{user}");
    let sent = match kind {
        Kind::Follow | Kind::Unfollow => {
            let verb = if matches!(kind, Kind::Follow) {
                "follow"
            } else {
                "unfollow"
            };
            client
                .post(url(&format!("/api/v1/relation/{verb}")))
                .bearer_auth(token)
                .header("Idempotency-Key", key)
                .json(&serde_json::json!({"target": other}))
                .send()
                .await
        }
        Kind::Post | Kind::Like => return engage(client, base, token, recent, kind, i).await,
        Kind::Feed => {
            client
                .get(url("/api/v1/feed"))
                .bearer_auth(token)
                .send()
                .await
        }
        Kind::Followers => {
            client
                .get(url(&format!("/api/v1/users/{other}/followers?limit=20")))
                .send()
                .await
        }
        Kind::Status => {
            client
                .get(url(&format!(
                    "/api/v1/relation/status?from={user}&to={other}"
                )))
                .send()
                .await
        }
    };
    sent.is_ok_and(|r| !r.status().is_server_error())
}

/// A post (its id kept among the recent ones) or a like of a recent post.
async fn engage(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    recent: &Mutex<Vec<String>>,
    kind: Kind,
    i: u64,
) -> bool {
    let url = |path: &str| format!("{base}{path}");
    let sent = match kind {
        Kind::Post => {
            let sent = client
                .post(url("/api/v1/posts"))
                .bearer_auth(token)
                .json(&serde_json::json!({"content": format!("soak post {i}")}))
                .send()
                .await;
            match sent {
                Ok(response) if response.status().is_success() => {
                    let body: serde_json::Value = response.json().await.unwrap_or_default();
                    if let Some(id) = body["post"]["id"].as_str() {
                        let mut recent = recent.lock().expect("not poisoned");
                        if recent.len() == RECENT {
                            recent.remove(0);
                        }
                        recent.push(id.to_owned());
                    }
                    return true;
                }
                other => other,
            }
        }
        Kind::Like => {
            let post = {
                let recent = recent.lock().expect("not poisoned");
                match recent.len() {
                    0 => None,
                    n => Some(recent[rand::rng().random_range(0..n)].clone()),
                }
            };
            let Some(post) = post else { return true };
            client
                .post(url(&format!("/api/v1/posts/{post}/like")))
                .bearer_auth(token)
                .send()
                .await
        }
        Kind::Follow | Kind::Unfollow | Kind::Feed | Kind::Followers | Kind::Status => return true,
    };
    sent.is_ok_and(|r| !r.status().is_server_error())
}

/// (q) the soak for `minutes`: RSS every 30 s, its slope over each third, and what the
/// server's own gauges say it holds at the start and the end.
pub async fn soak(env: &Env, minutes: u64) -> anyhow::Result<Vec<Row>> {
    let db = "bench_soak";
    env.fresh_database(db).await?;
    let server = Arc::new(Server::start(env, db, 18090, &[], None).await?);
    let tokens: Arc<Vec<String>> = Arc::new((1..=USERS).map(token).collect());
    let recent = Arc::new(Mutex::new(Vec::<String>::new()));
    let (sent, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let length = Duration::from_secs(minutes * 60);
    let start = Instant::now();
    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        let (client, base) = (client(), server.base.clone());
        let (tokens, recent) = (tokens.clone(), recent.clone());
        let (sent, failed) = (sent.clone(), failed.clone());
        clients.push(tokio::spawn(async move {
            let mut i = c as u64;
            while start.elapsed() < length {
                let ok = request(&client, &base, &tokens, &recent, i).await;
                sent.fetch_add(1, Ordering::Relaxed);
                if !ok {
                    failed.fetch_add(1, Ordering::Relaxed);
                }
                i += CLIENTS as u64;
            }
        }));
    }
    let held = |server: Arc<Server>| async move {
        let mut values = Vec::new();
        for (name, metric) in HELD {
            values.push((name, server.metric_sum(metric).await.unwrap_or(0.0)));
        }
        values
    };
    let mut samples = vec![(0.0, server.rss_kib() as f64 / 1024.0)];
    let first_held = held(server.clone()).await;
    while start.elapsed() < length {
        tokio::time::sleep(Duration::from_secs(30)).await;
        let (at, rss) = (
            start.elapsed().as_secs_f64() / 60.0,
            server.rss_kib() as f64 / 1024.0,
        );
        eprintln!("soak: {at:.1} min, RSS {rss:.1} MiB");
        samples.push((at, rss));
    }
    for client in clients {
        client.await?;
    }
    let last_held = held(server.clone()).await;
    let (sent, failed) = (sent.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    let (thirds, rss_start, rss_end, gauges) = summary(&samples, minutes, &first_held, &last_held);
    Ok(vec![
        Row::new(
            "q. soak, RSS growth in the last third",
            &format!("{CLIENTS} clients, {USERS} users, {minutes} min; {sent} requests, {failed} failed"),
            format!(
                "{:.2} MiB/min (thirds: {:.2}, {:.2}, {:.2}); RSS {rss_start:.0} -> {rss_end:.0} MiB",
                thirds[2], thirds[0], thirds[1], thirds[2]
            ),
        )
        .target("< 1 MiB a minute", thirds[2] < 1.0),
        Row::new("q. soak, what the server says it holds", "start -> end", gauges),
    ])
}

/// The RSS slope of each third (MiB a minute), the RSS at the start and the end, and the
/// gauges' moves.
fn summary(
    samples: &[(f64, f64)],
    minutes: u64,
    first_held: &[(&str, f64)],
    last_held: &[(&str, f64)],
) -> ([f64; 3], f64, f64, String) {
    // A least-squares slope over each third's samples: RSS moves in bursts (a big batch, the
    // allocator returning pages), which a slope between two samples would take for growth.
    let slope = |from: f64, to: f64| {
        let inside: Vec<(f64, f64)> = samples
            .iter()
            .copied()
            .filter(|(t, _)| *t >= from && *t <= to)
            .collect();
        let n = inside.len() as f64;
        let (mx, my) = inside
            .iter()
            .fold((0.0, 0.0), |(x, y), (t, r)| (x + t / n, y + r / n));
        let (sxy, sxx) = inside.iter().fold((0.0, 0.0), |(sxy, sxx), (t, r)| {
            (sxy + (t - mx) * (r - my), sxx + (t - mx) * (t - mx))
        });
        if sxx > 0.0 {
            sxy / sxx
        } else {
            0.0
        }
    };
    let m = minutes as f64;
    let thirds = [
        slope(0.0, m / 3.0),
        slope(m / 3.0, 2.0 * m / 3.0),
        slope(2.0 * m / 3.0, m),
    ];
    let (rss_start, rss_end) = (samples[0].1, samples.last().map_or(0.0, |s| s.1));
    let gauges = first_held
        .iter()
        .zip(last_held)
        .map(
            |((name, a), (_, b))| match name.contains("count") || name.contains("cached") {
                true => format!("{name} {a:.0} -> {b:.0}"),
                false => format!("{name} {:.1} -> {:.1} MiB", a / 1048576.0, b / 1048576.0),
            },
        )
        .collect::<Vec<_>>()
        .join("; ");
    (thirds, rss_start, rss_end, gauges)
}
