//! (d) rebuild throughput vs COPY of the same rows.

use std::process::Command;
use std::time::Instant;

use super::Scale;
use crate::graph;
use crate::harness::{Env, Row};

/// (d) rebuild of `following` from the log vs COPY of the same rows into a table shaped like
/// `rm_follows`.
pub async fn rebuild(env: &Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let db = "bench_rebuild";
    let pool = env.fresh_database(db).await?;
    let edges = graph::follows(scale.rebuild_users, 7);
    let events = graph::load_follows(&pool, &edges).await?;
    eprintln!("rebuild: {events} events appended");
    let started = Instant::now();
    let status = Command::new(&env.bin)
        .args(["rebuild", relations_projections::following::NAME])
        .env("DATABASE_URL", env.url(db))
        .env("RUST_LOG", "warn")
        .stderr(std::process::Stdio::null())
        .status()?;
    anyhow::ensure!(status.success(), "relations rebuild failed");
    let rebuild = started.elapsed();
    // COPY: the same follow rows, into a table with rm_follows' columns and indexes.
    sqlx::query("CREATE TABLE b_copy (LIKE rm_follows INCLUDING ALL)")
        .execute(&pool)
        .await?;
    let mut csv = String::with_capacity(edges.len() * 40);
    for (a, b) in &edges {
        csv.push_str(&format!("{a},{b},2026-11-22 00:00:00+00\n"));
    }
    let started = Instant::now();
    let mut conn = pool.acquire().await?;
    let mut copy = conn
        .copy_in_raw("COPY b_copy (follower, followee, since) FROM STDIN (FORMAT csv)")
        .await?;
    copy.send(csv.as_bytes()).await?;
    copy.finish().await?;
    let copied = started.elapsed();
    let rate = events as f64 / rebuild.as_secs_f64();
    let copy_rate = edges.len() as f64 / copied.as_secs_f64();
    Ok(vec![Row::new(
        &format!("d. rebuild `following`, {events} events"),
        "events folded per second (shadow tables, swap included)",
        format!("{rate:.0}/s ({:.1} s)", rebuild.as_secs_f64()),
    )
    .against(
        format!(
            "COPY of the same rows: {copy_rate:.0}/s ({:.1} s)",
            copied.as_secs_f64()
        ),
        rate / copy_rate,
    )
    .target(
        ">= 200k events/s and >= 0.5x COPY",
        rate >= 200_000.0 && rate / copy_rate >= 0.5,
    )])
}
