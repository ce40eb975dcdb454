//! (s) an instance ready after start, and graph bytes per follow (issue 48, item 2): a
//! `relations serve` started on the graph (the world's with `--users`) until its replica is
//! whole in memory and caught up with the log: once loaded from the read models (writing its
//! graph's snapshot), then once more from that snapshot. The graph's bytes per follow are the
//! second instance's own count of its heap, beside its RSS.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::scale::Scale;
use super::world::load_graph;
use crate::harness::{Env, Row, Server};

/// The rows of (s).
pub async fn ready(env: &Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let db = "bench_ready";
    let pool = env.fresh_database(db).await?;
    let follows = load_graph(&pool, scale).await?;
    if scale.world().is_none() {
        // Folded once by a server's projectors first, as a world is.
        let server = Server::start(env, db, 18093, &[], None).await?;
        server.graph_caught_up(&pool).await?;
    }
    let dir = PathBuf::from(format!("target/bench/snapshot-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let extra = [("RELATIONS_GRAPH_SNAPSHOT_DIR", dir.display().to_string())];
    let (first, from_models) = start(env, db, &pool, 18094, &extra).await?;
    let file = dir.join("graph.snapshot");
    let waited = Instant::now();
    while !file.exists() {
        anyhow::ensure!(waited.elapsed() < Duration::from_secs(300), "no snapshot");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Whole once renamed into place; the writer's temporary file goes with the directory.
    let snapshot = std::fs::metadata(&file)?.len();
    let loaded = first.metric("relations_graph_bytes").await?;
    drop(first);
    let (second, from_snapshot) = start(env, db, &pool, 18095, &extra).await?;
    let graph = second.metric("relations_graph_bytes").await?;
    let held = second.metric("relations_graph_follows").await?;
    let rss = second.rss_kib() as f64 * 1024.0;
    drop(second);
    let _ = std::fs::remove_dir_all(&dir);
    let scenario = format!("s. instance ready after start ({follows} follow events)");
    let per = |bytes: f64| bytes / held.max(1.0);
    Ok(vec![
        Row::new(
            &scenario,
            "from its graph's snapshot: start to the replica whole and caught up",
            format!(
                "{:.1} s (snapshot {:.0} MiB)",
                from_snapshot.as_secs_f64(),
                snapshot as f64 / 1048576.0
            ),
        )
        .against(
            format!("from the read models: {:.1} s", from_models.as_secs_f64()),
            from_models.as_secs_f64() / from_snapshot.as_secs_f64().max(0.001),
        )
        .target(
            "<= 10 s at 1M users",
            from_snapshot <= Duration::from_secs(10),
        ),
        Row::new(
            "s. graph bytes per follow",
            "the instance's count of its graph's heap (vectors, tables, mutes, preferences), restored from its snapshot",
            format!(
                "{:.1} B ({:.0} MiB for {held} follows)",
                per(graph),
                graph / 1048576.0
            ),
        )
        .target("<= 40 B", per(graph) <= 40.0),
        Row::new(
            "s. graph bytes per follow",
            "the same, in the first instance (loaded from the read models, not restored)",
            format!("{:.1} B ({:.0} MiB)", per(loaded), loaded / 1048576.0),
        )
        .target("<= 40 B", per(loaded) <= 40.0),
        Row::new(
            "s. graph bytes per follow",
            "the instance's whole RSS per follow (the graph, held posts, the rest)",
            format!("{:.0} B ({:.0} MiB)", per(rss), rss / 1048576.0),
        ),
    ])
}

/// A server started on `db` with no projectors of its own, once its replica is whole and
/// caught up; and how long that took from its start.
async fn start(
    env: &Env,
    db: &str,
    pool: &sqlx::PgPool,
    port: u16,
    extra: &[(&str, String)],
) -> anyhow::Result<(Server, Duration)> {
    let started = Instant::now();
    let server = Server::start(env, db, port, extra, Some(&[])).await?;
    server.graph_caught_up(pool).await?;
    Ok((server, started.elapsed()))
}
