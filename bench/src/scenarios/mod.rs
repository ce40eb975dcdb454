//! The scenarios of BENCHMARKS.md, one file each, named as the table names them: (a)
//! `follow_commands`, (b) `reads`, (c) `lag`, (d) `rebuild`, (e) `feed`, (f) `memory`, (g)
//! `mixed`, (h) `insights`, (i) `engagement`, (j) `stream`, (k) `read_pool`, (l)
//! `bookkeeping`, (m) `failover`, (n) `erasure`, (o) `replay`, (p) `notifications`, (q) `soak`, (r) `reposts`, (s) `ready`. (a), (b), (c), (f) and (l) share one loaded graph
//! ([`graph_scenarios`]).

mod bookkeeping;
mod engagement;
mod erasure;
mod failover;
mod feed;
mod follow_commands;
mod insights;
mod lag;
mod memory;
mod mixed;
mod notifications;
mod read_pool;
mod reads;
mod ready;
mod rebuild;
mod replay;
mod reposts;
mod scale;
mod soak;
mod stream;
mod world;

use crate::graph;
use crate::harness::{Env, Row, Server};

pub use engagement::engagement;
pub use erasure::erasure;
pub use failover::failover;
pub use feed::feed;
pub use insights::insights;
pub use mixed::mixed;
pub use notifications::notifications;
pub use read_pool::read_pool;
pub use ready::ready;
pub use rebuild::rebuild;
pub use replay::replay;
pub use reposts::reposts;
pub use scale::Scale;
pub use soak::soak;
pub use stream::stream;
use world::load_graph;
pub use world::{world, WORLD};

/// (a), (b), (c), (f) and (l), on one loaded graph.
pub async fn graph_scenarios(
    env: &Env,
    scale: Scale,
    wanted: &impl Fn(char) -> bool,
    profile: Option<&str>,
) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    let db = "bench_graph";
    let pool = env.fresh_database(db).await?;
    let events = load_graph(&pool, scale).await?;
    // The relation scenarios need `following`; it runs in a projector process of its own, as
    // deployed, so the feed's projectors stay out of these figures.
    let server = Server::start(
        env,
        db,
        18081,
        &[],
        Some(&[relations_projections::relations::NAME]),
    )
    .await?;
    let took = graph::caught_up(&pool, &[relations_projections::relations::NAME]).await?;
    let graph_took = server.graph_caught_up(&pool).await?;
    eprintln!(
        "graph: the server's in-memory graph caught up {:.1} s after the projector",
        graph_took.as_secs_f64()
    );
    // With a world, its rows say how long the fold took; this copy was folded already.
    if scale.world().is_none() {
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
    }
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
    if wanted('l') {
        rows.extend(bookkeeping::bookkeeping(&server, &pool, events).await?);
    }
    Ok(rows)
}
