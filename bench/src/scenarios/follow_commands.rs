//! (a) follow commands over HTTP vs the seed-000 design in SQL vs raw single-row INSERTs; at
//! 64 clients also with the projector stopped (the command path alone).

use std::process::Command;
use std::sync::Arc;

use super::scale::Scale;
use crate::harness::rate;
use sqlx::PgPool;

use crate::harness::{client, closed_loop, token, Env, Row, Server, Stats};

/// (a) follows at 1, 16, 64 clients vs the seed-000 design in SQL vs raw INSERTs; the rows,
/// and the follow rate measured at 64 clients (the maximum, which (c) loads at 70% of).
pub async fn follow_commands(
    server: &Server,
    env: &Env,
    db: &str,
    scale: Scale,
    profile: Option<&str>,
) -> anyhow::Result<(Vec<Row>, f64)> {
    let setup = env.pool(db, 2).await?;
    for sql in [
        "CREATE TABLE IF NOT EXISTS b_following (user_id bigint, target bigint, deleted boolean NOT NULL DEFAULT false,
            created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (user_id, target))",
        "CREATE INDEX IF NOT EXISTS b_following_target ON b_following (target, created_at)",
        "CREATE TABLE IF NOT EXISTS b_outbox (id bigserial PRIMARY KEY, payload jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now())",
        "CREATE TABLE IF NOT EXISTS b_raw (id bigserial PRIMARY KEY, a bigint NOT NULL, b bigint NOT NULL)",
        // The seed-000 design's asynchronous half: what its outbox consumer keeps.
        "CREATE TABLE IF NOT EXISTS b_followers (target bigint, user_id bigint, PRIMARY KEY (target, user_id))",
        "CREATE TABLE IF NOT EXISTS b_counts (user_id bigint PRIMARY KEY, following bigint NOT NULL, followers bigint NOT NULL)",
    ] {
        sqlx::query(sql).execute(&setup).await?;
    }
    let mut rows = Vec::new();
    let mut maximum = 0.0;
    for (round, clients) in [1usize, 16, 64].into_iter().enumerate() {
        let perf = match (profile, clients) {
            (Some(path), 64) => Some(start_perf(server, path, scale)?),
            _ => None,
        };
        let http = http_follows(server, clients, round, scale).await;
        // How long after the last answer the follower lists and counts were current.
        let current =
            crate::graph::caught_up(&setup, &[relations_projections::relations::NAME]).await?;
        if let Some(mut perf) = perf {
            let _ = perf.wait();
        }
        let sql_pool = env.pool(db, clients.min(32) as u32).await?;
        let seed = seed_follows(&sql_pool, clients, round, scale).await;
        let raw = raw_inserts(&sql_pool, clients, scale).await;
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
            maximum = http.per_sec();
        }
        rows.push(row);
        if clients == 64 {
            rows.extend(with_async_half(&setup, &sql_pool, (&http, current), scale).await?);
            rows.push(command_path_alone(server, &setup, scale, &seed).await?);
            let (ours, theirs) = (http.ms(0.99), seed.ms(0.99));
            rows.push(
                Row::new(&name, "follow answer p99", format!("{ours:.2} ms"))
                    .against(format!("seed-000 SQL p99: {theirs:.2} ms"), theirs / ours)
                    .target("<= the seed-000 p99", ours <= theirs),
            );
        }
    }
    Ok((rows, maximum))
}

/// The same 64-client follows (users of their own, round 10) with projector `following`
/// stopped while they run, against the seed-000 run just made: the command path's share of
/// the gap. The projector catches up before anything else runs.
async fn command_path_alone(
    server: &Server,
    setup: &PgPool,
    scale: Scale,
    seed: &Stats,
) -> anyhow::Result<Row> {
    server.pause_projectors(true)?;
    let alone = http_follows(server, 64, 10, scale).await;
    server.pause_projectors(false)?;
    crate::graph::caught_up(setup, &[relations_projections::relations::NAME]).await?;
    Ok(Row::new(
        "a. follow, 64 clients",
        "HTTP follow with projector `following` stopped meanwhile: the command path alone",
        rate(&alone),
    )
    .against(
        format!("seed-000 SQL: {}", rate(seed)),
        alone.per_sec() / seed.per_sec(),
    ))
}

/// A system-wide `perf` profile for as long as one closed loop runs.
fn start_perf(server: &Server, path: &str, scale: Scale) -> anyhow::Result<std::process::Child> {
    eprintln!(
        "profiling the server (pid {}) and everything else into {path}",
        server.pid()
    );
    Ok(Command::new("perf")
        .args(["record", "-F", "499", "-g", "-a", "-o", path, "--", "sleep"])
        .arg(scale.run.as_secs().to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()?)
}

/// Follows over HTTP, each client a user of its own following fresh targets.
async fn http_follows(server: &Server, clients: usize, round: usize, scale: Scale) -> Stats {
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
}

/// The seed-000 design in SQL: the follow row upserted and an outbox row, in one transaction.
async fn seed_follows(pool: &PgPool, clients: usize, round: usize, scale: Scale) -> Stats {
    let pool = pool.clone();
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
}

/// Issue 28's second baseline: the seed-000 design with its asynchronous half, one consumer
/// draining the outbox (in batches of 1,000, as an MQ consumer would) into a follower table and
/// both users' counters while 64 clients write, against our follows (`http`, just measured);
/// and at each end, how long after the last answer the follower lists and counts were current
/// (ours: projector `following` caught up; theirs: the outbox drained).
async fn with_async_half(
    setup: &PgPool,
    pool: &PgPool,
    (http, ours_current): (&Stats, std::time::Duration),
    scale: Scale,
) -> anyhow::Result<Vec<Row>> {
    sqlx::query("TRUNCATE b_outbox").execute(setup).await?;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let consumer = tokio::spawn(consume_outbox(setup.clone(), stop.clone()));
    // Users of their own (round 9), so no follow repeats an earlier round's.
    let seed = seed_follows(pool, 64, 9, scale).await;
    let answered = std::time::Instant::now();
    loop {
        let left: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM b_outbox)")
            .fetch_one(setup)
            .await?;
        if !left {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let theirs_current = answered.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    consumer.await??;
    let name = "a. follow, 64 clients";
    let ratio = http.per_sec() / seed.per_sec();
    let (ours_ms, theirs_ms) = (
        ours_current.as_secs_f64() * 1e3,
        theirs_current.as_secs_f64() * 1e3,
    );
    Ok(vec![
        Row::new(
            name,
            "HTTP follow vs seed-000 with its asynchronous half (an outbox consumer keeping a follower table and counters, running beside)",
            rate(http),
        )
        .against(format!("seed-000 + consumer: {}", rate(&seed)), ratio)
        .target(">= 1.5x", ratio >= 1.5),
        Row::new(
            name,
            "follower lists and counts current after the last answer (ours: `following` caught up)",
            format!("{ours_ms:.0} ms"),
        )
        .against(
            format!("seed-000's consumer drained its outbox: {theirs_ms:.0} ms"),
            theirs_ms / ours_ms.max(1.0),
        ),
    ])
}

/// Seed 000's outbox consumer: takes the oldest 1,000 outbox rows, adds the follower rows and
/// both users' counts, in one transaction, until `stop`.
async fn consume_outbox(
    pool: PgPool,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> anyhow::Result<()> {
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let mut tx = pool.begin().await?;
        let edges: Vec<(i64, i64)> = sqlx::query_as(
            "WITH batch AS (
                 DELETE FROM b_outbox WHERE id IN
                     (SELECT id FROM b_outbox ORDER BY id LIMIT 1000 FOR UPDATE SKIP LOCKED)
                 RETURNING (payload->>'target')::bigint AS target, (payload->>'user')::bigint AS u)
             INSERT INTO b_followers (target, user_id) SELECT target, u FROM batch
             ON CONFLICT DO NOTHING RETURNING target, user_id",
        )
        .fetch_all(&mut *tx)
        .await?;
        let (targets, users): (Vec<i64>, Vec<i64>) = edges.into_iter().unzip();
        sqlx::query(
            "INSERT INTO b_counts (user_id, following, followers)
             SELECT DISTINCT id, 0, 0 FROM unnest($1::bigint[] || $2::bigint[]) AS id
             ON CONFLICT (user_id) DO NOTHING",
        )
        .bind(&targets)
        .bind(&users)
        .execute(&mut *tx)
        .await?;
        for (column, ids) in [("followers", &targets), ("following", &users)] {
            sqlx::query(&format!(
                "UPDATE b_counts c SET {column} = c.{column} + n.k
                   FROM (SELECT id, count(*) AS k FROM unnest($1::bigint[]) AS id GROUP BY id) n
                  WHERE c.user_id = n.id"
            ))
            .bind(ids)
            .execute(&mut *tx)
            .await?;
        }
        let empty = targets.is_empty();
        tx.commit().await?;
        if empty {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }
    Ok(())
}

/// The commit-rate floor: one single-row INSERT per transaction.
async fn raw_inserts(pool: &PgPool, clients: usize, scale: Scale) -> Stats {
    let pool = pool.clone();
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
}
