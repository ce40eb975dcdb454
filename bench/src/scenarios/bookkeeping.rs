//! (l) the log's bookkeeping queries on the loaded graph: the held-events count, a reader's
//! lag (caught up, and at the start of the log) and `ahead`, each timed over repeated looks,
//! once with nothing held and once with more events held above the horizon than the count
//! reads one by one. They must not grow with the log (issue 30).

use std::time::{Duration, Instant};

use relations_store::log::{self, COUNTED};
use relations_store::LogPosition;
use sqlx::PgPool;

use crate::graph;
use crate::harness::Row;

/// Looks per measure.
const LOOKS: usize = 30;

/// Times each bookkeeping query on a log of `events`, then again while a transaction holds the
/// horizon with more than [`COUNTED`] committed events above it.
pub async fn bookkeeping(pool: &PgPool, events: u64) -> anyhow::Result<Vec<Row>> {
    let mut rows = looks(pool, events, "nothing held").await?;
    let mut holder = pool.begin().await?;
    sqlx::query("SELECT pg_current_xact_id()")
        .execute(&mut *holder)
        .await?;
    let authors: Vec<i64> = (1..=COUNTED * 2).collect();
    relations_store::bulk::append_posts(pool, &authors).await?;
    rows.extend(looks(pool, events, &format!("{} events held", authors.len())).await?);
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
