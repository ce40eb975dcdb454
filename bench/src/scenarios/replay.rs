//! (o) the analysts' replay (issue 29): the same log written by `relations replay` as JSON
//! lines and as Parquet (`--format parquet --out DIR`), alternating in one run (two rounds,
//! the second kept): events per second and bytes per event of each, and their ratios. The log
//! is the graph's follows and a post per user (so the payload is polymorphic, content sealed
//! and opened), or the world's.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::scale::Scale;
use crate::graph;
use crate::harness::{Env, Row};

/// `relations replay ARGS` on `db`, stdout into `stdout`; how long it took.
fn run_replay(env: &Env, db: &str, args: &[&str], stdout: Stdio) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let status = Command::new(&env.bin)
        .arg("replay")
        .args(args)
        .env("DATABASE_URL", env.url(db))
        .env("RELATIONS_MASTER_KEY", crate::harness::MASTER_KEY)
        .env("RUST_LOG", "warn")
        .stdout(stdout)
        .stderr(Stdio::null())
        .status()?;
    anyhow::ensure!(status.success(), "relations replay {args:?} failed");
    Ok(started.elapsed())
}

/// The bytes of every file under `dir`.
fn bytes_under(dir: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        total += match entry.file_type()?.is_dir() {
            true => bytes_under(&entry.path())?,
            false => entry.metadata()?.len(),
        };
    }
    Ok(total)
}

/// One JSON lines replay, then one Parquet replay into a fresh directory and a second one
/// with nothing new: how long each took, and the bytes written.
struct Measured {
    json_took: Duration,
    json_bytes: f64,
    parquet_took: Duration,
    parquet_bytes: f64,
    incremental: Duration,
}

fn measure(env: &Env, db: &str, dir: &Path) -> anyhow::Result<Measured> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let lines = dir.join("log.jsonl");
    let json_took = run_replay(env, db, &[], Stdio::from(std::fs::File::create(&lines)?))?;
    let out = dir.join("parquet");
    let parquet = [
        "--format",
        "parquet",
        "--out",
        out.to_str().unwrap_or_default(),
    ];
    let parquet_took = run_replay(env, db, &parquet, Stdio::null())?;
    Ok(Measured {
        json_took,
        json_bytes: std::fs::metadata(&lines)?.len() as f64,
        parquet_took,
        parquet_bytes: bytes_under(&out)? as f64,
        incremental: run_replay(env, db, &parquet, Stdio::null())?,
    })
}

pub async fn replay(env: &Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let db = "bench_replay";
    let pool = env.fresh_database(db).await?;
    if scale.world().is_none() {
        graph::load_follows(&pool, &graph::follows(scale.graph_users, 42)).await?;
        graph::load_posts(&pool, &(1..=scale.graph_users).collect::<Vec<_>>()).await?;
    }
    let events = relations_store::log::footprint(&pool).await?.0 as f64;
    pool.close().await;
    let dir = Path::new("target/bench/replay");
    // Twice each, alternating, the second round kept: neither rides on the other's warm-up.
    measure(env, db, dir)?;
    let Measured {
        json_took,
        json_bytes,
        parquet_took,
        parquet_bytes,
        incremental: again,
    } = measure(env, db, dir)?;
    std::fs::remove_dir_all(dir)?;
    let rate = |took: Duration| events / took.as_secs_f64();
    let scenario = "o: analysts' replay";
    Ok(vec![
        Row::new(
            scenario,
            &format!("{events} events to Parquet (`--format parquet`, by day, Snappy): events/s"),
            format!(
                "{:.0} events/s ({:.1} s)",
                rate(parquet_took),
                parquet_took.as_secs_f64()
            ),
        )
        .against(
            format!(
                "JSON lines of the same log: {:.0} events/s ({:.1} s)",
                rate(json_took),
                json_took.as_secs_f64()
            ),
            rate(parquet_took) / rate(json_took),
        ),
        Row::new(
            scenario,
            "bytes per event, Parquet",
            format!(
                "{:.1} B ({:.1} MB)",
                parquet_bytes / events,
                parquet_bytes / 1e6
            ),
        )
        .against(
            format!(
                "JSON lines: {:.1} B ({:.1} MB)",
                json_bytes / events,
                json_bytes / 1e6
            ),
            parquet_bytes / json_bytes,
        ),
        Row::new(
            scenario,
            "a second Parquet run with nothing new (incremental: reads from `_position`)",
            format!("{:.2} s", again.as_secs_f64()),
        ),
    ])
}
