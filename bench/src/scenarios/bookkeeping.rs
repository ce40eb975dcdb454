//! (l) the log's bookkeeping queries on the loaded graph: the held-events count, a reader's
//! lag (caught up, and at the start of the log) and `ahead`, each timed over repeated looks,
//! once with nothing held and once with more events held above the horizon than the count
//! reads one by one. They must not grow with the log (issue 30). Meanwhile `/metrics` is
//! scraped: it answers from memory, so neither the log's size nor the held horizon reaches it.

use std::time::{Duration, Instant};

use relations_store::log::{self, COUNTED};
use relations_store::LogPosition;
use sqlx::PgPool;

use crate::graph;
use crate::harness::{client, Row, Server};

/// Looks per measure.
const LOOKS: usize = 30;

/// Times each bookkeeping query on a log of `events`, then again while a transaction holds the
/// horizon with more than [`COUNTED`] committed events above it.
pub async fn bookkeeping(server: &Server, pool: &PgPool, events: u64) -> anyhow::Result<Vec<Row>> {
    let mut rows = looks(pool, events, "nothing held").await?;
    rows.push(scrapes(server, events, "nothing held").await?);
    let mut holder = pool.begin().await?;
    sqlx::query("SELECT pg_current_xact_id()")
        .execute(&mut *holder)
        .await?;
    let authors: Vec<i64> = (1..=COUNTED * 2).collect();
    let keys = crate::harness::keyring(pool)?;
    relations_store::bulk::append_posts(pool, &keys, &authors).await?;
    let held = format!("{} events held", authors.len());
    rows.extend(looks(pool, events, &held).await?);
    rows.push(scrapes(server, events, &held).await?);
    holder.rollback().await?;
    graph::caught_up(pool, &[relations_projections::relations::NAME]).await?;
    Ok(rows)
}

/// One row per query: p50 and max over [`LOOKS`] looks.
async fn looks(pool: &PgPool, events: u64, held: &str) -> anyhow::Result<Vec<Row>> {
    let head = log::head(pool).await?;
    let mut rows = Vec::new();
    for (name, which) in [
        ("held events (count)", Query::Held),
        ("lag of a caught-up reader", Query::Lag(head)),
        (
            "lag of a reader at the start",
            Query::Lag(LogPosition::START),
        ),
        ("ahead of a caught-up reader", Query::Ahead(head)),
    ] {
        let mut took = Vec::with_capacity(LOOKS);
        for _ in 0..LOOKS {
            let started = Instant::now();
            which.run(pool).await?;
            took.push(started.elapsed());
        }
        took.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let (p50, max) = (ms(took[LOOKS / 2]), ms(took[LOOKS - 1]));
        rows.push(
            Row::new(
                "l. log bookkeeping",
                &format!("{name} on {events} events, {held}: p50/max"),
                format!("{p50:.2}/{max:.2} ms"),
            )
            .target("p50 < 10 ms at any log size", p50 < 10.0),
        );
    }
    Ok(rows)
}

/// `/metrics` scraped 500 times one after another: p50/p99/max.
async fn scrapes(server: &Server, events: u64, held: &str) -> anyhow::Result<Row> {
    let client = client();
    let mut took = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    for _ in 0..500 {
        let started = Instant::now();
        let response = client
            .get(format!("{}/metrics", server.base))
            .send()
            .await?;
        anyhow::ensure!(
            response.status().is_success(),
            "/metrics: {}",
            response.status()
        );
        response.bytes().await?;
        took.record(started.elapsed().as_micros().max(1) as u64)?;
    }
    let ms = |q: f64| took.value_at_quantile(q) as f64 / 1000.0;
    Ok(Row::new(
        "l. log bookkeeping",
        &format!("GET /metrics on {events} events, {held}: p50/p99/max"),
        format!(
            "{:.2}/{:.2}/{:.2} ms",
            ms(0.5),
            ms(0.99),
            took.max() as f64 / 1000.0
        ),
    )
    .target("p99 < 50 ms", ms(0.99) < 50.0))
}

/// A bookkeeping query.
#[derive(Clone, Copy)]
enum Query {
    Held,
    Lag(LogPosition),
    Ahead(LogPosition),
}

impl Query {
    async fn run(self, pool: &PgPool) -> Result<(), sqlx::Error> {
        match self {
            Query::Held => log::held(pool).await.map(drop),
            Query::Lag(at) => log::lag(pool, at).await.map(drop),
            Query::Ahead(at) => log::ahead(pool, at).await.map(drop),
        }
    }
}
