//! The world the scenarios share at `--users N`: N users' LinkBench-shaped follows and a post
//! each, appended through the log like an operator's bulk import, settled, and folded once the
//! way README's "Bulk loads" tells an operator to: `relations rebuild` of each read model, and
//! the Redis caches started at the rebuilt models' positions (no reader has filled them, so
//! there is nothing in them to keep current). A live projector then only confirms it is caught
//! up. Each scenario then runs on a file copy of it (`Env::fresh_database`), with
//! its own users numbered after the world's ([`Scale::base`]), so every figure is measured
//! against tables, indexes and an in-memory graph of the world's size.

use std::time::{Duration, Instant};

use relations_projections::runtime::checkpoint;
use sqlx::PgPool;

use super::scale::Scale;
use crate::graph;
use crate::harness::{Env, Row, Server};

/// The template database.
pub const WORLD: &str = "bench_world";

/// Loads the world and makes `env` copy it from now on; its rows (load, fold, bytes on disk).
pub async fn world(env: &mut Env, scale: Scale) -> anyhow::Result<Vec<Row>> {
    let Some(users) = scale.world() else {
        return Ok(Vec::new());
    };
    let pool = env.fresh_database(WORLD).await?;
    let started = Instant::now();
    let follows = graph::load_follows(&pool, &graph::follows(users, 42)).await?;
    let authors: Vec<i64> = (1..=users).collect();
    let posts = graph::load_posts(&pool, &authors).await?;
    let appended = started.elapsed();
    eprintln!(
        "world: {follows} follows and {posts} posts appended in {:.1} s",
        appended.as_secs_f64()
    );
    let started = Instant::now();
    let models = models(&pool)?;
    let rebuilds = rebuild_models(env, &models)?;
    let rebuilt = started.elapsed();
    start_caches(&pool).await?;
    let names: Vec<&str> = (models.into_iter()).chain(CACHES.map(|c| c.0)).collect();
    let server = Server::start(env, WORLD, 18079, &[], None).await?;
    let confirmed = graph::caught_up(&pool, &names).await?;
    drop(server);
    let events = follows + posts;
    let bytes = bytes(&pool, &format!("world: {users} users"), follows, events).await?;
    let spent = where_bytes_go(&pool, &format!("world: {users} users"), follows).await?;
    sqlx::query("CHECKPOINT").execute(&pool).await?;
    pool.close().await;
    env.world = Some(WORLD.to_owned());
    let scenario = format!("world: {users} users");
    Ok(vec![
        Row::new(
            &scenario,
            &format!("{follows} follows and {posts} posts appended (bulk, then VACUUM ANALYZE and a checkpoint)"),
            format!(
                "{:.1} s ({:.0} events/s)",
                appended.as_secs_f64(),
                events as f64 / appended.as_secs_f64()
            ),
        ),
        Row::new(
            &scenario,
            &format!(
                "every read model rebuilt (`relations rebuild` of each, one after another: {})",
                rebuilds
                    .iter()
                    .map(|(name, took)| format!("{name} {:.0} s", took.as_secs_f64()))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            format!(
                "{:.1} s ({:.0} events/s)",
                rebuilt.as_secs_f64(),
                events as f64 / rebuilt.as_secs_f64()
            ),
        ),
        Row::new(
            &scenario,
            "a server's projectors (every read model and the two caches) confirmed caught up",
            format!("{:.1} s", confirmed.as_secs_f64()),
        ),
        bytes,
        spent,
    ])
}

/// Where the database's bytes go, per follow: each table of 10 B a follow or more (its heap,
/// its TOAST, each index), biggest first (issue 48, item 1).
async fn where_bytes_go(pool: &PgPool, scenario: &str, follows: u64) -> anyhow::Result<Row> {
    // A partition's bytes count as its partitioned table's, its index's as the parent index's.
    let parts: Vec<(String, String, i64)> = sqlx::query_as(
        "WITH parent AS (SELECT h.inhrelid AS oid, p.relname::text AS name
                           FROM pg_inherits h JOIN pg_class p ON p.oid = h.inhparent),
              part AS (
         SELECT t.oid AS t, 'heap' AS part, pg_relation_size(t.oid) AS bytes
           FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
          WHERE n.nspname = current_schema() AND t.relkind = 'r'
         UNION ALL
         SELECT t.oid, 'TOAST', pg_total_relation_size(t.reltoastrelid)
           FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
          WHERE n.nspname = current_schema() AND t.relkind = 'r' AND t.reltoastrelid <> 0
         UNION ALL
         SELECT t.oid, coalesce(pi.name, i.relname::text), pg_relation_size(i.oid)
           FROM pg_index x
           JOIN pg_class i ON i.oid = x.indexrelid
           JOIN pg_class t ON t.oid = x.indrelid
           JOIN pg_namespace n ON n.oid = t.relnamespace
           LEFT JOIN parent pi ON pi.oid = i.oid
          WHERE n.nspname = current_schema() AND t.relkind = 'r')
         SELECT coalesce(pt.name, c.relname::text), part.part, sum(part.bytes)::bigint
           FROM part JOIN pg_class c ON c.oid = part.t LEFT JOIN parent pt ON pt.oid = part.t
          GROUP BY 1, 2",
    )
    .fetch_all(pool)
    .await?;
    let per = |bytes: i64| bytes as f64 / follows.max(1) as f64;
    let mut tables: std::collections::BTreeMap<&str, Vec<(&str, i64)>> = Default::default();
    for (table, part, bytes) in &parts {
        tables.entry(table).or_default().push((part, *bytes));
    }
    /// A table, its bytes in all, and each part's (heap, TOAST, an index).
    type Spent<'a> = (&'a str, i64, Vec<(&'a str, i64)>);
    let mut tables: Vec<Spent> = tables
        .into_iter()
        .map(|(table, parts)| (table, parts.iter().map(|p| p.1).sum(), parts))
        .collect();
    tables.sort_by_key(|t| std::cmp::Reverse(t.1));
    let mut shown = Vec::new();
    for (table, total, parts) in tables {
        let parts: Vec<String> = parts
            .iter()
            .filter(|p| p.1 > 0)
            .map(|(part, bytes)| format!("{part} {:.0}", per(*bytes)))
            .collect();
        let line = format!("{table} {:.0} B ({})", per(total), parts.join(", "));
        eprintln!("world: bytes per follow: {line}");
        if per(total) >= 10.0 {
            shown.push(line);
        }
    }
    Ok(Row::new(
        scenario,
        "where the bytes go, per follow: each table of 10 B or more (heap, TOAST, each index)",
        shown.join("; "),
    ))
}

/// The world's bytes on disk: the whole database per follow, the log per event.
async fn bytes(pool: &PgPool, scenario: &str, follows: u64, events: u64) -> anyhow::Result<Row> {
    let (database, event_bytes): (i64, i64) = sqlx::query_as(concat!(
        "SELECT pg_database_size(current_database()), ",
        relations_store::log_bytes!()
    ))
    .fetch_one(pool)
    .await?;
    let per_follow = database as f64 / follows.max(1) as f64;
    let per_event = event_bytes as f64 / events.max(1) as f64;
    Ok(Row::new(
        scenario,
        "PostgreSQL bytes per follow, whole database (and the log per event)",
        format!(
            "{per_follow:.0} B per follow ({:.2} GiB in all); {per_event:.0} B per event",
            database as f64 / 1073741824.0,
        ),
    )
    .target(
        "<= 700 B per follow, <= 250 B per event (issue 48)",
        per_follow <= 700.0 && per_event <= 250.0,
    ))
}

/// Every read model, as `relations_projections::all` names them (the caches aside), rebuilt
/// one after another. A model missing here starts from nothing in each scenario's copy of the
/// world and folds its 12M events while the scenario measures: `lists` and `filters` did,
/// from the sessions that added them until this list was taken from `all` (BENCHMARKS.md,
/// thirty-first round).
fn models(pool: &PgPool) -> anyhow::Result<Vec<&'static str>> {
    let keys = crate::harness::keyring(pool)?;
    let all = relations_projections::all(Default::default(), &keys, None);
    Ok(all.iter().map(|p| p.name()).collect())
}

/// The Redis caches, each with the model it follows.
const CACHES: [(&str, &str); 2] = [
    (
        relations_projections::feed::inbox_cache::NAME,
        relations_projections::feed::NAME,
    ),
    (
        relations_projections::engagement::like_cache::NAME,
        relations_projections::engagement::NAME,
    ),
];

/// `relations rebuild` of each read model on the world, as README's "Bulk loads" says; how
/// long each took.
fn rebuild_models(
    env: &Env,
    models: &[&'static str],
) -> anyhow::Result<Vec<(&'static str, Duration)>> {
    let mut took = Vec::new();
    for &name in models {
        let one = super::rebuild::run_rebuild(env, WORLD, name)?;
        eprintln!(
            "world: relations rebuild {name}: {:.1} s",
            one.as_secs_f64()
        );
        took.push((name, one));
    }
    Ok(took)
}

/// Starts each cache where its model stands. The caches hold what readers read, and none has
/// read this world (a copy gets a Redis prefix of its own). A copy whose inbox cache is
/// millions of events behind spends every scenario catching it up (the first 1M mix did);
/// folding them live through 12M events is hours of lookups that touch no entry.
async fn start_caches(pool: &PgPool) -> anyhow::Result<()> {
    for (cache, upstream) in CACHES {
        let mut conn = pool.acquire().await?;
        let at = checkpoint::read(&mut *conn, upstream).await?;
        checkpoint::register(&mut *conn, cache).await?;
        checkpoint::advance(&mut conn, cache, at, 0).await?;
    }
    Ok(())
}

/// The graph of (a), (b), (c), (f), (l) and (s) in `pool`: the world's (seed 42), or loaded here
/// with the same seed; how many follow events it holds.
pub(super) async fn load_graph(pool: &sqlx::PgPool, scale: Scale) -> anyhow::Result<u64> {
    if scale.world().is_some() {
        // Every event of the world but its posts, one per user.
        let events = relations_store::log::footprint(pool).await?.0 as u64;
        return Ok(events - scale.graph_users as u64);
    }
    let edges = graph::follows(scale.graph_users, 42);
    let loaded = Instant::now();
    let events = graph::load_follows(pool, &edges).await?;
    eprintln!(
        "graph: {events} follow events appended in {:.1} s",
        loaded.elapsed().as_secs_f64()
    );
    Ok(events)
}
