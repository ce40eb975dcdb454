//! (k) Reads from a hot standby (`DATABASE_READ_URL`): the same feed and timeline read load
//! run twice on a PostgreSQL primary and its streaming standby of the bench's own, first with
//! every read on the primary, then with the read endpoint set. Measured: the primary's CPU per
//! read (its postmaster and every backend, from `/proc`: utime + stime, exited children
//! included), and the standby's.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use rand::Rng;

use super::Scale;
use crate::graph;
use crate::harness::rate;
use crate::harness::{client, closed_loop, token, Env, Row, Server, Stats};

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
const DB: &str = "bench_read_pool";
const CLIENTS: usize = 16;
const POSTS_PER_USER: usize = 3;

/// A primary (index 0) and its streaming hot standby (index 1), in a temporary directory.
struct Cluster {
    dir: PathBuf,
    ports: [u16; 2],
}

/// Runs a PostgreSQL tool, as `postgres` when the bench runs as root (the server refuses root).
fn pg(tool: &str, args: &[&str]) -> anyhow::Result<()> {
    let path = format!("{PG_BIN}/{tool}");
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let mut command = Command::new(if root { "runuser" } else { &path });
    if root {
        command.args(["-u", "postgres", "--", &path]);
    }
    let out = command.args(args).stdin(Stdio::null()).output()?;
    anyhow::ensure!(out.status.success(), "{tool}: {out:?}");
    Ok(())
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Cluster {
    /// initdb and start the primary, then `pg_basebackup -R -X stream` and start the standby.
    fn start() -> anyhow::Result<Self> {
        let dir = std::env::temp_dir().join(format!("relations-bench-pg-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir)?;
        let _ = Command::new("chown")
            .args(["postgres:postgres", &dir.to_string_lossy()])
            .status();
        let cluster = Self {
            dir,
            ports: [free_port()?, free_port()?],
        };
        let data = cluster.data(0);
        pg(
            "initdb",
            &["-D", &data, "-A", "trust", "-U", "postgres", "--no-sync"],
        )?;
        cluster.up(0)?;
        let primary = cluster.ports[0].to_string();
        let standby = cluster.data(1);
        pg(
            "pg_basebackup",
            &[
                "-h",
                "127.0.0.1",
                "-p",
                &primary,
                "-U",
                "postgres",
                "-D",
                &standby,
                "-R",
                "-X",
                "stream",
                "-c",
                "fast",
                "--no-sync",
            ],
        )?;
        cluster.up(1)?;
        Ok(cluster)
    }

    fn data(&self, node: usize) -> String {
        self.dir
            .join(format!("data{node}"))
            .to_string_lossy()
            .into_owned()
    }

    fn up(&self, node: usize) -> anyhow::Result<()> {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200 \
             -c hot_standby_feedback=on",
            self.ports[node],
            self.dir.display()
        );
        let log = self.dir.join(format!("log{node}"));
        pg(
            "pg_ctl",
            &[
                "-D",
                &self.data(node),
                "-o",
                &options,
                "-l",
                &log.to_string_lossy(),
                "-w",
                "start",
            ],
        )
    }

    fn url(&self, node: usize, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.ports[node])
    }

    /// CPU time, in clock ticks, of `node`'s postmaster and every process it started.
    fn cpu_ticks(&self, node: usize) -> anyhow::Result<u64> {
        let pid_file = std::fs::read_to_string(format!("{}/postmaster.pid", self.data(node)))?;
        let postmaster: i64 = pid_file.lines().next().context("postmaster.pid")?.parse()?;
        let mut ticks = 0;
        for entry in std::fs::read_dir("/proc")?.flatten() {
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            // Fields after the command's closing parenthesis: state, ppid, ..., utime (12th),
            // stime, cutime, cstime.
            let Some((head, rest)) = stat.rsplit_once(')') else {
                continue;
            };
            let fields: Vec<i64> = rest
                .split_whitespace()
                .skip(1)
                .map(|f| f.parse().unwrap_or(0))
                .collect();
            let pid: i64 = head.split_whitespace().next().unwrap_or("0").parse()?;
            if (pid == postmaster || fields.first() == Some(&postmaster)) && fields.len() > 14 {
                ticks += fields[10..14].iter().sum::<i64>() as u64;
            }
        }
        Ok(ticks)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for node in [1, 0] {
            let _ = pg(
                "pg_ctl",
                &["-D", &self.data(node), "-m", "immediate", "stop"],
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What one run of the read load measured.
struct Measured {
    stats: Stats,
    /// CPU milliseconds per read on the primary, and on the standby.
    per_read_ms: [f64; 2],
}

pub async fn read_pool(env: &Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let cluster = Cluster::start()?;
    let env = Env {
        admin_url: cluster.url(0, "postgres"),
        world: None,
        ..env.clone()
    };
    let users = scale.graph_users;
    let pool = env.fresh_database(DB).await?;
    graph::load_follows(&pool, &graph::follows(users, 23)).await?;
    let authors: Vec<i64> = (0..POSTS_PER_USER).flat_map(|_| 1..=users).collect();
    graph::load_posts(&pool, &authors).await?;
    let names = [
        relations_projections::relations::NAME,
        relations_projections::feed::NAME,
    ];
    {
        let _seeding = Server::start(&env, DB, 18097, &[], None).await?;
        let took = graph::caught_up(&pool, &names).await?;
        eprintln!(
            "read_pool: projectors caught up in {:.1} s",
            took.as_secs_f64()
        );
    }
    let load = (users, scale.run.max(Duration::from_secs(4)));
    let primary = measure(&env, &cluster, load, &[]).await?;
    let standby_url = [("DATABASE_READ_URL", cluster.url(1, DB))];
    let standby = measure(&env, &cluster, load, &standby_url).await?;
    Ok(vec![
        row("every read on the primary", &primary),
        row("DATABASE_READ_URL = the standby", &standby).against(
            format!("without it: {:.3} ms", primary.per_read_ms[0]),
            primary.per_read_ms[0] / standby.per_read_ms[0].max(1e-9),
        ),
    ])
}

fn row(setup: &str, measured: &Measured) -> Row {
    Row::new(
        &format!("k. feed + timeline reads, {CLIENTS} clients"),
        &format!("primary CPU per read ({setup})"),
        format!(
            "{:.3} ms (standby {:.3} ms); {}",
            measured.per_read_ms[0],
            measured.per_read_ms[1],
            rate(&measured.stats)
        ),
    )
}

/// Runs the read load on a server started with `extra`, after a warm-up (graph loaded, caches
/// filled), and measures both nodes' CPU over the timed run.
async fn measure(
    env: &Env,
    cluster: &Cluster,
    (users, run): (i64, Duration),
    extra: &[(&str, String)],
) -> anyhow::Result<Measured> {
    let server = Server::start(env, DB, 18098, extra, None).await?;
    load(&server.base, users, Duration::from_secs(1)).await;
    let before = [cluster.cpu_ticks(0)?, cluster.cpu_ticks(1)?];
    let stats = load(&server.base, users, run).await;
    let after = [cluster.cpu_ticks(0)?, cluster.cpu_ticks(1)?];
    drop(server);
    let hz = clock_ticks()?;
    let reads = stats.ok.max(1) as f64;
    let per_read_ms = [0, 1].map(|n| (after[n] - before[n]) as f64 * 1000.0 / hz / reads);
    Ok(Measured { stats, per_read_ms })
}

/// Feed pages of random readers and timelines of random authors, alternately.
async fn load(base: &str, users: i64, run: Duration) -> Stats {
    let (http, base) = (client(), base.to_owned());
    let started = Instant::now();
    let stats = closed_loop(CLIENTS, run, move |_, i| {
        let user = rand::rng().random_range(1..=users);
        let request = if i % 2 == 0 {
            http.get(format!("{base}/api/v1/feed"))
                .bearer_auth(token(user))
        } else {
            http.get(format!("{base}/api/v1/users/{user}/posts"))
        };
        async move { request.send().await.is_ok_and(|r| r.status().is_success()) }
    })
    .await;
    eprintln!(
        "read_pool: {} reads in {:.1} s",
        stats.ok,
        started.elapsed().as_secs_f64()
    );
    stats
}

/// Clock ticks per second (`/proc` counts CPU time in them).
fn clock_ticks() -> anyhow::Result<f64> {
    let out = Command::new("getconf").arg("CLK_TCK").output()?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().parse()?)
}
