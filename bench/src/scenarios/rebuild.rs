//! (d) rebuild throughput vs COPY of the same rows.

use std::process::Command;
use std::time::{Duration, Instant};

use sqlx::PgPool;

use super::scale::Scale;
use crate::graph;
use crate::harness::{Env, Row};

/// (d) rebuilds of `following`, `feed` and `notifications` from the log (the graph's follows, then one post per
/// user) vs COPY of the follow rows into a table shaped like `rm_follows`.
pub async fn rebuild(env: &Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let db = "bench_rebuild";
    let pool = env.fresh_database(db).await?;
    let (edges, follows, posts) = match scale.world() {
        // The world's log: its follows (seed 42) and a post per user.
        Some(users) => {
            let edges = graph::follows(users, 42);
            let follows = edges.len() as u64;
            (edges, follows, users as u64)
        }
        None => {
            let edges = graph::follows(scale.rebuild_users, 7);
            let follows = graph::load_follows(&pool, &edges).await?;
            let authors: Vec<i64> = (1..=scale.rebuild_users).collect();
            let posts = graph::load_posts(&pool, &authors).await?;
            eprintln!("rebuild: {follows} follows and {posts} posts appended");
            (edges, follows, posts)
        }
    };
    let copy_rate = copy_rate(&pool, &edges).await?;
    let mut rows = Vec::new();
    // Each with its target: issue 43 asks the feed's at 0.8x COPY, and `notifications` (not
    // yet a bulk fold) at 100k events/s.
    let events = follows + posts;
    let targets: [(&str, &str, f64, f64); 3] = [
        (
            relations_projections::relations::NAME,
            ">= 200k events/s and >= 0.5x COPY",
            200_000.0,
            0.5,
        ),
        (
            relations_projections::feed::NAME,
            ">= 200k events/s and >= 0.8x COPY",
            200_000.0,
            0.8,
        ),
        (
            relations_projections::notifications::NAME,
            ">= 100k events/s",
            100_000.0,
            0.0,
        ),
    ];
    for (name, target, least, share) in targets {
        let took = run_rebuild(env, db, name)?;
        let rate = events as f64 / took.as_secs_f64();
        rows.push(
            Row::new(
                &format!("d. rebuild `{name}`, {events} events"),
                "events folded per second (shadow tables, swap included)",
                format!("{rate:.0}/s ({:.1} s)", took.as_secs_f64()),
            )
            .against(
                format!("COPY of the follow rows: {copy_rate:.0}/s"),
                rate / copy_rate,
            )
            .target(target, rate >= least && rate / copy_rate >= share),
        );
    }
    Ok(rows)
}

/// Runs `relations rebuild NAME` on `db`; how long it took.
pub(super) fn run_rebuild(env: &Env, db: &str, name: &str) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let status = Command::new(&env.bin)
        .args(["rebuild", name])
        .env("DATABASE_URL", env.url(db))
        .env("RELATIONS_MASTER_KEY", crate::harness::MASTER_KEY)
        .env("RUST_LOG", "warn")
        .stderr(std::process::Stdio::null())
        .status()?;
    anyhow::ensure!(status.success(), "relations rebuild {name} failed");
    Ok(started.elapsed())
}

/// COPY of the follow rows into one plain table of follows with a key and a followers index
/// (`rm_follows` as it was before issue 48 split it, so the ratios stay comparable with the
/// earlier rounds'): rows per second.
async fn copy_rate(pool: &PgPool, edges: &[(i64, i64)]) -> anyhow::Result<f64> {
    for sql in [
        "CREATE TABLE b_copy (follower bigint NOT NULL, followee bigint NOT NULL,
                              since timestamptz NOT NULL, PRIMARY KEY (follower, followee))",
        "CREATE INDEX b_copy_by_followee ON b_copy (followee, since DESC, follower DESC)",
    ] {
        sqlx::query(sql).execute(pool).await?;
    }
    let mut csv = String::with_capacity(edges.len() * 40);
    for (a, b) in edges {
        csv.push_str(&format!("{a},{b},2026-11-22 00:00:00+00\n"));
    }
    let started = Instant::now();
    let mut conn = pool.acquire().await?;
    let mut copy = conn
        .copy_in_raw("COPY b_copy (follower, followee, since) FROM STDIN (FORMAT csv)")
        .await?;
    copy.send(csv.as_bytes()).await?;
    copy.finish().await?;
    Ok(edges.len() as f64 / started.elapsed().as_secs_f64())
}
