//! (m) the failover window: `relations serve` on the HA PostgreSQL of `scripts/ha.sh`
//! (Patroni with synchronous_mode_strict, etcd, HAProxy; two nodes, on ports and in a
//! directory of the bench's own), 16 clients following with Idempotency-Keys and retrying the
//! same key on errors, the primary's node crashed (`ha.sh failover`). Measured: crash → Patroni
//! promoted the standby, crash → a write commits through the write endpoint (ha.sh's probe),
//! crash → the service acknowledges commands again, and acknowledged follows lost (must be 0).
//! Skipped with a note when ha.sh's engines cannot be installed (it needs root and apt).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use relations_domain::{LogEvent, RelationEvent};

use crate::harness::{client, token, Env, Row, Server};

const SCENARIO: &str = "m. failover";
const CLIENTS: i64 = 16;

/// The cluster's ports and directory: apart from a developer's `scripts/ha.sh start`.
const HA_ENV: [(&str, &str); 8] = [
    ("HA_DIR", "target/bench-ha"),
    ("HA_WRITE_PORT", "15440"),
    ("HA_READ_PORT", "15439"),
    ("HA_PG_PORT", "15441"),
    ("HA_REST_PORT", "18441"),
    ("HA_ETCD_PORT", "12479"),
    ("HA_STATS_PORT", "17440"),
    ("HA_SCOPE", "relations-bench"),
];
const WRITE_URL: &str = "postgres://postgres:postgres@127.0.0.1:15440/postgres";

fn ha(verb: &str) -> Command {
    let mut command = Command::new("scripts/ha.sh");
    command.arg(verb).envs(HA_ENV).stdin(Stdio::null());
    command
}

/// (m): the failover window, or one row saying why it was skipped.
pub async fn failover(env: &Env) -> anyhow::Result<Vec<Row>> {
    let installed = ha("install")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !installed.is_ok_and(|s| s.success()) {
        let why = "skipped: scripts/ha.sh could not install Patroni, etcd and HAProxy (needs root and apt)";
        return Ok(vec![Row::new(SCENARIO, "failover window", why.to_owned())]);
    }
    let _ = ha("stop").stderr(Stdio::null()).status();
    anyhow::ensure!(
        ha("start").stderr(Stdio::null()).status()?.success(),
        "ha.sh start failed"
    );
    let measured = measure(env).await;
    let _ = ha("stop").stderr(Stdio::null()).status();
    measured
}

/// Runs the load, crashes the primary, and reads the window off the acknowledgements.
async fn measure(env: &Env) -> anyhow::Result<Vec<Row>> {
    let env = Env {
        admin_url: WRITE_URL.to_owned(),
        world: None,
        ..env.clone()
    };
    let server = Server::start(&env, "postgres", 18080, &[], None).await?;
    let load = Load::start(&server.base);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (crashed, report) = tokio::task::spawn_blocking(crash_primary).await??;
    let back = load
        // ha.sh logs "crashing" just before its kill -9: a request sent 0.5 s later cannot be
        // acknowledged by the old primary.
        .first_ack_sent_after(
            crashed + Duration::from_millis(500),
            Duration::from_secs(60),
        )
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let acked = load.stop().await;
    let pool = sqlx::PgPool::connect(WRITE_URL).await?;
    let lost = lost(&pool, &acked).await?;
    let field = |name: &str| {
        report
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map_or("?".to_owned(), |v| v.trim().to_owned())
    };
    let accepting: Option<f64> = field("crash -> writes accepted:")
        .trim_end_matches(" s")
        .parse()
        .ok();
    let back = back.map(|at| at.duration_since(crashed).as_secs_f64());
    let after = back
        .zip(accepting)
        .map(|(back, accepting)| back - accepting);
    Ok(vec![
        Row::new(SCENARIO, "crash → standby promoted by Patroni", field("crash -> promoted:")),
        Row::new(
            SCENARIO,
            "crash → a write commits through HAProxy's write endpoint (new primary accepting writes)",
            field("crash -> writes accepted:"),
        ),
        Row::new(
            SCENARIO,
            "crash → the service acknowledges commands again (16 clients, same keys retried)",
            back.map_or("never (60 s)".to_owned(), |b| format!("{b:.2} s")),
        )
        .target(
            &format!("within 5 s of the new primary accepting writes (measured {:.2} s)", after.unwrap_or(f64::NAN)),
            after.is_some_and(|a| a < 5.0),
        ),
        Row::new(SCENARIO, "acknowledged follows lost", format!("{lost} of {}", acked.len()))
            .target("0", lost == 0),
    ])
}

/// `ha.sh failover`: when it crashed the primary, and what it printed.
fn crash_primary() -> anyhow::Result<(Instant, String)> {
    let mut child = ha("failover")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let mut crashed = None;
    for line in BufReader::new(child.stderr.take().expect("piped")).lines() {
        if line?.contains("crashing") {
            crashed = Some(Instant::now());
        }
    }
    let out = child.wait_with_output()?;
    anyhow::ensure!(out.status.success(), "ha.sh failover failed");
    let crashed = crashed.ok_or_else(|| anyhow::anyhow!("ha.sh never crashed the primary"))?;
    Ok((crashed, String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// Acknowledged follows that are not in the log.
async fn lost(pool: &sqlx::PgPool, acked: &[(i64, i64)]) -> anyhow::Result<usize> {
    let mut conn = pool.acquire().await?;
    let head = relations_store::log::head(&mut *conn).await?;
    let events = relations_store::log::read_type(
        &mut conn,
        "relation",
        relations_store::LogPosition::START,
        head,
    )
    .await?;
    let follows: std::collections::HashSet<(i64, i64)> = events
        .iter()
        .filter_map(|e| match e.event {
            LogEvent::Relation(RelationEvent::Followed { follower, followee }) => {
                Some((follower.get(), followee.get()))
            }
            _ => None,
        })
        .collect();
    Ok(acked.iter().filter(|edge| !follows.contains(edge)).count())
}

/// An acknowledged follow: actor, target, when sent, when acknowledged.
type Ack = (i64, i64, Instant, Instant);

/// Writing clients: follows with an Idempotency-Key each, the same key sent again until it
/// is acknowledged; (actor, target, sent, acknowledged) kept.
struct Load {
    stop: Arc<AtomicBool>,
    acks: Arc<Mutex<Vec<Ack>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(base: &str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let acks: Arc<Mutex<Vec<_>>> = Arc::default();
        let tasks = (1..=CLIENTS)
            .map(|actor| {
                let (stop, acks, base) = (stop.clone(), acks.clone(), base.to_owned());
                tokio::spawn(async move { follow_until_stopped(actor, &base, &stop, &acks).await })
            })
            .collect();
        Self { stop, acks, tasks }
    }

    async fn first_ack_sent_after(&self, since: Instant, within: Duration) -> Option<Instant> {
        let started = Instant::now();
        while started.elapsed() < within {
            let first = self
                .acks
                .lock()
                .unwrap()
                .iter()
                .filter(|a| a.2 > since)
                .map(|a| a.3)
                .min();
            if first.is_some() {
                return first;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        None
    }

    async fn stop(self) -> Vec<(i64, i64)> {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            let _ = task.await;
        }
        let acks = self.acks.lock().unwrap();
        acks.iter().map(|a| (a.0, a.1)).collect()
    }
}

/// One client: follows 1000, 1001, … as `actor`, each until acknowledged.
async fn follow_until_stopped(actor: i64, base: &str, stop: &AtomicBool, acks: &Mutex<Vec<Ack>>) {
    let (client, token) = (client(), token(actor));
    for target in 1000.. {
        loop {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let sent = Instant::now();
            let answered = client
                .post(format!("{base}/api/v1/relation/follow"))
                .bearer_auth(&token)
                .header("Idempotency-Key", format!("k-{actor}-{target}"))
                .json(&serde_json::json!({ "target": target }))
                .timeout(Duration::from_secs(15))
                .send()
                .await;
            if answered.is_ok_and(|r| r.status().is_success()) {
                acks.lock()
                    .unwrap()
                    .push((actor, target, sent, Instant::now()));
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
