//! `relations-bench`: every scenario of BENCHMARKS.md beside its baseline, measured in one run
//! on one machine. Runs the release `relations` binary against databases of its own
//! (`bench_*`, dropped and made anew) and the local Redis; prints one Markdown table.
//!
//! Scenarios: (a) follow commands vs the seed-000 design in SQL and vs raw single-row
//! INSERTs; (b) relation status, batch and list pages over HTTP vs the same reads in SQL and
//! vs a trivial axum handler; (c) projection lag under a sustained write rate; (d) rebuild
//! throughput vs COPY of the same rows; (e) feed fan-out and feed pages (hybrid vs pure push vs
//! pure pull, and Stream-Framework on the same Redis); (f) memory; (g) a LinkBench-style request
//! mix; (h) insights; (i) likes and comments; (j) the live feed; (k) the primary's CPU per read
//! with and without a hot standby serving reads (`DATABASE_READ_URL`); (l) the log's bookkeeping
//! queries; (m) the failover window on the HA PostgreSQL of `scripts/ha.sh`; (n) erasing a big
//! account; (o) the analysts' replay, Parquet against JSON lines; (p) notifications; (q) the
//! soak, memory under a steady mix (only when named). Each lives in
//! `scenarios/`, one file per scenario.

mod graph;
mod harness;
mod scenarios;

use std::time::Instant;

use clap::Parser;

use harness::Env;
use scenarios::Scale;

/// Benchmarks the relations service against its baselines.
#[derive(Debug, Parser)]
#[command(name = "relations-bench")]
struct Args {
    /// Every scenario at small scale (under three minutes).
    #[arg(long)]
    quick: bool,
    /// PostgreSQL admin URL; bench databases are made beside it.
    #[arg(
        long,
        env = "BENCH_DATABASE_URL",
        default_value = "postgres://postgres:postgres@127.0.0.1:5432/postgres"
    )]
    database_url: String,
    /// Redis.
    #[arg(
        long,
        env = "BENCH_REDIS_URL",
        default_value = "redis://127.0.0.1:6379"
    )]
    redis_url: String,
    /// The release `relations` binary.
    #[arg(
        long,
        env = "RELATIONS_BIN",
        default_value = "target/release/relations"
    )]
    bin: String,
    /// Python with stream-framework 1.4 and redis<3 (the Stream-Framework baseline); skipped
    /// with a note in the table when absent.
    #[arg(long, env = "BENCH_STREAM_FRAMEWORK_PYTHON")]
    stream_framework_python: Option<String>,
    /// Only these scenarios (letters a to s); all when empty but (q).
    #[arg(long)]
    only: Vec<char>,
    /// A world of this many users (about 12 follows each, LinkBench-shaped, and a post each),
    /// loaded and folded once; every scenario then runs on a copy of it, its own users numbered
    /// after the world's. (k) and (m) run on clusters of their own, only when named with
    /// --only. Without it, each scenario loads its own graph (3,000 users with --quick, else
    /// 50,000; the rebuild's 2.4 times as many).
    #[arg(long)]
    users: Option<i64>,
    /// With --users: copy the world a previous run left in `bench_world` instead of loading it
    /// again (the same N; a run at 1M spends half an hour loading and folding it).
    #[arg(long)]
    reuse_world: bool,
    /// (q) the soak's length, in minutes (it runs only when named with --only).
    #[arg(long, default_value_t = 15)]
    soak_minutes: u64,
    /// Record a system-wide `perf` profile into this file during the 64-client follow run.
    #[arg(long)]
    profile: Option<String>,
}

/// (n), (o), (p) and (r): the third and fourth rounds' scenarios, when wanted.
async fn round_four(env: &Env, scale: Scale, wanted: &impl Fn(char) -> bool, rows: &mut Collected) {
    if wanted('n') {
        rows.outcome("erasure", scenarios::erasure(env, scale).await);
    }
    if wanted('o') {
        rows.outcome("replay", scenarios::replay(env, scale).await);
    }
    if wanted('p') {
        rows.outcome("notifications", scenarios::notifications(env, scale).await);
    }
    if wanted('r') {
        rows.outcome("reposts", scenarios::reposts(env, scale).await);
    }
    if wanted('s') {
        rows.outcome("ready", scenarios::ready(env, scale).await);
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut env = Env {
        admin_url: args.database_url.clone(),
        redis_url: args.redis_url.clone(),
        bin: args.bin.clone(),
        world: None,
        last_copy: Default::default(),
    };
    let mut scale = if args.quick {
        Scale::quick()
    } else {
        Scale::full()
    };
    if let Some(users) = args.users {
        scale = scale.with_users(users);
    }
    let wanted = |c: char| args.only.is_empty() || args.only.contains(&c);
    let started = Instant::now();
    eprintln!("relations-bench: {scale:?}");
    let mut rows = Collected::default();
    rows.add("server", vec![server_settings(&args.database_url).await?]);
    match (args.reuse_world, scale.world()) {
        (true, Some(_)) => env.world = Some(scenarios::WORLD.to_owned()),
        _ => rows.add("world", scenarios::world(&mut env, scale).await?),
    }
    // (k) and (m) run on clusters of their own, whatever the world's size: only when named.
    let own_cluster = |c: char| scale.world().is_none() || args.only.contains(&c);
    if ['a', 'b', 'c', 'f', 'l'].into_iter().any(&wanted) {
        let graph = scenarios::graph_scenarios(&env, scale, &wanted, args.profile.as_deref());
        rows.outcome("a, b, c, f, l", graph.await);
    }
    if wanted('d') {
        rows.outcome("rebuild", scenarios::rebuild(&env, scale).await);
    }
    if wanted('e') {
        rows.outcome(
            "feed",
            scenarios::feed(&env, scale, args.stream_framework_python.as_deref()).await,
        );
    }
    if wanted('g') {
        rows.outcome("mixed", scenarios::mixed(&env, scale).await);
    }
    if wanted('h') {
        rows.outcome("insights", scenarios::insights(&env, scale).await);
    }
    if wanted('i') {
        rows.outcome("engagement", scenarios::engagement(&env, scale).await);
    }
    if wanted('j') {
        rows.outcome("stream", scenarios::stream(&env, scale).await);
    }
    round_four(&env, scale, &wanted, &mut rows).await;
    if args.only.contains(&'q') {
        rows.outcome("soak", scenarios::soak(&env, args.soak_minutes).await);
    }
    if wanted('k') && own_cluster('k') {
        rows.outcome("read_pool", scenarios::read_pool(&env, scale).await);
    }
    if wanted('m') && own_cluster('m') {
        rows.outcome("failover", scenarios::failover(&env).await);
    }
    println!("{}", harness::table(&rows.rows));
    println!("total bench time: {:.0} s", started.elapsed().as_secs_f64());
    anyhow::ensure!(
        rows.failed.is_empty(),
        "scenarios failed: {:?}",
        rows.failed
    );
    Ok(())
}

/// What of the PostgreSQL server's settings moves every figure: autovacuum above all. A
/// machine whose configuration turns it off (the CI image's does) lets every table that
/// churns (inboxes, guard rows, counters) keep its dead rows, and the soak found a feed
/// projector's trims running for 10 s on such tables, holding the log's horizon meanwhile.
async fn server_settings(admin_url: &str) -> anyhow::Result<harness::Row> {
    let pool = sqlx::PgPool::connect(admin_url).await?;
    let settings: Vec<(String, String)> = sqlx::query_as(
        "SELECT name, setting FROM pg_settings
          WHERE name IN ('autovacuum', 'fsync', 'synchronous_commit', 'shared_buffers')
          ORDER BY name",
    )
    .fetch_all(&pool)
    .await?;
    pool.close().await;
    let shown: Vec<String> = settings.iter().map(|(n, v)| format!("{n}={v}")).collect();
    Ok(harness::Row::new(
        "PostgreSQL settings of this run",
        "as the server reports them (production runs autovacuum on)",
        shown.join(", "),
    ))
}

/// The run's rows. Each scenario's are printed to stderr as it ends, so a run that dies later
/// keeps them; a scenario that fails is named at the end instead of ending the run (a 1M run
/// lost 35 minutes of figures to its last scenario's error).
#[derive(Default)]
struct Collected {
    rows: Vec<harness::Row>,
    failed: Vec<String>,
}

impl Collected {
    /// Adds a scenario's rows, printing them.
    fn add(&mut self, scenario: &str, rows: Vec<harness::Row>) {
        eprintln!("{scenario}: done\n{}", harness::table(&rows));
        self.rows.extend(rows);
    }

    /// Adds a scenario's rows, or records its failure.
    fn outcome(&mut self, scenario: &str, result: anyhow::Result<Vec<harness::Row>>) {
        match result {
            Ok(rows) => self.add(scenario, rows),
            Err(error) => {
                eprintln!("{scenario}: FAILED: {error:?}");
                self.failed.push(format!("{scenario}: {error:#}"));
            }
        }
    }
}
