//! (g) a LinkBench-style request mix over HTTP with every projector running.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use hdrhistogram::Histogram;
use rand::Rng;

use super::reads::read_path;
use super::scale::Scale;
use crate::graph;
use crate::harness::rate;
use crate::harness::{client, closed_loop, open_loop, token, Env, Row, Server};

/// The LinkBench-style mix, in shares of 100: list pages, relation checks, counts, follows and
/// unfollows, posts, feed reads.
const MIX: [(&str, u32); 8] = [
    ("following page", 25),
    ("followers page", 25),
    ("status", 10),
    ("batch of 20", 8),
    ("counts", 12),
    ("follow/unfollow", 10),
    ("post", 4),
    ("feed page", 6),
];

/// Latency histograms by request kind.
type ByKind = Arc<Mutex<BTreeMap<&'static str, Histogram<u64>>>>;

/// What a request of the mix needs: the server, every user's token.
#[derive(Clone)]
struct Mix {
    client: reqwest::Client,
    base: String,
    tokens: Arc<Vec<String>>,
    users: i64,
    by_kind: ByKind,
}

impl Mix {
    /// Request `i` of the mix (a random kind, user and other user), timed from `since` into
    /// its kind's histogram; whether the service answered (refusals the rules make, like a
    /// follow of someone who blocks you, are answers; only 5xx and transport errors fail).
    fn request(&self, i: u64, since: Instant) -> impl std::future::Future<Output = bool> + Send {
        let (users, mut pick) = (self.users, rand::rng().random_range(0..100u32));
        let (user, other) = {
            let mut rng = rand::rng();
            (rng.random_range(1..=users), rng.random_range(1..=users))
        };
        let kind = MIX
            .iter()
            .find(|(_, share)| {
                if pick < *share {
                    true
                } else {
                    pick -= share;
                    false
                }
            })
            .map_or("status", |m| m.0);
        let (client, token) = (&self.client, &self.tokens[(user - 1) as usize]);
        let url = |path: String| format!("{}{path}", self.base);
        let request = match kind {
            "follow/unfollow" => {
                let verb = if i % 2 == 0 { "follow" } else { "unfollow" };
                client
                    .post(url(format!("/api/v1/relation/{verb}")))
                    .bearer_auth(token)
                    .json(&serde_json::json!({"target": other}))
            }
            "post" => client
                .post(url("/api/v1/posts".to_owned()))
                .bearer_auth(token)
                .json(&serde_json::json!({"content": "mixed workload"})),
            "feed page" => client
                .get(url("/api/v1/feed".to_owned()))
                .bearer_auth(token),
            read => client.get(url(read_of(
                read,
                user,
                other,
                &read_path("batch of 20", users),
            ))),
        };
        let by_kind = self.by_kind.clone();
        async move {
            let ok = request
                .send()
                .await
                .is_ok_and(|r| !r.status().is_server_error());
            let micros = since.elapsed().as_micros().max(1) as u64;
            let mut by_kind = by_kind.lock().expect("not poisoned");
            let histogram = by_kind.entry(kind).or_insert_with(|| {
                Histogram::new_with_bounds(1, 60_000_000, 3).expect("bounds are valid")
            });
            let _ = histogram.record(micros);
            ok
        }
    }

    /// The histograms so far, emptied.
    fn take(&self) -> BTreeMap<&'static str, Histogram<u64>> {
        std::mem::take(&mut *self.by_kind.lock().expect("not poisoned"))
    }
}

/// (g) the request mix on the full graph (follows, then one post per user) with every
/// projector running: first how fast the projectors fold that graph (unless it is a copy of the
/// world, folded already), then 64 clients back to back (saturated), then an open loop at half
/// the saturated rate, timed from each request's scheduled start (coordinated omission
/// corrected, as wrk2 does).
pub async fn mixed(env: &Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let users = scale.graph_users;
    let db = "bench_mixed";
    let pool = env.fresh_database(db).await?;
    let events = match scale.world() {
        Some(_) => None,
        None => {
            let events = graph::load_follows(&pool, &graph::follows(users, 11)).await?;
            let posts: Vec<i64> = (1..=users).collect();
            graph::load_posts(&pool, &posts).await?;
            Some(events)
        }
    };
    let server = Server::start(env, db, 18084, &[], None).await?;
    let mut rows = Vec::new();
    match events {
        Some(events) => rows.push(catch_up(&pool, &server, events, users).await?),
        None => drop(server.graph_caught_up(&pool).await?),
    }
    let mix = Mix {
        client: client(),
        base: server.base.clone(),
        tokens: Arc::new((1..=users).map(token).collect()),
        users,
        by_kind: Arc::default(),
    };
    let saturated = {
        let mix = mix.clone();
        closed_loop(64, scale.run * 2, move |_, i| {
            mix.request(i, Instant::now())
        })
        .await
    };
    let mut saturated_rows = mix_rows("64 clients, saturated", users, &saturated, &mix.take());
    saturated_rows[0] = saturated_rows[0].clone().target(
        ">= 5x round 2's 2,044/s",
        saturated.per_sec() >= 5.0 * 2044.0,
    );
    rows.extend(saturated_rows);
    let rate = saturated.per_sec() / 2.0;
    let fixed = {
        let mix = mix.clone();
        open_loop(rate, scale.run * 2, move |i, scheduled| {
            mix.request(i, scheduled)
        })
        .await
    };
    rows.extend(mix_rows(
        &format!("open loop at {rate:.0}/s (half the saturated rate)"),
        users,
        &fixed,
        &mix.take(),
    ));
    let share = "g. feed pages of the mix answered from memory";
    rows.push(super::feed::memory_share(&server, share, "both runs").await);
    rows.push(memory(&server).await?);
    Ok(rows)
}

/// What one instance running every projector holds after the mix: its resident memory, and
/// of it the in-memory graph and the command executors' stream caches (their own estimates).
async fn memory(server: &Server) -> anyhow::Result<Row> {
    let mib = |bytes: f64| bytes / 1048576.0;
    // Not yet published (a replica still loading) reads as 0 rather than losing the mix's rows.
    let graph = server.metric("relations_graph_bytes").await.unwrap_or(0.0);
    let streams = server.metric_sum("relations_stream_cache_streams").await?;
    let cached = server.metric_sum("relations_stream_cache_bytes").await?;
    let posts = server
        .metric("relations_feed_memory_posts")
        .await
        .unwrap_or(0.0);
    let held = server
        .metric("relations_feed_memory_bytes")
        .await
        .unwrap_or(0.0);
    Ok(Row::new(
        "g. memory per instance, after the mix",
        "RSS; of it the graph, the posts held for the feed and the stream caches (estimates); the rest: feed stream hub, pools, allocator",
        format!(
            "RSS {:.0} MiB; graph {:.0} MiB; posts held {:.1} MiB ({posts:.0} posts); stream caches {:.1} MiB ({streams:.0} streams)",
            server.rss_kib() as f64 / 1024.0,
            mib(graph),
            mib(held),
            mib(cached)
        ),
    ))
}

/// The path of a read of the mix: `kind` for `user` (and `other`, for a status).
fn read_of(kind: &str, user: i64, other: i64, batch: &str) -> String {
    match kind {
        "following page" => format!("/api/v1/users/{user}/following"),
        "followers page" => format!("/api/v1/users/{user}/followers"),
        "batch of 20" => batch.to_owned(),
        "counts" => format!("/api/v1/users/{user}/counts"),
        _ => format!("/api/v1/relation/status?from={user}&to={other}"),
    }
}

/// How fast the projectors fold the loaded graph: both at once (as a fresh deployment would);
/// the feed's time is the row.
async fn catch_up(
    pool: &sqlx::PgPool,
    server: &Server,
    events: u64,
    users: i64,
) -> anyhow::Result<Row> {
    let took = graph::caught_up(pool, &[relations_projections::feed::NAME]).await?;
    graph::caught_up(pool, &[relations_projections::relations::NAME]).await?;
    server.graph_caught_up(pool).await?;
    let folded = events + users as u64;
    Ok(Row::new(
        "g. feed projector catch-up",
        &format!("{events} follows and {users} posts, fan-out included (beside `following`)"),
        format!(
            "{:.0} events/s ({:.1} s)",
            folded as f64 / took.as_secs_f64(),
            took.as_secs_f64()
        ),
    )
    .target(
        ">= 10,000 events/s",
        folded as f64 / took.as_secs_f64() >= 10_000.0,
    ))
}

/// The mix's rows at one load: the rate and quantiles, and p50/p99/p999 by request kind.
fn mix_rows(
    load: &str,
    users: i64,
    stats: &crate::harness::Stats,
    by_kind: &BTreeMap<&'static str, Histogram<u64>>,
) -> Vec<Row> {
    let ms = |h: &Histogram<u64>, q: f64| h.value_at_quantile(q) as f64 / 1000.0;
    let by_kind: Vec<String> = MIX
        .iter()
        .filter_map(|(kind, _)| {
            let h = by_kind.get(kind)?;
            Some(format!(
                "{kind} {:.1}/{:.1}/{:.1}",
                ms(h, 0.5),
                ms(h, 0.99),
                ms(h, 0.999)
            ))
        })
        .collect();
    let scenario = format!("g. LinkBench-style mix, {load}, {users} users");
    let mut rows = vec![
        Row::new(
            &scenario,
            "50% list pages, 18% relation checks, 12% counts, 10% follow/unfollow, 4% posts, 6% feed pages",
            rate(stats),
        ),
        Row::new(&scenario, "p50/p99/p999 by request kind, ms", by_kind.join(", ")),
    ];
    if !stats.send_lag.is_empty() {
        let lag = &stats.send_lag;
        rows.push(Row::new(
            &scenario,
            "the load generator's own lag (scheduled time to the start of its send; inside every latency above), p50/p99/p999",
            format!(
                "{:.2}/{:.2}/{:.2} ms",
                ms(lag, 0.5),
                ms(lag, 0.99),
                ms(lag, 0.999)
            ),
        ));
    }
    rows
}
