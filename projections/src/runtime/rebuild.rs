//! `relations rebuild NAME`: fold the whole log into shadow tables while the live read model
//! keeps serving, then swap them in atomically.
//!
//! The shadow tables live in a schema of their own (`rebuild_<name>_<live schema>`), created `LIKE` the live
//! ones with every index, beside a shadow checkpoint. The rebuild connection puts that schema
//! first on its `search_path`, so the projector's own code, with unqualified table names, writes
//! the shadows. Once caught up, one transaction locks the live checkpoint (the live runner waits),
//! applies the last events, drops the live tables, moves the shadows in, and takes over the
//! checkpoint. Readers see the old model or the new one, never a mix.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use relations_store::log::{self, RecordedEvent};
use relations_store::LogPosition;
use sqlx::{Connection, PgConnection, PgPool};
use tokio::sync::mpsc;

use super::checkpoint;
use super::copy_out;
use super::projector::{BulkFold, Projector};
use super::runner::apply_batch;
use super::shared_log::Batch;
use crate::error::ProjectionError;

/// Events per batch while rebuilding.
const BATCH: i64 = 5_000;

/// What a finished rebuild did.
#[derive(Debug, Clone, Copy)]
pub struct RebuildReport {
    /// Events folded.
    pub events: u64,
    /// The checkpoint the new read model took over.
    pub position: LogPosition,
}

/// Rebuilds `projector`'s read model; `progress(applied, total)` is called after each batch.
pub async fn rebuild(
    pool: &PgPool,
    projector: Arc<dyn Projector>,
    progress: impl Fn(u64, u64),
) -> Result<RebuildReport, ProjectionError> {
    let mut conn = session(pool.acquire().await?.detach(), None).await?;
    let shadow = Shadow::create(&mut conn, projector.as_ref()).await?;
    let total = count_aside(pool);
    let total = || total.load(Ordering::Relaxed);
    let mut applied = 0u64;
    progress(0, total());
    if let Some(bulk) = projector.bulk() {
        let progress = |n| progress(n, total().max(n));
        applied =
            fold_in_memory(pool, &mut conn, &shadow, projector.as_ref(), bulk, progress).await?;
    }
    loop {
        let mut tx = conn.begin().await?;
        let batch = next_batch(&mut tx, projector.as_ref()).await?;
        tx.commit().await?;
        match batch {
            Some(n) => {
                applied += n as u64;
                progress(applied, total().max(applied));
            }
            None => break,
        }
    }
    shadow.analyze(&mut conn, projector.as_ref()).await?;
    let (position, last) = shadow.swap(&mut conn, projector.as_ref()).await?;
    applied += last;
    progress(applied, applied);
    conn.close().await?;
    Ok(RebuildReport {
        events: applied,
        position,
    })
}

/// The events a rebuild has to fold (for its progress only), counted on a connection of its
/// own beside the fold: 0 until known. Counting first held the rebuild back by the count's
/// length (0.2 s of a 1.5M-event log, one core idle); a count that fails leaves 0 (the progress
/// then says what was applied).
fn count_aside(pool: &PgPool) -> Arc<AtomicU64> {
    let total = Arc::new(AtomicU64::new(0));
    let (pool, counted) = (pool.clone(), Arc::clone(&total));
    tokio::spawn(async move {
        let mut conn = session(pool.acquire().await?.detach(), None).await?;
        let n = log::count_after(&mut conn, LogPosition::START).await?;
        counted.store(n as u64, Ordering::Relaxed);
        conn.close().await?;
        Ok::<_, ProjectionError>(())
    });
    total
}

/// A rebuild's connection, `conn`, on the shadows' search_path if `shadow` is given. The
/// service's sessions refuse a statement over 30 s and a transaction idle for 10 s
/// (`relations_store::db::connect`). A rebuild's connections are an operator's bulk job: at 1M
/// users its index builds take minutes, and a transaction may idle while the process lays out
/// millions of rows between statements (the first 1M-user rebuild died of the idle timeout).
/// Their sessions only: they are closed at the end.
async fn session(
    mut conn: PgConnection,
    shadow: Option<&Shadow>,
) -> Result<PgConnection, ProjectionError> {
    sqlx::query("SET statement_timeout = 0")
        .execute(&mut conn)
        .await?;
    sqlx::query("SET idle_in_transaction_session_timeout = '10min'")
        .execute(&mut conn)
        .await?;
    if let Some(shadow) = shadow {
        shadow.enter(&mut conn).await?;
    }
    Ok(conn)
}

/// Events read per round trip by the in-memory fold.
const BULK_BATCH: i64 = 50_000;

/// Folds the whole log below the horizon in memory, writes the result into the shadow tables,
/// and moves the shadow checkpoint to the last event folded; how many events that was.
async fn fold_in_memory(
    pool: &PgPool,
    conn: &mut PgConnection,
    shadow: &Shadow,
    projector: &dyn Projector,
    mut bulk: Box<dyn BulkFold>,
    progress: impl Fn(u64),
) -> Result<u64, ProjectionError> {
    let mut after = LogPosition::START;
    let mut folded = 0u64;
    // Where the fold's time went: waiting for the log, or folding it.
    let (mut waited, mut folding) = (std::time::Duration::ZERO, std::time::Duration::ZERO);
    let (mut batches, reading) = read_ahead(pool.acquire().await?.detach());
    loop {
        let asked = std::time::Instant::now();
        let next = batches.recv().await;
        waited += asked.elapsed();
        let Some(batch) = next else {
            // The reader stops early only by panicking: its panic, not a short log.
            let stopped = reading.await;
            return Err(ProjectionError::Stopped(match stopped {
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                _ => "the log's reader stopped before the end of the log".to_owned(),
            }));
        };
        let batch = batch?;
        let Some(last) = batch.last() else {
            break;
        };
        after = last.position;
        folded += batch.len() as u64;
        let started = std::time::Instant::now();
        bulk.fold_batch(batch).await?;
        folding += started.elapsed();
        progress(folded);
    }
    tracing::info!(
        projector = projector.name(),
        events = folded,
        waited_for_log_secs = waited.as_secs_f64(),
        folding_secs = folding.as_secs_f64(),
        "log folded in memory"
    );
    // The rows go out over this connection and as many more as the machine has cores (two
    // at most beside it), each on the shadows' search_path.
    let writers = std::thread::available_parallelism().map_or(1, |n| n.get().min(3)) - 1;
    let mut more = Vec::with_capacity(writers);
    for _ in 0..writers {
        more.push(session(pool.acquire().await?.detach(), Some(shadow)).await?);
    }
    for sql in bulk.shadow_statements() {
        sqlx::query(&sql).execute(&mut *conn).await?;
    }
    let mut conns: Vec<&mut PgConnection> = vec![&mut *conn];
    conns.extend(more.iter_mut());
    copy_out::write(conns, projector.tables(), move |out| bulk.write(out)).await?;
    for extra in more {
        extra.close().await?;
    }
    checkpoint::advance(&mut *conn, projector.name(), after, folded as usize).await?;
    tracing::info!(projector = projector.name(), "read model written");
    Ok(folded)
}

/// Batches of the log read ahead, or the error that ended the reading.
type Batches = mpsc::Receiver<Result<Vec<RecordedEvent>, sqlx::Error>>;

/// Reads the log below the horizon from its start, `BULK_BATCH` events at a time, on `conn`
/// and a task of its own, at most two batches ahead of the fold: PostgreSQL sends and sqlx
/// decodes the next batches on the other core while the fold works on this one. (Asked for
/// with `tokio::join!` beside the fold, on one task, a batch was only driven while the fold
/// yielded, which it does not: PostgreSQL filled the socket's buffer and waited.) The last
/// batch sent is empty (the end of the log) or an error.
fn read_ahead(mut conn: PgConnection) -> (Batches, tokio::task::JoinHandle<()>) {
    let (sender, batches) = mpsc::channel(2);
    let reading = tokio::spawn(async move {
        let mut after = LogPosition::START;
        loop {
            let batch = log::read_after(&mut conn, after, BULK_BATCH).await;
            let next = batch
                .as_ref()
                .ok()
                .and_then(|b| b.last())
                .map(|e| e.position);
            if sender.send(batch).await.is_err() {
                break;
            }
            let Some(next) = next else {
                break;
            };
            after = next;
        }
        // Closing politely; a failure leaves the server to notice the closed socket.
        let _ = conn.close().await;
    });
    (batches, reading)
}

/// Applies the next batch after the (shadow) checkpoint; `None` when caught up.
async fn next_batch(
    conn: &mut PgConnection,
    projector: &dyn Projector,
) -> Result<Option<usize>, ProjectionError> {
    let after = checkpoint::read(&mut *conn, projector.name()).await?;
    let events = log::read_after(&mut *conn, after, BATCH).await?;
    apply_batch(conn, projector, Batch::Own(events)).await
}

/// The shadow schema a rebuild writes, beside the live one.
struct Shadow {
    /// The live read model's schema: the first on the service's search_path (`public` unless
    /// a deployment chose another).
    live: String,
    /// `rebuild_<name>_<live>`.
    schema: String,
}

impl Shadow {
    /// Creates the shadow tables (`LIKE` the live ones, every index included) and a shadow
    /// checkpoint, and points `conn`'s search_path at them.
    async fn create(
        conn: &mut PgConnection,
        projector: &dyn Projector,
    ) -> Result<Self, ProjectionError> {
        let name = projector.name();
        let live: String = sqlx::query_scalar("SELECT current_schema()")
            .fetch_one(&mut *conn)
            .await?;
        let schema = format!("rebuild_{name}_{live}");
        sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
            .execute(&mut *conn)
            .await?;
        sqlx::query(&format!("CREATE SCHEMA {schema}"))
            .execute(&mut *conn)
            .await?;
        for table in projector.tables().iter().chain(&["projector_checkpoints"]) {
            let partitioned: Option<String> = sqlx::query_scalar(
                "SELECT pg_get_partkeydef(format('%I.%I', $1::text, $2::text)::regclass)",
            )
            .bind(&live)
            .bind(table)
            .fetch_one(&mut *conn)
            .await?;
            let by = partitioned.map_or_else(String::new, |key| format!(" PARTITION BY {key}"));
            sqlx::query(&format!(
                "CREATE TABLE {schema}.{table} (LIKE {live}.{table} INCLUDING ALL){by}"
            ))
            .execute(&mut *conn)
            .await?;
            // A partitioned table's partitions (one level), as the live ones are.
            for (partition, bound) in partitions(&mut *conn, &live, table).await? {
                sqlx::query(&format!(
                    "CREATE TABLE {schema}.{partition} PARTITION OF {schema}.{table} {bound}"
                ))
                .execute(&mut *conn)
                .await?;
            }
        }
        let shadow = Self { live, schema };
        shadow.enter(&mut *conn).await?;
        checkpoint::register(&mut *conn, name).await?;
        Ok(shadow)
    }

    /// Points `conn`'s search_path at the shadows, then the live schema.
    async fn enter(&self, conn: &mut PgConnection) -> Result<(), ProjectionError> {
        let (schema, live) = (&self.schema, &self.live);
        sqlx::query(&format!("SET search_path = {schema}, {live}"))
            .execute(&mut *conn)
            .await?;
        Ok(())
    }

    /// Gathers the planner's statistics of the shadow tables, which they keep when they are
    /// swapped in. Tables filled by `COPY` have none until autovacuum comes by, and at 1M users
    /// the first feed pages after a rebuild planned blind took 1.5 s instead of milliseconds.
    async fn analyze(
        &self,
        conn: &mut PgConnection,
        projector: &dyn Projector,
    ) -> Result<(), ProjectionError> {
        for table in projector.tables() {
            sqlx::query(&format!("ANALYZE {}.{table}", self.schema))
                .execute(&mut *conn)
                .await?;
        }
        Ok(())
    }

    /// The swap, in one transaction: hold the live checkpoint so the live runner waits, apply
    /// the last events, move the shadows in, take over the checkpoint. Returns the checkpoint
    /// and how many events the last catch-up applied.
    async fn swap(
        self,
        conn: &mut PgConnection,
        projector: &dyn Projector,
    ) -> Result<(LogPosition, u64), ProjectionError> {
        let (name, live, schema) = (projector.name(), &self.live, &self.schema);
        let mut tx = conn.begin().await?;
        sqlx::query(&format!(
            "INSERT INTO {live}.projector_checkpoints (name) VALUES ($1) ON CONFLICT DO NOTHING"
        ))
        .bind(name)
        .execute(&mut *tx)
        .await?;
        sqlx::query(&format!(
            "SELECT 1 FROM {live}.projector_checkpoints WHERE name = $1 FOR UPDATE"
        ))
        .bind(name)
        .execute(&mut *tx)
        .await?;
        let mut applied = 0;
        while let Some(n) = next_batch(&mut tx, projector).await? {
            applied += n as u64;
        }
        let position = checkpoint::read(&mut *tx, name).await?;
        for table in projector.tables() {
            sqlx::query(&format!("DROP TABLE {live}.{table}"))
                .execute(&mut *tx)
                .await?;
            sqlx::query(&format!("ALTER TABLE {schema}.{table} SET SCHEMA {live}"))
                .execute(&mut *tx)
                .await?;
            // Its partitions are tables of their own, which the schema's drop would take.
            for (partition, _) in partitions(&mut tx, live, table).await? {
                sqlx::query(&format!(
                    "ALTER TABLE {schema}.{partition} SET SCHEMA {live}"
                ))
                .execute(&mut *tx)
                .await?;
            }
        }
        sqlx::query(&format!(
            "UPDATE {live}.projector_checkpoints AS live
                SET transaction_id = s.transaction_id, global_position = s.global_position,
                    events_applied = s.events_applied, updated_at = now()
               FROM {schema}.projector_checkpoints AS s
              WHERE live.name = $1 AND s.name = $1"
        ))
        .bind(name)
        .execute(&mut *tx)
        .await?;
        sqlx::query(&format!("DROP SCHEMA {schema} CASCADE"))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok((position, applied))
    }
}

/// The partitions of `schema.table` (none unless it is partitioned), each with its bound
/// (`FOR VALUES ...`).
async fn partitions(
    conn: &mut PgConnection,
    schema: &str,
    table: &str,
) -> Result<Vec<(String, String)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT c.relname::text, pg_get_expr(c.relpartbound, c.oid)
           FROM pg_inherits h JOIN pg_class c ON c.oid = h.inhrelid
          WHERE h.inhparent = format('%I.%I', $1::text, $2::text)::regclass
          ORDER BY c.relname",
    )
    .bind(schema)
    .bind(table)
    .fetch_all(conn)
    .await
}

/// A rebuild's progress, published to `rebuild_progress` every half second while it runs (the
/// admin endpoint and the operator page show it), and removed when it ends.
pub struct PublishedProgress {
    counts: std::sync::Arc<(std::sync::atomic::AtomicU64, std::sync::atomic::AtomicU64)>,
    stop: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<()>,
    pool: PgPool,
    name: String,
}

impl PublishedProgress {
    /// Starts publishing the progress of rebuild `name`.
    pub fn start(pool: &PgPool, name: &str) -> Self {
        use std::sync::atomic::{AtomicU64, Ordering};
        let counts = std::sync::Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
        let stop = tokio_util::sync::CancellationToken::new();
        let task = {
            let (pool, name, counts, stop) =
                (pool.clone(), name.to_owned(), counts.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.is_cancelled() {
                    let written = sqlx::query(
                        "INSERT INTO rebuild_progress (name, applied, total) VALUES ($1, $2, $3)
                         ON CONFLICT (name) DO UPDATE
                            SET applied = excluded.applied, total = excluded.total, updated_at = now()",
                    )
                    .bind(&name)
                    .bind(counts.0.load(Ordering::Relaxed) as i64)
                    .bind(counts.1.load(Ordering::Relaxed) as i64)
                    .execute(&pool)
                    .await;
                    if let Err(error) = written {
                        tracing::debug!(%error, "rebuild progress not published");
                    }
                    tokio::select! {
                        _ = stop.cancelled() => {}
                        _ = tokio::time::sleep(std::time::Duration::from_millis(500)) => {}
                    }
                }
            })
        };
        Self {
            counts,
            stop,
            task,
            pool: pool.clone(),
            name: name.to_owned(),
        }
    }

    /// Records `applied` of `total` events (a rebuild's progress callback).
    pub fn update(&self, applied: u64, total: u64) {
        use std::sync::atomic::Ordering;
        self.counts.0.store(applied, Ordering::Relaxed);
        self.counts.1.store(total, Ordering::Relaxed);
    }

    /// Stops publishing and removes the row.
    pub async fn finish(self) {
        self.stop.cancel();
        let _ = self.task.await;
        let _ = sqlx::query("DELETE FROM rebuild_progress WHERE name = $1")
            .bind(&self.name)
            .execute(&self.pool)
            .await;
    }
}

/// A rebuild running now, as `rebuild_progress` shows it.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RunningRebuild {
    /// The projector being rebuilt.
    pub name: String,
    /// Events folded so far.
    pub applied: i64,
    /// Events to fold (the log's length when it started, growing as it catches up).
    pub total: i64,
    /// When it started.
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// When it last reported; a rebuild that stopped reporting died.
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

/// The rebuilds running now.
pub async fn running(pool: &PgPool) -> Result<Vec<RunningRebuild>, sqlx::Error> {
    sqlx::query_as(
        "SELECT name, applied, total, started_at, updated_at FROM rebuild_progress ORDER BY name",
    )
    .fetch_all(pool)
    .await
}
