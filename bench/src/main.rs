//! `relations-bench`: every scenario of BENCHMARKS.md beside its baseline, measured in one run
//! on one machine. Runs the release `relations` binary against databases of its own
//! (`bench_*`, dropped and made anew) and the local Redis; prints one Markdown table.
//!
//! Scenarios: (a) follow commands vs the seed-000 design in SQL and vs raw single-row
//! INSERTs; (b) relation status, batch and list pages over HTTP vs the same reads in SQL and
//! vs a trivial axum handler; (c) projection lag under a sustained write rate; (d) rebuild
//! throughput vs COPY of the same rows; (e) feed fan-out and feed pages (hybrid vs pure push vs
//! pure pull, and Stream-Framework on the same Redis); (f) memory.

mod graph;
mod harness;

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use rand::Rng;
use sqlx::PgPool;

use harness::{client, closed_loop, token, Env, Row, Server, Stats};

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
    /// Only these scenarios (letters a to g); all when empty.
    #[arg(long)]
    only: Vec<char>,
    /// Users in the graph of (a), (b), (c), (f); the rebuild graph of (d) gets 2.4 times as
    /// many. Defaults: 3,000 with --quick, else 50,000. LinkBench-like scales are 10k, 1M, 10M
    /// (about 12 follows per user: a 1M-user graph appends about 12M events).
    #[arg(long)]
    users: Option<i64>,
    /// Record a system-wide `perf` profile into this file during the 64-client follow run.
    #[arg(long)]
    profile: Option<String>,
}

/// How big and how long.
#[derive(Debug, Clone, Copy)]
struct Scale {
    graph_users: i64,
    rebuild_users: i64,
    run: Duration,
    lag_rate: u32,
    lag_for: Duration,
    feed_posts_per_author: usize,
    feed_readers: i64,
}

impl Scale {
    fn quick() -> Self {
        Self {
            graph_users: 3_000,
            rebuild_users: 8_000,
            run: Duration::from_millis(1500),
            lag_rate: 300,
            lag_for: Duration::from_secs(3),
            feed_posts_per_author: 1,
            feed_readers: 2,
        }
    }

    fn full() -> Self {
        Self {
            graph_users: 50_000,
            rebuild_users: 120_000,
            run: Duration::from_secs(8),
            lag_rate: 1000,
            lag_for: Duration::from_secs(10),
            feed_posts_per_author: 10,
            feed_readers: 20,
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let env = Env {
        admin_url: args.database_url.clone(),
        redis_url: args.redis_url.clone(),
        bin: args.bin.clone(),
    };
    let scale = if args.quick {
        Scale::quick()
    } else {
        Scale::full()
    };
    let wanted = |c: char| args.only.is_empty() || args.only.contains(&c);
    let started = Instant::now();
    eprintln!("relations-bench: {scale:?}");
    let mut rows = Vec::new();
    if wanted('a') || wanted('b') || wanted('c') || wanted('f') {
        rows.extend(graph_scenarios(&env, scale, &wanted, args.profile.as_deref()).await?);
    }
    if wanted('d') {
        rows.extend(rebuild(&env, scale).await?);
    }
    if wanted('e') {
        rows.extend(feed(&env, scale, args.stream_framework_python.as_deref()).await?);
    }
    if wanted('g') {
        rows.extend(mixed(&env, scale).await?);
    }
    println!("{}", harness::table(&rows));
    println!("total bench time: {:.0} s", started.elapsed().as_secs_f64());
    Ok(())
}

/// (a), (b), (c) and (f), on one loaded graph.
async fn graph_scenarios(
    env: &Env,
    scale: Scale,
    wanted: &impl Fn(char) -> bool,
    profile: Option<&str>,
) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    let db = "bench_graph";
    let pool = env.fresh_database(db).await?;
    let edges = graph::follows(scale.graph_users, 42);
    let loaded = Instant::now();
    let events = graph::load_follows(&pool, &edges).await?;
    eprintln!(
        "graph: {events} follow events appended in {:.1} s",
        loaded.elapsed().as_secs_f64()
    );
    // The relation scenarios need `following` (and its cache); they run in a projector
    // process of their own, as deployed, so the feed's projectors stay out of these figures.
    let server = Server::start(env, db, 18081, &[], Some(&["following", "cache"])).await?;
    let took = graph::caught_up(&pool, &["following"]).await?;
    rows.push(Row::new(
        "graph",
        &format!(
            "{} users, {events} follows: projectors caught up",
            scale.graph_users
        ),
        format!(
            "{:.1} s ({:.0} events/s)",
            took.as_secs_f64(),
            events as f64 / took.as_secs_f64()
        ),
    ));
    if wanted('b') {
        rows.extend(reads(&server, env, db, scale).await?);
    }
    if wanted('a') {
        rows.extend(follow_commands(&server, env, db, scale, profile).await?);
    }
    if wanted('c') {
        rows.extend(lag(&server, &pool, scale).await?);
    }
    if wanted('f') {
        rows.extend(memory(&server, &pool).await?);
    }
    Ok(rows)
}

/// (a) follows at 1, 16, 64 clients vs the seed-000 design in SQL vs raw INSERTs.
async fn follow_commands(
    server: &Server,
    env: &Env,
    db: &str,
    scale: Scale,
    profile: Option<&str>,
) -> anyhow::Result<Vec<Row>> {
    let setup = env.pool(db, 2).await?;
    for sql in [
        "CREATE TABLE IF NOT EXISTS b_following (user_id bigint, target bigint, deleted boolean NOT NULL DEFAULT false,
            created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (user_id, target))",
        "CREATE INDEX IF NOT EXISTS b_following_target ON b_following (target, created_at)",
        "CREATE TABLE IF NOT EXISTS b_outbox (id bigserial PRIMARY KEY, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())",
        "CREATE TABLE IF NOT EXISTS b_raw (id bigserial PRIMARY KEY, a bigint NOT NULL, b bigint NOT NULL)",
    ] {
        sqlx::query(sql).execute(&setup).await?;
    }
    let mut rows = Vec::new();
    for (round, clients) in [1usize, 16, 64].into_iter().enumerate() {
        let perf = match (profile, clients) {
            (Some(path), 64) => {
                eprintln!(
                    "profiling the server (pid {}) and everything else into {path}",
                    server.pid()
                );
                Some(
                    Command::new("perf")
                        .args(["record", "-F", "499", "-g", "-a", "-o", path, "--", "sleep"])
                        .arg(scale.run.as_secs().to_string())
                        .stdout(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null())
                        .spawn()?,
                )
            }
            _ => None,
        };
        let http = {
            let (client, base) = (client(), server.base.clone());
            let tokens: Arc<Vec<String>> = Arc::new(
                (0..clients)
                    .map(|c| token(10_000_000 + (round * 100 + c) as i64))
                    .collect(),
            );
            closed_loop(clients, scale.run, move |c, i| {
                let (client, base, tokens) = (client.clone(), base.clone(), tokens.clone());
                async move {
                    let target = 20_000_000 + i as i64;
                    client
                        .post(format!("{base}/api/v1/relation/follow"))
                        .bearer_auth(&tokens[c])
                        .json(&serde_json::json!({ "target": target }))
                        .send()
                        .await
                        .is_ok_and(|r| r.status().is_success())
                }
            })
            .await
        };
        if let Some(mut perf) = perf {
            let _ = perf.wait();
        }
        let sql_pool = env.pool(db, clients.min(32) as u32).await?;
        let seed = {
            let pool = sql_pool.clone();
            closed_loop(clients, scale.run, move |c, i| {
                let pool = pool.clone();
                async move {
                    let user = 30_000_000 + (round * 100 + c) as i64;
                    let result: Result<(), sqlx::Error> = async {
                        let mut tx = pool.begin().await?;
                        sqlx::query(
                            "INSERT INTO b_following (user_id, target) VALUES ($1, $2)
                             ON CONFLICT (user_id, target) DO UPDATE SET deleted = false, updated_at = now()",
                        )
                        .bind(user)
                        .bind(i as i64)
                        .execute(&mut *tx)
                        .await?;
                        sqlx::query("INSERT INTO b_outbox (payload) VALUES ($1)")
                            .bind(serde_json::json!({"type": "follow", "user": user, "target": i}))
                            .execute(&mut *tx)
                            .await?;
                        tx.commit().await
                    }
                    .await;
                    result.is_ok()
                }
            })
            .await
        };
        let raw = {
            let pool = sql_pool.clone();
            closed_loop(clients, scale.run, move |c, i| {
                let pool = pool.clone();
                async move {
                    sqlx::query("INSERT INTO b_raw (a, b) VALUES ($1, $2)")
                        .bind(c as i64)
                        .bind(i as i64)
                        .execute(&pool)
                        .await
                        .is_ok()
                }
            })
            .await
        };
        let name = format!("a. follow, {clients} clients");
        rows.push(
            Row::new(&name, "HTTP follow (events + guard + answer)", rate(&http)).against(
                format!("seed-000 SQL: {}", rate(&seed)),
                http.per_sec() / seed.per_sec(),
            ),
        );
        let vs_raw = http.per_sec() / raw.per_sec();
        let mut row = Row::new(&name, "HTTP follow vs commit-rate floor", rate(&http))
            .against(format!("raw INSERT: {}", rate(&raw)), vs_raw);
        if clients == 64 {
            row = row.target(
                ">= 1.0x seed-000 and >= 0.7x raw",
                http.per_sec() >= seed.per_sec() && vs_raw >= 0.7,
            );
        }
        rows.push(row);
    }
    Ok(rows)
}

fn rate(stats: &Stats) -> String {
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

/// (b) status, batch of 20 and list pages over HTTP vs the same reads in SQL vs a trivial
/// axum handler, at 64 clients.
async fn reads(server: &Server, env: &Env, db: &str, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let clients = 64;
    let users = scale.graph_users;
    let ceiling = {
        let app = axum::Router::new().route(
            "/ping",
            axum::routing::get(|| async { axum::Json(serde_json::json!({"ok": true})) }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let client = client();
        closed_loop(clients, scale.run, move |_, _| {
            let client = client.clone();
            async move {
                client
                    .get(format!("http://127.0.0.1:{port}/ping"))
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success())
            }
        })
        .await
    };
    let mut rows = vec![Row::new(
        "b. reads, 64 clients",
        "trivial axum handler (HTTP ceiling)",
        rate(&ceiling),
    )];
    let pool = env.pool(db, 32).await?;
    for kind in ["status", "batch of 20", "following page"] {
        let http = {
            let (client, base) = (client(), server.base.clone());
            closed_loop(clients, scale.run, move |_, _| {
                let (client, base) = (client.clone(), base.clone());
                let path = read_path(kind, users);
                async move {
                    client
                        .get(format!("{base}{path}"))
                        .send()
                        .await
                        .is_ok_and(|r| r.status().is_success())
                }
            })
            .await
        };
        let sql = {
            let pool = pool.clone();
            closed_loop(clients, scale.run, move |_, _| {
                let pool = pool.clone();
                let (from, to) = ids(kind, users);
                async move { read_sql(&pool, kind, from, &to).await }
            })
            .await
        };
        let name = format!("b. {kind}, 64 clients");
        rows.push(Row::new(&name, "HTTP", rate(&http)).against(
            format!("same read in SQL: {}", rate(&sql)),
            http.per_sec() / sql.per_sec(),
        ));
        let vs_ceiling = http.per_sec() / ceiling.per_sec();
        let mut row = Row::new(
            &name,
            "HTTP vs the HTTP ceiling",
            format!("{:.0}/s", http.per_sec()),
        )
        .against(
            format!("trivial handler: {:.0}/s", ceiling.per_sec()),
            vs_ceiling,
        );
        if kind == "batch of 20" {
            row = row.target(
                ">= 0.3x ceiling, p99 < 5 ms",
                vs_ceiling >= 0.3 && http.ms(0.99) < 5.0,
            );
        }
        rows.push(row);
    }
    Ok(rows)
}

fn ids(kind: &str, users: i64) -> (i64, Vec<i64>) {
    let mut rng = rand::rng();
    let from = rng.random_range(1..=users);
    let n = if kind == "batch of 20" { 20 } else { 1 };
    (from, (0..n).map(|_| rng.random_range(1..=users)).collect())
}

fn read_path(kind: &str, users: i64) -> String {
    let (from, to) = ids(kind, users);
    match kind {
        "status" => format!("/api/v1/relation/status?from={from}&to={}", to[0]),
        "batch of 20" => format!(
            "/api/v1/relation/batch?from={from}&to={}",
            to.iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(",")
        ),
        _ => format!("/api/v1/users/{from}/following?offset=20"),
    }
}

async fn read_sql(pool: &PgPool, kind: &str, from: i64, to: &[i64]) -> bool {
    let user = |id: i64| relations_domain::UserId::try_from(id).expect("positive");
    match kind {
        "following page" => {
            relations_projections::following::query::following(pool, user(from), 20, 20)
                .await
                .is_ok()
        }
        _ => {
            let to: Vec<_> = to.iter().map(|&t| user(t)).collect();
            relations_projections::following::query::relations(pool, user(from), &to)
                .await
                .is_ok()
        }
    }
}

/// (c) projection lag from append to visible, at a sustained write rate (open loop).
async fn lag(server: &Server, pool: &PgPool, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let client = client();
    let interval = Duration::from_secs_f64(1.0 / f64::from(scale.lag_rate));
    let (sent, mut received) = tokio::sync::mpsc::unbounded_channel::<(String, Instant)>();
    let writer = {
        let base = server.base.clone();
        let total = (scale.lag_for.as_secs_f64() * f64::from(scale.lag_rate)) as u64;
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(interval);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            let tokens: Arc<Vec<String>> =
                Arc::new((0..50).map(|u| token(40_000_000 + u)).collect());
            let mut tasks = Vec::new();
            for i in 0..total {
                ticker.tick().await;
                let (client, base, tokens, sent) =
                    (client.clone(), base.clone(), tokens.clone(), sent.clone());
                tasks.push(tokio::spawn(async move {
                    let response = client
                        .post(format!("{base}/api/v1/relation/follow"))
                        .bearer_auth(&tokens[(i % 50) as usize])
                        .json(&serde_json::json!({"target": 50_000_000 + i}))
                        .send()
                        .await;
                    if let Ok(response) = response {
                        let at = Instant::now();
                        if let Ok(body) = response.json::<serde_json::Value>().await {
                            if let Some(position) = body["position"].as_str() {
                                let _ = sent.send((position.to_owned(), at));
                            }
                        }
                    }
                }));
            }
            for task in tasks {
                let _ = task.await;
            }
        })
    };
    // The poller: the checkpoint of `following`, every millisecond.
    let mut pending: Vec<((i64, i64), Instant)> = Vec::new();
    let mut lags = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3)?;
    let mut writer = Some(writer);
    loop {
        while let Ok((position, at)) = received.try_recv() {
            let (t, g) = position.split_once('.').expect("a position");
            pending.push(((t.parse()?, g.parse()?), at));
        }
        let (t, g): (i64, i64) = sqlx::query_as(
            "SELECT transaction_id, global_position FROM projector_checkpoints WHERE name = 'following'",
        )
        .fetch_one(pool)
        .await?;
        let now = Instant::now();
        pending.retain(|&(position, at)| {
            if position <= (t, g) {
                let _ = lags.record(now.saturating_duration_since(at).as_micros().max(1) as u64);
                false
            } else {
                true
            }
        });
        if writer.as_ref().is_some_and(|w| w.is_finished()) {
            writer.take();
        }
        if writer.is_none() && pending.is_empty() && received.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let p99 = lags.value_at_quantile(0.99) as f64 / 1000.0;
    Ok(vec![Row::new(
        &format!("c. projection lag at {} follows/s", scale.lag_rate),
        "append (answer) to visible in the read model: p50/p99/max",
        format!(
            "{:.1}/{:.1}/{:.1} ms over {} follows",
            lags.value_at_quantile(0.5) as f64 / 1000.0,
            p99,
            lags.max() as f64 / 1000.0,
            lags.len()
        ),
    )
    .target(
        "p99 < 100 ms at 1,000/s",
        p99 < 100.0 && scale.lag_rate >= 1000,
    )])
}

/// (f) server memory, and bytes per follow edge.
async fn memory(server: &Server, pool: &PgPool) -> anyhow::Result<Vec<Row>> {
    let (edges, follows, feed_follows, events, event_rows): (i64, i64, i64, i64, i64) =
        sqlx::query_as(
            "SELECT (SELECT count(*) FROM rm_follows), pg_total_relation_size('rm_follows'),
                pg_total_relation_size('feed_follows'), pg_total_relation_size('events'),
                (SELECT count(*) FROM events)",
        )
        .fetch_one(pool)
        .await?;
    let per = |bytes: i64| bytes as f64 / edges.max(1) as f64;
    Ok(vec![
        Row::new(
            "f. memory",
            "server RSS after the graph scenarios",
            format!("{:.1} MiB", server.rss_kib() as f64 / 1024.0),
        ),
        Row::new(
            "f. memory",
            "PostgreSQL bytes per follow edge: rm_follows (table + 3 indexes)",
            format!("{:.0} B", per(follows)),
        ),
        Row::new(
            "f. memory",
            "PostgreSQL bytes per follow edge: feed_follows (the feed's copy)",
            format!("{:.0} B", per(feed_follows)),
        ),
        Row::new(
            "f. memory",
            "PostgreSQL bytes per event in the log (table + indexes)",
            format!("{:.0} B", events as f64 / event_rows.max(1) as f64),
        ),
    ])
}

/// (d) rebuild of `following` from the log vs COPY of the same rows into a table shaped like
/// `rm_follows`.
async fn rebuild(env: &Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let db = "bench_rebuild";
    let pool = env.fresh_database(db).await?;
    let edges = graph::follows(scale.rebuild_users, 7);
    let events = graph::load_follows(&pool, &edges).await?;
    eprintln!("rebuild: {events} events appended");
    let started = Instant::now();
    let status = Command::new(&env.bin)
        .args(["rebuild", "following"])
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

/// (e) fan-out of one post to 5,000 followers; feed pages for readers following 1,000 authors
/// of whom 50 are over the threshold: hybrid vs pure push vs pure pull; Stream-Framework.
async fn feed(env: &Env, scale: Scale, python: Option<&str>) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    // Fan-out: author 1 with 5,000 followers, under a threshold above that (push).
    let db = "bench_fanout";
    let pool = env.fresh_database(db).await?;
    let edges: Vec<(i64, i64)> = (2..=5001).map(|f| (f, 1)).collect();
    graph::load_follows(&pool, &edges).await?;
    let server = Server::start(
        env,
        db,
        18082,
        &[("RELATIONS_BIG_V_THRESHOLD", "10000".into())],
        None,
    )
    .await?;
    graph::caught_up(&pool, &["feed"]).await?;
    let client = client();
    let author = token(1);
    let mut fanouts = Vec::new();
    for i in 0..5 {
        let response: serde_json::Value = client
            .post(format!("{}/api/v1/posts", server.base))
            .bearer_auth(&author)
            .json(&serde_json::json!({"content": format!("fan-out {i}")}))
            .send()
            .await?
            .json()
            .await?;
        let answered = Instant::now();
        let position = response["position"].as_str().unwrap_or_default().to_owned();
        let (t, g) = position.split_once('.').expect("a position");
        let (t, g): (i64, i64) = (t.parse()?, g.parse()?);
        loop {
            let done: bool = sqlx::query_scalar(
                "SELECT (transaction_id, global_position) >= ($1, $2) FROM projector_checkpoints WHERE name = 'feed'",
            )
            .bind(t)
            .bind(g)
            .fetch_one(&pool)
            .await?;
            if done {
                break;
            }
            tokio::time::sleep(Duration::from_micros(500)).await;
        }
        fanouts.push(answered.elapsed().as_secs_f64() * 1000.0);
    }
    drop(server);
    fanouts.sort_by(f64::total_cmp);
    let median = fanouts[fanouts.len() / 2];
    let inboxes: i64 = sqlx::query_scalar("SELECT count(DISTINCT reader) FROM feed_inbox")
        .fetch_one(&pool)
        .await?;
    let mut row = Row::new(
        "e. fan-out of one post to 5,000 followers",
        "answer to every inbox written (median of 5; max)",
        format!(
            "{median:.0} ms; {:.0} ms ({inboxes} inboxes)",
            fanouts[fanouts.len() - 1]
        ),
    );
    let stream_framework = python.map(|python| stream_framework(python, &env.redis_url));
    if let Some(Ok((fanout_ms, _))) = &stream_framework {
        row = row.against(
            format!("Stream-Framework RedisFeed: {fanout_ms:.0} ms"),
            fanout_ms / median,
        );
    }
    rows.push(row.target("< 250 ms", median < 250.0));

    // Feed pages: readers following 1,000 authors, 50 of them over a threshold of 100.
    let mut pages = Vec::new();
    for (mode, threshold) in [
        ("hybrid", 100),
        ("pure push", 1_000_000_000),
        ("pure pull", 1),
    ] {
        let db = format!("bench_feed_{}", mode.replace(' ', "_"));
        let pool = env.fresh_database(&db).await?;
        let authors: Vec<i64> = (100_000..101_000).collect();
        let mut edges: Vec<(i64, i64)> = Vec::new();
        for reader in 1..=scale.feed_readers {
            edges.extend(authors.iter().map(|&a| (reader, a)));
        }
        for (i, &big) in authors[..50].iter().enumerate() {
            edges.extend((0..100).map(|f| (200_000 + i as i64 * 100 + f, big)));
        }
        graph::load_follows(&pool, &edges).await?;
        let mut posts = Vec::new();
        for _ in 0..scale.feed_posts_per_author {
            posts.extend(authors.iter().copied());
        }
        graph::load_posts(&pool, &posts).await?;
        let server = Server::start(
            env,
            &db,
            18083,
            &[("RELATIONS_BIG_V_THRESHOLD", threshold.to_string())],
            None,
        )
        .await?;
        let took = graph::caught_up(&pool, &["feed", "feed_cache"]).await?;
        eprintln!("feed {mode}: caught up in {:.1} s", took.as_secs_f64());
        let tokens: Arc<Vec<String>> = Arc::new((1..=scale.feed_readers).map(token).collect());
        let (client, base) = (client.clone(), server.base.clone());
        let stats = closed_loop(16, scale.run, move |c, i| {
            let (client, base, tokens) = (client.clone(), base.clone(), tokens.clone());
            async move {
                client
                    .get(format!("{base}/api/v1/feed"))
                    .bearer_auth(&tokens[(c + i as usize) % tokens.len()])
                    .send()
                    .await
                    .is_ok_and(|r| r.status().is_success())
            }
        })
        .await;
        if mode == "hybrid" {
            rows.push(inbox_bytes(&env.redis_url, &db).await?);
        }
        pages.push((mode, stats));
    }
    let hybrid = &pages[0].1;
    for (mode, stats) in &pages {
        let mut row = Row::new(
            "e. feed first page, 1,000 authors (50 over threshold), 16 clients",
            mode,
            rate(stats),
        );
        if *mode != "hybrid" {
            row = row.against(
                format!("hybrid: {:.0}/s", hybrid.per_sec()),
                hybrid.per_sec() / stats.per_sec(),
            );
        } else {
            if let Some(Ok((_, read_ms))) = &stream_framework {
                row = row.against(
                    format!("Stream-Framework page read p50: {read_ms:.2} ms"),
                    read_ms / stats.ms(0.5),
                );
            }
            row = row.target("p99 < 10 ms", stats.ms(0.99) < 10.0);
        }
        rows.push(row);
    }
    if let Some(Err(error)) = stream_framework {
        rows.push(Row::new(
            "e. Stream-Framework",
            "not measured",
            format!("{error:#}"),
        ));
    }
    Ok(rows)
}

/// Redis bytes per cached inbox entry (sorted sets of the readers whose feeds were read),
/// beside Stream-Framework's feed of 1,000 activities when it ran.
async fn inbox_bytes(redis_url: &str, db: &str) -> anyhow::Result<Row> {
    let client = redis::Client::open(redis_url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("bench:{db}:feed:*"))
        .query_async(&mut conn)
        .await?;
    let (mut bytes, mut entries) = (0i64, 0i64);
    for key in keys.iter().filter(|k| !k.ends_with(":gen")) {
        let used: Option<i64> = redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(key)
            .query_async(&mut conn)
            .await?;
        let count: i64 = redis::cmd("ZCARD").arg(key).query_async(&mut conn).await?;
        bytes += used.unwrap_or(0);
        entries += count;
    }
    let ours = bytes as f64 / entries.max(1) as f64;
    let mut row = Row::new(
        "f. memory (Redis)",
        "bytes per cached inbox entry (hybrid feed readers' sorted sets)",
        format!("{ours:.0} B ({entries} entries)"),
    );
    let theirs: Option<i64> = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg("bench_sf_feed:1")
        .query_async(&mut conn)
        .await?;
    if let Some(theirs) = theirs {
        let per = theirs as f64 / 1000.0;
        row = row.against(
            format!("Stream-Framework feed: {per:.0} B per entry"),
            per / ours,
        );
    }
    Ok(row)
}

/// The LinkBench-style mix, in shares of 100: list pages, relation checks, counts, follows and
/// unfollows, posts, feed reads.
const MIX: [(&str, u32); 8] = [
    ("following page", 25),
    ("followers page", 25),
    ("status", 10),
    ("batch of 20", 8),
    ("counts", 12),
    ("follow/unfollow", 10),
    ("post", 4),
    ("feed page", 6),
];

/// (g) the request mix at 64 clients, on a graph of its own with every projector running
/// (the feed's projector folds one event at a time, so this graph is smaller).
async fn mixed(env: &Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let users = (scale.graph_users / 10).max(2_000);
    let db = "bench_mixed";
    let pool = env.fresh_database(db).await?;
    let events = graph::load_follows(&pool, &graph::follows(users, 11)).await?;
    let posts: Vec<i64> = (1..=users).collect();
    graph::load_posts(&pool, &posts).await?;
    let server = Server::start(env, db, 18084, &[], None).await?;
    let took = graph::caught_up(&pool, &["following", "feed"]).await?;
    eprintln!(
        "mixed: {events} follows and {users} posts folded in {:.1} s",
        took.as_secs_f64()
    );
    let tokens: Arc<Vec<String>> = Arc::new((1..=users).map(token).collect());
    let (client, base) = (client(), server.base.clone());
    let stats = closed_loop(64, scale.run * 2, move |_, i| {
        let (client, base, tokens) = (client.clone(), base.clone(), tokens.clone());
        let (user, other, mut pick) = {
            let mut rng = rand::rng();
            (
                rng.random_range(1..=users),
                rng.random_range(1..=users),
                rng.random_range(0..100u32),
            )
        };
        let batch = read_path("batch of 20", users);
        async move {
            let token = &tokens[(user - 1) as usize];
            let kind = MIX
                .iter()
                .find(|(_, share)| {
                    if pick < *share {
                        true
                    } else {
                        pick -= share;
                        false
                    }
                })
                .map_or("status", |m| m.0);
            let request = match kind {
                "following page" => client.get(format!("{base}/api/v1/users/{user}/following")),
                "followers page" => client.get(format!("{base}/api/v1/users/{user}/followers")),
                "status" => client.get(format!(
                    "{base}/api/v1/relation/status?from={user}&to={other}"
                )),
                "batch of 20" => client.get(format!("{base}{batch}")),
                "counts" => client.get(format!("{base}/api/v1/users/{user}/counts")),
                "follow/unfollow" => {
                    let verb = if i % 2 == 0 { "follow" } else { "unfollow" };
                    client
                        .post(format!("{base}/api/v1/relation/{verb}"))
                        .bearer_auth(token)
                        .json(&serde_json::json!({"target": other}))
                }
                "post" => client
                    .post(format!("{base}/api/v1/posts"))
                    .bearer_auth(token)
                    .json(&serde_json::json!({"content": "mixed workload"})),
                _ => client.get(format!("{base}/api/v1/feed")).bearer_auth(token),
            };
            // Refusals the rules make (a follow of someone who blocks you, the follow limit)
            // are answers too; only 5xx and transport errors count as failures.
            request
                .send()
                .await
                .is_ok_and(|r| !r.status().is_server_error())
        }
    })
    .await;
    Ok(vec![Row::new(
        &format!("g. LinkBench-style mix, 64 clients, {users} users"),
        "50% list pages, 18% relation checks, 12% counts, 10% follow/unfollow, 4% posts, 6% feed pages",
        rate(&stats),
    )])
}

/// Stream-Framework's RedisFeed on the same Redis: (fan-out of one activity to 5,000
/// followers in ms, p50 of reading a page of 10 in ms).
fn stream_framework(python: &str, redis_url: &str) -> anyhow::Result<(f64, f64)> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/stream_framework_bench.py");
    let output = Command::new(python).arg(script).arg(redis_url).output()?;
    anyhow::ensure!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    Ok((
        result["fanout_ms"].as_f64().unwrap_or(f64::NAN),
        result["page_p50_ms"].as_f64().unwrap_or(f64::NAN),
    ))
}
