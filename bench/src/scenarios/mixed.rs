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
use crate::harness::{client, closed_loop, token, Env, Row, Server};

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

/// (g) the request mix at 64 clients, on the full graph of its own (follows, then one post per
/// user) with every projector running; first, how fast the projectors fold that graph.
pub async fn mixed(env: &Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let users = scale.graph_users;
    let db = "bench_mixed";
    let pool = env.fresh_database(db).await?;
    let events = graph::load_follows(&pool, &graph::follows(users, 11)).await?;
    let posts: Vec<i64> = (1..=users).collect();
    graph::load_posts(&pool, &posts).await?;
    let server = Server::start(env, db, 18084, &[], None).await?;
    let catch_up = catch_up(&pool, &server, events, users).await?;
    let tokens: Arc<Vec<String>> = Arc::new((1..=users).map(token).collect());
    let (client, base) = (client(), server.base.clone());
    let by_kind: Arc<Mutex<BTreeMap<&'static str, Histogram<u64>>>> = Arc::default();
    let recorded = by_kind.clone();
    let stats = closed_loop(64, scale.run * 2, move |_, i| {
        let (client, base, tokens) = (client.clone(), base.clone(), tokens.clone());
        let by_kind = recorded.clone();
        let (user, other, mut pick) = {
            let mut rng = rand::rng();
            (
                rng.random_range(1..=users),
                rng.random_range(1..=users),
                rng.random_range(0..100u32),
            )
        };
        let batch = read_path("batch of 20", users);
        async move {
            let token = &tokens[(user - 1) as usize];
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
            let url = |path: String| format!("{base}{path}");
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
                read => client.get(url(read_of(read, user, other, &batch))),
            };
            // Refusals the rules make (a follow of someone who blocks you, the follow limit)
            // are answers too; only 5xx and transport errors count as failures.
            let began = Instant::now();
            let ok = request
                .send()
                .await
                .is_ok_and(|r| !r.status().is_server_error());
            let micros = began.elapsed().as_micros().max(1) as u64;
            let mut by_kind = by_kind.lock().expect("not poisoned");
            let histogram = by_kind.entry(kind).or_insert_with(|| {
                Histogram::new_with_bounds(1, 60_000_000, 3).expect("bounds are valid")
            });
            let _ = histogram.record(micros);
            ok
        }
    })
    .await;
    let by_kind = by_kind.lock().expect("not poisoned");
    mix_rows(catch_up, users, &stats, &by_kind)
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

/// The mix's rows: the catch-up, the rate, and the p99 by request kind.
fn mix_rows(
    catch_up: Row,
    users: i64,
    stats: &crate::harness::Stats,
    by_kind: &BTreeMap<&'static str, Histogram<u64>>,
) -> anyhow::Result<Vec<Row>> {
    let p99s: Vec<String> = MIX
        .iter()
        .filter_map(|(kind, _)| {
            let h = by_kind.get(kind)?;
            Some(format!(
                "{kind} {:.1}",
                h.value_at_quantile(0.99) as f64 / 1000.0
            ))
        })
        .collect();
    Ok(vec![
        catch_up,
        Row::new(
            &format!("g. LinkBench-style mix, 64 clients, {users} users"),
            "50% list pages, 18% relation checks, 12% counts, 10% follow/unfollow, 4% posts, 6% feed pages",
            rate(stats),
        )
        .target(
            ">= 5x round 2's 2,044/s, p99 < 15 ms",
            stats.per_sec() >= 5.0 * 2044.0 && stats.ms(0.99) < 15.0,
        ),
        Row::new(
            &format!("g. LinkBench-style mix, 64 clients, {users} users"),
            "p99 by request kind, ms",
            p99s.join(", "),
        ),
    ])
}
