//! The harness: databases, the `relations` server as a child process, load drivers with
//! latency histograms, and the results table.

use std::future::Future;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use hdrhistogram::Histogram;
use sqlx::postgres::PgPoolOptions;
use sqlx::{Connection, PgConnection, PgPool};
use tokio::sync::Mutex;

/// Where the services are and which binary to run.
#[derive(Debug, Clone)]
pub struct Env {
    /// `postgres://.../postgres`: databases are made beside it.
    pub admin_url: String,
    /// Redis.
    pub redis_url: String,
    /// The `relations` binary (release).
    pub bin: String,
    /// The loaded world every fresh database copies, when the scenarios share one
    /// (`--users`).
    pub world: Option<String>,
    /// The last copy of the world: dropped when the next is made, so the disk holds two.
    pub last_copy: Arc<std::sync::Mutex<Option<String>>>,
}

impl Env {
    /// The URL of database `name`.
    pub fn url(&self, name: &str) -> String {
        let (base, _) = self.admin_url.rsplit_once('/').expect("a URL ends in /db");
        format!("{base}/{name}")
    }

    /// A fresh, migrated database `name`: a copy of the world when there is one (the copy
    /// before it dropped), else empty.
    pub async fn fresh_database(&self, name: &str) -> anyhow::Result<PgPool> {
        let mut admin = PgConnection::connect(&self.admin_url).await?;
        let previous = match &self.world {
            Some(_) => self
                .last_copy
                .lock()
                .expect("not poisoned")
                .replace(name.to_owned()),
            None => None,
        };
        // Copies an earlier process left (a run with --reuse-world) go too: the disk holds two.
        let mut stale: Vec<String> = match &self.world {
            Some(world) => sqlx::query_scalar(
                "SELECT datname::text FROM pg_database WHERE datname LIKE 'bench\\_%' AND datname <> $1",
            )
            .bind(world)
            .fetch_all(&mut admin)
            .await?,
            None => Vec::new(),
        };
        stale.extend(previous);
        for drop in stale.iter().map(String::as_str).chain([name]) {
            sqlx::query(&format!("DROP DATABASE IF EXISTS {drop} WITH (FORCE)"))
                .execute(&mut admin)
                .await?;
        }
        if let Some(world) = &self.world {
            let copied = Instant::now();
            sqlx::query(&format!(
                "CREATE DATABASE {name} TEMPLATE {world} STRATEGY FILE_COPY"
            ))
            .execute(&mut admin)
            .await?;
            eprintln!(
                "{name}: a copy of {world} in {:.1} s",
                copied.elapsed().as_secs_f64()
            );
            return self.pool(name, 8).await;
        }
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await?;
        let status = Command::new(&self.bin)
            .arg("migrate")
            .env("DATABASE_URL", self.url(name))
            .env("RELATIONS_MASTER_KEY", crate::harness::MASTER_KEY)
            .env("RUST_LOG", "warn")
            .status()
            .context("running relations migrate")?;
        anyhow::ensure!(status.success(), "relations migrate failed");
        self.pool(name, 8).await
    }

    /// A pool on database `name`, every connection opened before it is handed out (so a
    /// timed run never pays for connecting).
    pub async fn pool(&self, name: &str, size: u32) -> anyhow::Result<PgPool> {
        let pool = PgPoolOptions::new()
            .max_connections(size)
            .min_connections(size)
            .connect(&self.url(name))
            .await?;
        let held: Vec<_> = futures::future::try_join_all((0..size).map(|_| pool.acquire())).await?;
        drop(held);
        Ok(pool)
    }
}

/// A `relations project` process running only projectors `names` on `database`.
pub fn spawn_projectors(env: &Env, database: &str, names: &[&str]) -> anyhow::Result<Child> {
    let mut command = Command::new(&env.bin);
    command.arg("project");
    for name in names {
        command.args(["--only", name]);
    }
    command
        .env("DATABASE_URL", env.url(database))
        .env("RELATIONS_MASTER_KEY", crate::harness::MASTER_KEY)
        .env("REDIS_URL", &env.redis_url)
        .env("RELATIONS_REDIS_PREFIX", format!("bench:{database}:"))
        .env("RELATIONS_DB_MAX_CONNECTIONS", "8")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .context("starting relations project")
}

/// `relations serve` on a database, as a child process (and its projectors, when they run in
/// a `relations project` process of their own).
pub struct Server {
    child: Child,
    projectors: Option<Child>,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
}

impl Server {
    /// Starts the server on `database` with extra environment, and waits until it is ready.
    /// With `projectors`, only those run, in a `relations project` process beside it (none,
    /// when the list is empty).
    pub async fn start(
        env: &Env,
        database: &str,
        port: u16,
        extra: &[(&str, String)],
        projectors: Option<&[&str]>,
    ) -> anyhow::Result<Self> {
        // BENCH_SERVER_WRAPPER (for example `heaptrack`) runs the server under a profiler.
        let mut command = match std::env::var("BENCH_SERVER_WRAPPER") {
            Ok(wrapper) if !wrapper.is_empty() => {
                let mut command = Command::new(wrapper);
                command.arg(&env.bin);
                command
            }
            _ => Command::new(&env.bin),
        };
        command
            .arg("serve")
            .env("RELATIONS_RUN_PROJECTORS", projectors.is_none().to_string())
            .env("DATABASE_URL", env.url(database))
            .env("RELATIONS_MASTER_KEY", crate::harness::MASTER_KEY)
            .env("REDIS_URL", &env.redis_url)
            .env("RELATIONS_REDIS_PREFIX", format!("bench:{database}:"))
            .env("RELATIONS_JWT_SECRET", SECRET)
            .env("RELATIONS_HTTP_ADDR", format!("127.0.0.1:{port}"))
            .env("RELATIONS_RATE_CAPACITY", "1000000000")
            .env("RELATIONS_RATE_REFILL_PER_SEC", "1000000")
            .env("RELATIONS_FOLLOW_LIMIT", "100000000")
            .env("RELATIONS_DB_MAX_CONNECTIONS", "32")
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        for (key, value) in extra {
            command.env(key, value);
        }
        let child = command.spawn().context("starting relations serve")?;
        let projectors = projectors
            .filter(|names| !names.is_empty())
            .map(|names| spawn_projectors(env, database, names))
            .transpose()?;
        let server = Self {
            child,
            projectors,
            base: format!("http://127.0.0.1:{port}"),
        };
        let client = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(response) = client.get(format!("{}/readyz", server.base)).send().await {
                if response.status().is_success() {
                    return Ok(server);
                }
            }
            anyhow::ensure!(Instant::now() < deadline, "the server never got ready");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the server's in-memory graph has loaded and reflects the whole log as it
    /// stands now (its relation reads are answered from it). Until the replica has loaded,
    /// reads are answered by PostgreSQL, so a `min_position` read alone would not wait for it:
    /// its gauges appear once it has.
    pub async fn graph_caught_up(&self, pool: &sqlx::PgPool) -> anyhow::Result<Duration> {
        let start = Instant::now();
        while self.metric("relations_graph_users").await.is_err() {
            anyhow::ensure!(
                start.elapsed() < Duration::from_secs(1800),
                "the graph never loaded"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let head = relations_store::log::head(pool).await?;
        let client = reqwest::Client::new();
        let url = format!(
            "{}/api/v1/relation/status?from=1&to=2&min_position={head}",
            self.base
        );
        while !client.get(&url).send().await?.status().is_success() {
            anyhow::ensure!(
                start.elapsed() < Duration::from_secs(1800),
                "the graph never caught up"
            );
        }
        Ok(start.elapsed())
    }

    /// The value of an unlabelled gauge or counter on the server's `/metrics`.
    pub async fn metric(&self, name: &str) -> anyhow::Result<f64> {
        let text = reqwest::get(format!("{}/metrics", self.base))
            .await?
            .text()
            .await?;
        text.lines()
            .find_map(|line| {
                line.strip_prefix(name)?
                    .strip_prefix(' ')?
                    .trim()
                    .parse()
                    .ok()
            })
            .with_context(|| format!("no metric {name}"))
    }

    /// The sum of a gauge over all its labels on the server's `/metrics` (0 when absent).
    pub async fn metric_sum(&self, name: &str) -> anyhow::Result<f64> {
        let text = reqwest::get(format!("{}/metrics", self.base))
            .await?
            .text()
            .await?;
        Ok(text
            .lines()
            .filter_map(|line| {
                let rest = line.strip_prefix(name)?;
                let value = match rest.strip_prefix('{') {
                    Some(labelled) => labelled.split_once("} ")?.1,
                    None => rest.strip_prefix(' ')?,
                };
                value.trim().parse::<f64>().ok()
            })
            .fold(0.0, |sum, value| sum + value))
    }

    /// The process id (for `perf` and `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops (`SIGSTOP`) or resumes (`SIGCONT`) the projector process; an error when the
    /// projectors run inside the server (nothing could be stopped apart from it).
    pub fn pause_projectors(&self, stop: bool) -> anyhow::Result<()> {
        let projectors = self
            .projectors
            .as_ref()
            .context("the projectors run inside the server")?;
        let signal = if stop { "-STOP" } else { "-CONT" };
        let status = Command::new("kill")
            .args([signal, &projectors.id().to_string()])
            .status()?;
        anyhow::ensure!(status.success(), "kill {signal} failed");
        Ok(())
    }

    /// Resident memory of the HTTP server, in KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        for child in std::iter::once(&mut self.child).chain(self.projectors.as_mut()) {
            // A process left stopped (`pause_projectors`) must run to take its TERM.
            for signal in ["-CONT", "-TERM"] {
                let _ = Command::new("kill")
                    .args([signal, &child.id().to_string()])
                    .status();
            }
            let _ = child.wait();
        }
    }
}

/// The HS256 key the bench servers run with.
pub const SECRET: &str = "bench-secret-0123456789abcdef0123456789";

/// The bench's `RELATIONS_MASTER_KEY` (every `relations` process it starts is given it).
pub const MASTER_KEY: &str = "62656e6368206b6579206265636e68206b6579206265636e68206b6579212121";

/// The keyring the bench's own loads seal content with (the service's, under [`MASTER_KEY`]).
pub fn keyring(pool: &PgPool) -> anyhow::Result<relations_store::Keyring> {
    let master = MASTER_KEY
        .parse()
        .map_err(|e| anyhow::anyhow!("MASTER_KEY: {e}"))?;
    Ok(relations_store::Keyring::new(master, pool.clone()))
}

/// A token for `user`.
pub fn token(user: i64) -> String {
    let claims = serde_json::json!({"sub": user.to_string(), "exp": 4_000_000_000u64});
    jsonwebtoken::encode(
        &jsonwebtoken::Header::default(),
        &claims,
        &jsonwebtoken::EncodingKey::from_secret(SECRET.as_bytes()),
    )
    .expect("a token encodes")
}

/// An HTTP client for load (keep-alive, no proxy, generous pool).
pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a client builds")
}

/// What a load run measured.
pub struct Stats {
    /// Operations that succeeded.
    pub ok: u64,
    /// Operations that failed.
    pub errors: u64,
    /// Wall time of the run.
    pub elapsed: Duration,
    /// Latencies of successful operations, in microseconds.
    pub latency: Histogram<u64>,
    /// An open loop's own lag: from each request's scheduled time to the moment the load
    /// generator's loop woke to start it, in microseconds (how late the generator itself is,
    /// on a machine it shares with the server). Empty for a closed loop.
    pub send_lag: Histogram<u64>,
}

impl Stats {
    /// Successful operations per second.
    pub fn per_sec(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64()
    }

    /// A latency quantile, in milliseconds.
    pub fn ms(&self, quantile: f64) -> f64 {
        self.latency.value_at_quantile(quantile) as f64 / 1000.0
    }

    /// `p50/p99/p999` in milliseconds.
    pub fn quantiles(&self) -> String {
        format!(
            "{:.2}/{:.2}/{:.2} ms",
            self.ms(0.5),
            self.ms(0.99),
            self.ms(0.999)
        )
    }
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("bounds are valid")
}

/// `clients` tasks run `op(client, i)` back to back for `duration`; each returns success.
pub async fn closed_loop<F, Fut>(clients: usize, duration: Duration, op: F) -> Stats
where
    F: Fn(usize, u64) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = bool> + Send,
{
    let op = Arc::new(op);
    let shared = Arc::new(Mutex::new((histogram(), 0u64, 0u64)));
    let start = Instant::now();
    let deadline = start + duration;
    let tasks: Vec<_> = (0..clients)
        .map(|client| {
            let (op, shared) = (op.clone(), shared.clone());
            tokio::spawn(async move {
                let mut local = histogram();
                let (mut ok, mut errors, mut i) = (0u64, 0u64, 0u64);
                while Instant::now() < deadline {
                    let began = Instant::now();
                    if op(client, i).await {
                        ok += 1;
                        let _ = local.record(began.elapsed().as_micros().max(1) as u64);
                    } else {
                        errors += 1;
                    }
                    i += 1;
                }
                let mut shared = shared.lock().await;
                shared.0.add(&local).expect("same bounds");
                shared.1 += ok;
                shared.2 += errors;
            })
        })
        .collect();
    for task in tasks {
        let _ = task.await;
    }
    let elapsed = start.elapsed();
    let (latency, ok, errors) = std::mem::replace(&mut *shared.lock().await, (histogram(), 0, 0));
    Stats {
        ok,
        errors,
        elapsed,
        latency,
        send_lag: histogram(),
    }
}

/// `op(i, scheduled)` started at a fixed `rate` per second for `duration`, each at its
/// scheduled time whatever the earlier ones are doing (an open loop, as users arrive), and its
/// latency measured from that scheduled time, not from when it could start: coordinated
/// omission corrected as wrk2 does. The timer's 1 ms tick sends requests due within it
/// together; each is still timed from its own schedule.
pub async fn open_loop<F, Fut>(rate: f64, duration: Duration, op: F) -> Stats
where
    F: Fn(u64, Instant) -> Fut,
    Fut: Future<Output = bool> + Send + 'static,
{
    let interval = Duration::from_secs_f64(1.0 / rate.max(1.0));
    let total = (rate * duration.as_secs_f64()) as u64;
    let shared = Arc::new(std::sync::Mutex::new((histogram(), 0u64, 0u64)));
    let start = Instant::now();
    let mut running = tokio::task::JoinSet::new();
    let mut send_lag = histogram();
    for i in 0..total {
        let scheduled = start + interval.mul_f64(i as f64);
        tokio::time::sleep_until(scheduled.into()).await;
        let _ = send_lag.record(scheduled.elapsed().as_micros().max(1) as u64);
        let (request, shared) = (op(i, scheduled), shared.clone());
        running.spawn(async move {
            let ok = request.await;
            let micros = scheduled.elapsed().as_micros().max(1) as u64;
            let mut shared = shared.lock().expect("not poisoned");
            if ok {
                shared.1 += 1;
                let _ = shared.0.record(micros);
            } else {
                shared.2 += 1;
            }
        });
    }
    while running.join_next().await.is_some() {}
    let elapsed = start.elapsed();
    let (latency, ok, errors) = std::mem::replace(
        &mut *shared.lock().expect("not poisoned"),
        (histogram(), 0, 0),
    );
    Stats {
        ok,
        errors,
        elapsed,
        latency,
        send_lag,
    }
}

/// One line of the results table.
#[derive(Debug, Clone)]
pub struct Row {
    /// Scenario letter and name.
    pub scenario: String,
    /// What was measured.
    pub measure: String,
    /// The figure.
    pub value: String,
    /// The baseline it is compared with, and its figure.
    pub baseline: String,
    /// value / baseline, where both are rates (or baseline / value for times).
    pub ratio: Option<f64>,
    /// The target, and whether it was met.
    pub target: String,
}

impl Row {
    /// A row.
    pub fn new(scenario: &str, measure: &str, value: String) -> Self {
        Self {
            scenario: scenario.to_owned(),
            measure: measure.to_owned(),
            value,
            baseline: String::new(),
            ratio: None,
            target: String::new(),
        }
    }

    /// With a baseline and the ratio to it.
    pub fn against(mut self, baseline: String, ratio: f64) -> Self {
        self.baseline = baseline;
        self.ratio = Some(ratio);
        self
    }

    /// With a target.
    pub fn target(mut self, target: &str, met: bool) -> Self {
        self.target = format!("{target} {}", if met { "(met)" } else { "(NOT met)" });
        self
    }
}

/// The table, as Markdown.
pub fn table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| scenario | measure | value | baseline | ratio | target |\n|---|---|---|---|---|---|\n",
    );
    for row in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            row.scenario,
            row.measure,
            row.value,
            row.baseline,
            row.ratio.map(|r| format!("{r:.2}x")).unwrap_or_default(),
            row.target
        ));
    }
    out
}

/// A closed loop's rate, latency quantiles and errors, as the table shows them.
pub fn rate(stats: &Stats) -> String {
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
