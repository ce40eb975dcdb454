//! The fault trial (issue 45, item 1): clients drive three `serve` instances while a nemesis
//! breaks them; every operation is recorded with its times and outcome (ok, refused, unknown),
//! every unknown outcome is settled by retrying its key, and the whole history is checked
//! against the log (`check`). `TRIAL_SECONDS` sets the length (60 in CI); `scripts/trial.sh`
//! runs a longer one and writes its report (`TRIAL_REPORT`).
//!
//! It runs on the machine's PostgreSQL (or, with `TRIAL_HA=1`, a Patroni cluster of three
//! nodes of its own) and a Redis of its own; its nemesis kills (`kill -9`) and freezes
//! (SIGSTOP past the clients' timeout) instances, kills Redis, and on Patroni crashes the
//! primary. Partitions, clock skew and the Kafka relay are not in it yet (RELIABILITY.md says
//! what is).
//!
//! A test binary of its own: cargo runs test binaries one after another, so the trial's three
//! servers and sixteen clients never share the machine's two cores with the other tests.

#[allow(dead_code)]
#[path = "../api/helpers.rs"]
mod helpers;
#[allow(dead_code)]
#[path = "../api/owned.rs"]
mod owned;

mod check;
mod check_tests;
mod history;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::helpers::{test_config, SECRET};
use crate::owned::{OwnedHa, OwnedRedis, ServiceProcess};
use check::{Change, Logged, KINDS};
use history::{position, Facts, Op, Outcome, Position, Verb};

const USERS: i64 = 12;
const CLIENTS: usize = 16;
const INSTANCES: usize = 3;
/// Rule 3's limit, low so that it is reached.
const FOLLOW_LIMIT: usize = 4;

/// What the clients share.
struct Trial {
    started: Instant,
    length: Duration,
    bases: RwLock<Vec<String>>,
    jwt: relations_api::auth::JwtKeys,
    http: reqwest::Client,
    next: AtomicUsize,
}

impl Trial {
    /// Invokes one operation on `base` and records how it ended.
    async fn invoke(
        &self,
        base: &str,
        verb: Verb,
        actor: i64,
        target: i64,
        key: Option<String>,
        min: Option<Position>,
    ) -> Op {
        let invoked = self.started.elapsed();
        let token = self
            .jwt
            .issue(
                crate::helpers::user(actor),
                false,
                Duration::from_secs(3600),
            )
            .unwrap();
        let request = match (verb.command(), &key) {
            (Some(command), Some(key)) => self
                .http
                .post(format!("{base}/api/v1/relation/{command}"))
                .header("idempotency-key", key)
                .header("x-request-id", key)
                .json(&json!({ "target": target })),
            _ => {
                let min = min
                    .map(|(tx, gp)| format!("&min_position={tx}.{gp}"))
                    .unwrap_or_default();
                self.http.get(format!(
                    "{base}/api/v1/relation/status?from={actor}&to={target}{min}"
                ))
            }
        };
        let outcome = match request.bearer_auth(token).send().await {
            Err(error) if error.is_connect() => Outcome::NotSent,
            Err(_) => Outcome::Unknown,
            Ok(response) => outcome(
                verb,
                response.status(),
                response.json().await.unwrap_or(Value::Null),
            ),
        };
        Op {
            client: 0,
            instance: 0,
            verb,
            actor,
            target,
            key,
            min_position: min,
            invoked,
            completed: self.started.elapsed(),
            outcome,
        }
    }

    fn base(&self, i: usize) -> String {
        self.bases.read().unwrap()[i].clone()
    }
}

fn outcome(verb: Verb, status: StatusCode, body: Value) -> Outcome {
    if status.is_success() {
        let relation = if verb == Verb::Status {
            &body
        } else {
            &body["relation"]
        };
        return Outcome::Ok {
            changed: body["changed"].as_bool().unwrap_or(false),
            position: body["position"].as_str().and_then(position),
            facts: Facts::of(relation),
        };
    }
    match status {
        StatusCode::SERVICE_UNAVAILABLE => Outcome::Unknown,
        // Any other 5xx is reported as an outcome the checker cannot place, never settled.
        s if s.is_server_error() => Outcome::Refused(format!("HTTP {s}")),
        _ => Outcome::Refused(body["error"]["code"].as_str().unwrap_or("?").to_owned()),
    }
}

/// One client: random operations on random instances until the trial's end.
async fn client(trial: Arc<Trial>, id: usize) -> Vec<Op> {
    let mut rng = StdRng::seed_from_u64(id as u64);
    let (mut ops, mut last) = (Vec::new(), None);
    while trial.started.elapsed() < trial.length {
        let instance = rng.random_range(0..INSTANCES);
        let base = trial.base(instance);
        let actor = rng.random_range(1..=USERS);
        let target = (actor + rng.random_range(1..USERS) - 1) % USERS + 1;
        let verb = match rng.random_range(0..100) {
            0..40 => Verb::Follow,
            40..60 => Verb::Unfollow,
            60..68 => Verb::Block,
            68..76 => Verb::Unblock,
            _ => Verb::Status,
        };
        let n = trial.next.fetch_add(1, Ordering::Relaxed);
        let key = verb.command().map(|_| format!("trial-{n}"));
        let min = if rng.random_bool(0.5) { last } else { None };
        let mut op = trial.invoke(&base, verb, actor, target, key, min).await;
        (op.client, op.instance) = (id, instance);
        last = op.written().or(last);
        ops.push(op);
    }
    ops
}

/// A fault the nemesis caused: what, when it began and when it ended.
struct Fault {
    what: String,
    /// The instance it broke (`None`: Redis, which every instance uses).
    instance: Option<usize>,
    began: Duration,
    ended: Duration,
}

/// What the nemesis breaks: the instances, their Redis and, in a run on Patroni, the cluster.
struct Targets {
    instances: Vec<ServiceProcess>,
    redis: OwnedRedis,
    ha: Option<Arc<OwnedHa>>,
    config: relations_api::config::Config,
}

/// Every 10 to 15 s until near the end: `kill -9` an instance (started again a second later),
/// freeze one past the clients' timeout, kill Redis for a few seconds, or (on Patroni) crash
/// the primary (`ha.sh failover`: its Patroni and PostgreSQL killed, a standby promoted, the
/// old node back as a standby).
async fn nemesis(trial: Arc<Trial>, mut targets: Targets) -> (Targets, Vec<Fault>) {
    let mut rng = StdRng::seed_from_u64(45);
    let mut faults = Vec::new();
    let kinds = if targets.ha.is_some() { 4 } else { 3 };
    loop {
        tokio::time::sleep(Duration::from_millis(rng.random_range(10_000..15_000))).await;
        if trial.started.elapsed() + Duration::from_secs(6) > trial.length {
            return (targets, faults);
        }
        let i = rng.random_range(0..INSTANCES);
        let began = trial.started.elapsed();
        let kind = rng.random_range(0..kinds);
        let what = break_one(&trial, &mut targets, kind, i).await;
        faults.push(Fault {
            what,
            instance: (kind < 2).then_some(i),
            began,
            ended: trial.started.elapsed(),
        });
    }
}

/// Causes fault `kind` (on instance `i` where it takes one) and ends it; what it was.
async fn break_one(trial: &Trial, targets: &mut Targets, kind: u32, i: usize) -> String {
    let instances = &mut targets.instances;
    match kind {
        0 => {
            instances[i].kill();
            tokio::time::sleep(Duration::from_secs(1)).await;
            let limit = FOLLOW_LIMIT.to_string();
            let env = [("RELATIONS_FOLLOW_LIMIT", limit.as_str())];
            instances[i] = ServiceProcess::start("serve", &targets.config, &env).await;
            trial.bases.write().unwrap()[i] = instances[i].base.clone();
            format!("kill -9 instance {i}, started again")
        }
        1 => {
            instances[i].signal("-STOP");
            tokio::time::sleep(Duration::from_secs(4)).await;
            instances[i].signal("-CONT");
            format!("SIGSTOP instance {i} for 4 s")
        }
        2 => {
            targets.redis.down();
            tokio::time::sleep(Duration::from_secs(3)).await;
            targets.redis.up();
            "Redis killed for 3 s".to_owned()
        }
        _ => {
            let ha = targets.ha.clone().expect("a cluster");
            let out = tokio::task::spawn_blocking(move || ha.run("failover"))
                .await
                .unwrap();
            let said = String::from_utf8_lossy(&out.stdout).replace('\n', "; ");
            assert!(
                out.status.success(),
                "ha.sh failover: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            format!("the primary crashed (kill -9 of Patroni and PostgreSQL), {said}")
        }
    }
}

/// Retries every write whose outcome is unknown under its key until it is definite.
async fn settle(trial: &Trial, ops: &[Op]) -> Vec<Op> {
    let mut retries = Vec::new();
    for op in ops
        .iter()
        .filter(|o| o.outcome == Outcome::Unknown && o.key.is_some())
    {
        for _ in 0..30 {
            let base = trial.base(0);
            let mut retry = trial
                .invoke(&base, op.verb, op.actor, op.target, op.key.clone(), None)
                .await;
            retry.client = usize::MAX;
            let definite = matches!(retry.outcome, Outcome::Ok { .. } | Outcome::Refused(_));
            retries.push(retry);
            if definite {
                break;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
    retries
}

/// The relation events of the log, in its order.
async fn read_log(pool: &sqlx::PgPool) -> Vec<Logged> {
    let rows: Vec<(i64, i64, Value, Option<String>)> = sqlx::query_as(
        "SELECT transaction_id::text::bigint, global_position, payload::jsonb, metadata::jsonb->>'request_id'
           FROM events WHERE aggregate_type = 'relation' ORDER BY transaction_id, global_position",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    rows.into_iter()
        .map(|(tx, gp, payload, request)| {
            let event: relations_domain::RelationEvent = serde_json::from_value(payload).unwrap();
            use relations_domain::RelationEvent as E;
            let change = match event {
                E::Followed { follower, followee } => {
                    Change::Follow(follower.get(), followee.get())
                }
                E::Unfollowed {
                    follower, followee, ..
                } => Change::Unfollow(follower.get(), followee.get()),
                E::Blocked { blocker, blocked } => Change::Block(blocker.get(), blocked.get()),
                E::Unblocked { blocker, blocked } => Change::Unblock(blocker.get(), blocked.get()),
                other => panic!("the trial appends no {other:?}"),
            };
            Logged {
                at: (tx, gp),
                request: request.unwrap_or_default(),
                change,
            }
        })
        .collect()
}

/// `TRIAL_SECONDS` long (60 by default); `TRIAL_HA=1` runs it on a Patroni cluster of three
/// nodes of its own, whose primary the nemesis also crashes.
#[tokio::test]
async fn the_trial_finds_no_anomaly_under_faults() {
    let seconds = std::env::var("TRIAL_SECONDS").map_or(60, |s| s.parse().unwrap());
    let ha = std::env::var("TRIAL_HA").is_ok_and(|v| v == "1");
    let ha = ha.then(|| Arc::new(OwnedHa::start_nodes(3).expect("ha.sh needs root")));
    let mut config = test_config().await;
    if let Some(ha) = &ha {
        config.database.database_url = ha.write_url();
    }
    let redis = OwnedRedis::start();
    config.redis.redis_url = Some(redis.url());
    let limit = FOLLOW_LIMIT.to_string();
    let env = [("RELATIONS_FOLLOW_LIMIT", limit.as_str())];
    let mut instances = Vec::new();
    for _ in 0..INSTANCES {
        instances.push(ServiceProcess::start("serve", &config, &env).await);
    }
    let trial = Arc::new(Trial {
        started: Instant::now(),
        length: Duration::from_secs(seconds),
        bases: RwLock::new(instances.iter().map(|i| i.base.clone()).collect()),
        jwt: relations_api::auth::JwtKeys::new(SECRET),
        http: reqwest::Client::builder()
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap(),
        next: AtomicUsize::new(0),
    });
    let targets = Targets {
        instances,
        redis,
        ha,
        config: config.clone(),
    };
    let nemesis = tokio::spawn(nemesis(trial.clone(), targets));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|id| tokio::spawn(client(trial.clone(), id)))
        .collect();
    let mut ops = Vec::new();
    for c in clients {
        ops.extend(c.await.unwrap());
    }
    let (targets, faults) = nemesis.await.unwrap();
    let retries = settle(&trial, &ops).await;
    ops.extend(retries);
    let pool = sqlx::PgPool::connect(&config.database.database_url)
        .await
        .unwrap();
    let log = read_log(&pool).await;
    let anomalies = check::check(&ops, &log, FOLLOW_LIMIT);
    let report = report(&trial, &ops, &log, &faults, &anomalies);
    println!("{report}");
    if let Ok(path) = std::env::var("TRIAL_REPORT") {
        std::fs::write(path, &report).unwrap();
    }
    drop(targets);
    assert!(
        ops.len() >= 1_000 * seconds as usize / 60,
        "{} operations",
        ops.len()
    );
    assert!(
        faults.len() >= (seconds as usize / 20).max(2),
        "{} faults",
        faults.len()
    );
    assert_eq!(anomalies.total(), 0, "{report}");
    // Writes come back within 12 s of any single fault's start, on the instance it broke,
    // and the service as a whole never goes 12 s without acknowledging one.
    for fault in &faults {
        let back = writes_back(&ops, fault, fault.began);
        assert!(
            back.is_some_and(|b| b < Duration::from_secs(12)),
            "{report}"
        );
        assert!(
            longest_pause(&ops, fault) < Duration::from_secs(12),
            "{report}"
        );
    }
}

/// The longest time between two write acknowledgements (any instance's) from `fault`'s start
/// to 5 s after its end: how long the service as a whole took no write.
fn longest_pause(ops: &[Op], fault: &Fault) -> Duration {
    let (from, to) = (fault.began, fault.ended + Duration::from_secs(5));
    let mut acks: Vec<Duration> = ops
        .iter()
        .filter(|o| o.written().is_some() && o.completed >= from && o.completed <= to)
        .map(|o| o.completed)
        .collect();
    acks.sort();
    let bounds: Vec<Duration> = std::iter::once(from)
        .chain(acks)
        .chain(std::iter::once(to))
        .collect();
    bounds
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .max()
        .unwrap_or_default()
}

/// From `since` to the first write acknowledged on the instance `fault` broke (any instance
/// when it broke none of them).
fn writes_back(ops: &[Op], fault: &Fault, since: Duration) -> Option<Duration> {
    ops.iter()
        .filter(|o| {
            fault
                .instance
                .is_none_or(|i| o.instance == i && o.client != usize::MAX)
        })
        .filter(|o| o.written().is_some() && o.invoked >= since)
        .map(|o| o.completed - since)
        .min()
}

/// The report: operations by outcome, the faults with the time writes took to come back
/// after each, and every anomaly count.
fn report(
    trial: &Trial,
    ops: &[Op],
    log: &[Logged],
    faults: &[Fault],
    anomalies: &check::Anomalies,
) -> String {
    let count = |f: &dyn Fn(&Op) -> bool| ops.iter().filter(|o| f(o)).count();
    let mut out = format!(
        "trial: {} s, {CLIENTS} clients, {INSTANCES} instances, {USERS} users, follow limit {FOLLOW_LIMIT}\n\
         operations: {} ({} writes, {} reads; {} settled by a retry under their key)\n\
         outcomes: {} ok, {} refused, {} unknown, {} not sent; the log: {} relation events\n",
        trial.length.as_secs(),
        ops.len(),
        count(&|o| o.verb != Verb::Status),
        count(&|o| o.verb == Verb::Status),
        count(&|o| o.client == usize::MAX),
        count(&|o| matches!(o.outcome, Outcome::Ok { .. })),
        count(&|o| matches!(o.outcome, Outcome::Refused(_))),
        count(&|o| o.outcome == Outcome::Unknown),
        count(&|o| o.outcome == Outcome::NotSent),
        log.len(),
    );
    out.push_str("faults (writes back: to the first write sent after the fault's start, and after its end, that the instance it broke acknowledged; any instance's where it broke none):\n");
    for fault in faults {
        let from_start = writes_back(ops, fault, fault.began);
        let back = writes_back(ops, fault, fault.ended);
        out.push_str(&format!(
            "  {:>6.1} s  {}, {:.1} s; writes back {:?} after its start, {:?} after its end; no write acknowledged for {:?} at most\n",
            fault.began.as_secs_f64(),
            fault.what,
            (fault.ended - fault.began).as_secs_f64(),
            from_start,
            back,
            longest_pause(ops, fault),
        ));
    }
    out.push_str("anomalies:\n");
    for kind in KINDS {
        out.push_str(&format!("  {:>4}  {kind}\n", anomalies.count(kind)));
        for example in anomalies
            .kinds
            .get(kind)
            .map(|k| k.1.clone())
            .unwrap_or_default()
        {
            out.push_str(&format!("        e.g. {example}\n"));
        }
    }
    out
}
