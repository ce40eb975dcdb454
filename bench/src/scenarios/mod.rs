//! The scenarios of BENCHMARKS.md, one file each, named as the table names them: (a)
//! `follow_commands`, (b) `reads`, (c) `lag`, (d) `rebuild`, (e) `feed`, (f) `memory`, (g)
//! `mixed`, (h) `insights`, (i) `engagement`, (j) `stream`, (k) `failover`. (a), (b), (c) and (f) share one loaded graph ([`graph_scenarios`]).

mod engagement;
mod failover;
mod feed;
mod follow_commands;
mod insights;
mod lag;
mod memory;
mod mixed;
mod reads;
mod rebuild;
mod stream;

use std::time::{Duration, Instant};

use crate::graph;
use crate::harness::{Env, Row, Server, Stats};

pub use engagement::engagement;
pub use failover::failover;
pub use feed::feed;
pub use insights::insights;
pub use mixed::mixed;
pub use rebuild::rebuild;
pub use stream::stream;

/// How big and how long.
#[derive(Debug, Clone, Copy)]
pub struct Scale {
    graph_users: i64,
    rebuild_users: i64,
    run: Duration,
    lag_rate: u32,
    lag_for: Duration,
    feed_posts_per_author: usize,
    feed_readers: i64,
}

impl Scale {
    pub fn quick() -> Self {
        Self {
            graph_users: 3_000,
            rebuild_users: 8_000,
            run: Duration::from_millis(1500),
            lag_rate: 300,
            lag_for: Duration::from_secs(3),
            feed_posts_per_author: 1,
            feed_readers: 2,
        }
    }

    pub fn full() -> Self {
        Self {
            graph_users: 50_000,
            rebuild_users: 120_000,
            run: Duration::from_secs(8),
            lag_rate: 1000,
            lag_for: Duration::from_secs(10),
            feed_posts_per_author: 10,
            feed_readers: 20,
        }
    }

    /// The same scale on a graph of `users` (the rebuild graph 2.4 times as large).
    pub fn with_users(self, users: i64) -> Self {
        Self {
            graph_users: users,
            rebuild_users: users * 12 / 5,
            ..self
        }
    }
}

/// (a), (b), (c) and (f), on one loaded graph.
pub async fn graph_scenarios(
    env: &Env,
    scale: Scale,
    wanted: &impl Fn(char) -> bool,
    profile: Option<&str>,
) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    let db = "bench_graph";
    let pool = env.fresh_database(db).await?;
    let edges = graph::follows(scale.graph_users, 42);
    let loaded = Instant::now();
    let events = graph::load_follows(&pool, &edges).await?;
    eprintln!(
        "graph: {events} follow events appended in {:.1} s",
        loaded.elapsed().as_secs_f64()
    );
    // The relation scenarios need `following`; it runs in a projector process of its own, as
    // deployed, so the feed's projectors stay out of these figures.
    let server = Server::start(
        env,
        db,
        18081,
        &[],
        Some(&[relations_projections::following::NAME]),
    )
    .await?;
    let took = graph::caught_up(&pool, &[relations_projections::following::NAME]).await?;
    let graph_took = server.graph_caught_up(&pool).await?;
    eprintln!(
        "graph: the server's in-memory graph caught up {:.1} s after the projector",
        graph_took.as_secs_f64()
    );
    rows.push(Row::new(
        "graph",
        &format!(
            "{} users, {events} follows: projectors caught up",
            scale.graph_users
        ),
        format!(
            "{:.1} s ({:.0} events/s)",
            took.as_secs_f64(),
            events as f64 / took.as_secs_f64()
        ),
    ));
    if wanted('b') {
        rows.extend(reads::reads(&server, env, db, scale).await?);
    }
    let mut maximum = None;
    if wanted('a') {
        let (measured, rate) =
            follow_commands::follow_commands(&server, env, db, scale, profile).await?;
        rows.extend(measured);
        maximum = Some(rate);
    }
    if wanted('c') {
        rows.extend(lag::lag(&server, &pool, scale.lag_rate, scale.lag_for, 0).await?);
        // And at 70% of the follow rate (a) measured, when it ran.
        if let Some(maximum) = maximum {
            let rate = (maximum * 0.7) as u32;
            rows.extend(lag::lag(&server, &pool, rate, scale.lag_for, 1).await?);
        }
    }
    if wanted('f') {
        rows.extend(memory::memory(&server, &pool).await?);
    }
    Ok(rows)
}

/// A closed loop's rate, latency quantiles and errors, as the table shows them.
fn rate(stats: &Stats) -> String {
    format!(
        "{:.0}/s, {}{}",
        stats.per_sec(),
        stats.quantiles(),
        if stats.errors > 0 {
            format!(", {} errors", stats.errors)
        } else {
            String::new()
        }
    )
}
