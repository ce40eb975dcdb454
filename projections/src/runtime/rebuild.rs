//! `relations rebuild NAME`: fold the whole log into shadow tables while the live read model
//! keeps serving, then swap them in atomically.
//!
//! The shadow tables live in a schema of their own (`rebuild_<name>_<live schema>`), created `LIKE` the live
//! ones with every index, beside a shadow checkpoint. The rebuild connection puts that schema
//! first on its `search_path`, so the projector's own code, with unqualified table names, writes
//! the shadows. Once caught up, one transaction locks the live checkpoint (the live runner waits),
//! applies the last events, drops the live tables, moves the shadows in, and takes over the
//! checkpoint. Readers see the old model or the new one, never a mix.

use std::sync::Arc;

use relations_store::db::end_transaction;
use relations_store::{log, LogPosition};
use sqlx::{Connection, PgConnection, PgPool};

use super::checkpoint;
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
    let mut conn = pool.acquire().await?.detach();
    // The service's sessions refuse a statement over 30 s and a transaction idle for 10 s
    // (`relations_store::db::connect`). A rebuild's own connection is an operator's bulk job:
    // at 1M users its index builds take minutes, and its write transaction idles while the
    // process lays out millions of rows between statements (the first 1M-user rebuild died of
    // the idle timeout). Its session only: the connection is closed at the end.
    sqlx::query("SET statement_timeout = 0")
        .execute(&mut conn)
        .await?;
    sqlx::query("SET idle_in_transaction_session_timeout = '10min'")
        .execute(&mut conn)
        .await?;
    let shadow = Shadow::create(&mut conn, projector.as_ref()).await?;
    let total = log::count_after(&mut conn, LogPosition::START).await? as u64;
    let mut applied = 0u64;
    progress(0, total);
    if let Some(bulk) = projector.bulk() {
        applied = fold_in_memory(&mut conn, projector.as_ref(), bulk, |n| {
            progress(n, total.max(n))
        })
        .await?;
    }
    loop {
        let mut tx = conn.begin().await?;
        let batch = next_batch(&mut tx, projector.as_ref()).await?;
        tx.commit().await?;
        match batch {
            Some(n) => {
                applied += n as u64;
                progress(applied, total.max(applied));
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

/// Events read per round trip by the in-memory fold.
const BULK_BATCH: i64 = 50_000;

/// Folds the whole log below the horizon in memory, writes the result into the shadow tables,
/// and moves the shadow checkpoint to the last event folded; how many events that was.
async fn fold_in_memory(
    conn: &mut PgConnection,
    projector: &dyn Projector,
    mut bulk: Box<dyn BulkFold>,
    progress: impl Fn(u64),
) -> Result<u64, ProjectionError> {
    let mut after = LogPosition::START;
    let mut folded = 0u64;
    let mut batch = log::read_after(conn, after, BULK_BATCH).await?;
    while let Some(last) = batch.last() {
        after = last.position;
        folded += batch.len() as u64;
        // The next batch is asked for before this one is folded: PostgreSQL reads and sends
        // it on the other core meanwhile.
        let (next, done) = tokio::join!(
            log::read_after(conn, after, BULK_BATCH),
            bulk.fold_batch(batch)
        );
        done?;
        batch = next?;
        progress(folded);
    }
    tracing::info!(
        projector = projector.name(),
        events = folded,
        "log folded in memory"
    );
    let mut tx = conn.begin().await?;
    let written = async {
        // Secondary indexes are built once over the loaded rows, not row by row.
        let deferred = drop_secondary_indexes(&mut tx, projector).await?;
        bulk.write(&mut tx).await?;
        for index in &deferred {
            sqlx::query(index).execute(&mut *tx).await?;
        }
        checkpoint::advance(&mut tx, projector.name(), after, folded as usize).await?;
        Ok::<_, ProjectionError>(())
    }
    .await;
    end_transaction(tx, written, |_| true).await?;
    tracing::info!(projector = projector.name(), "read model written");
    Ok(folded)
}

/// COPYs tab-separated `rows` (COPY's text format: [`copy_text`], [`copy_timestamp`], `\N`
/// for NULL) into `target` (`table (columns)`): how every [`BulkFold`] writes.
pub(crate) async fn copy_in(
    conn: &mut PgConnection,
    target: &str,
    rows: String,
) -> Result<(), ProjectionError> {
    let mut copy = conn
        .copy_in_raw(&format!("COPY {target} FROM STDIN"))
        .await?;
    copy.send(rows.into_bytes()).await?;
    copy.finish().await?;
    Ok(())
}

/// `text` as a field of COPY's text format (its backslashes, tabs and line ends escaped).
pub(crate) fn copy_text(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\\', '\t', '\n', '\r']) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\\' => escaped.push_str("\\\\"),
            '\t' => escaped.push_str("\\t"),
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            c => escaped.push(c),
        }
    }
    std::borrow::Cow::Owned(escaped)
}

/// `at` as a field of COPY's text format, cut to PostgreSQL's microseconds as sqlx cuts a
/// bound value (PostgreSQL would round a longer fraction, and a rebuild would then differ from
/// the runner by a microsecond).
pub(crate) fn copy_timestamp(at: chrono::DateTime<chrono::Utc>) -> String {
    use chrono::{Datelike as _, Timelike as _};
    // Written field by field: chrono's `format` parses its pattern on every call, which was
    // 6% of a notifications rebuild.
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:06}+00",
        at.year(),
        at.month(),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.timestamp_subsec_micros().min(999_999),
    )
}

/// [`copy_timestamp`], or COPY's NULL (`\N`) for `None`.
pub(crate) fn copy_nullable_timestamp(at: Option<chrono::DateTime<chrono::Utc>>) -> String {
    at.map_or_else(|| "\\N".to_owned(), copy_timestamp)
}

/// Drops the indexes of the projector's tables on `conn`'s search_path (the shadows) that back
/// no constraint, and returns the statements that make them again.
async fn drop_secondary_indexes(
    conn: &mut PgConnection,
    projector: &dyn Projector,
) -> Result<Vec<String>, ProjectionError> {
    let tables: Vec<&str> = projector.tables().to_vec();
    let indexes: Vec<(String, String, String)> = sqlx::query_as(
        "SELECT n.nspname::text, i.relname::text, pg_get_indexdef(x.indexrelid)
           FROM pg_index x
           JOIN pg_class i ON i.oid = x.indexrelid
           JOIN pg_class t ON t.oid = x.indrelid
           JOIN pg_namespace n ON n.oid = t.relnamespace
          WHERE n.nspname = current_schema() AND t.relname = ANY($1)
            AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid)",
    )
    .bind(&tables)
    .fetch_all(&mut *conn)
    .await?;
    let mut recreate = Vec::with_capacity(indexes.len());
    for (schema, name, definition) in indexes {
        sqlx::query(&format!("DROP INDEX {schema}.{name}"))
            .execute(&mut *conn)
            .await?;
        recreate.push(definition);
    }
    Ok(recreate)
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
            sqlx::query(&format!(
                "CREATE TABLE {schema}.{table} (LIKE {live}.{table} INCLUDING ALL)"
            ))
            .execute(&mut *conn)
            .await?;
        }
        sqlx::query(&format!("SET search_path = {schema}, {live}"))
            .execute(&mut *conn)
            .await?;
        checkpoint::register(&mut *conn, name).await?;
        Ok(Self { live, schema })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timestamp_for_copy_is_what_chronos_pattern_writes() {
        for micros in [
            0,
            1,
            1_700_000_000_123_456,
            1_764_201_600_999_999,
            -1_000_001,
        ] {
            let at = chrono::DateTime::from_timestamp_micros(micros).unwrap();
            let at = at + chrono::Duration::nanoseconds(789);
            let pattern = at.format("%Y-%m-%d %H:%M:%S%.6f+00").to_string();
            assert_eq!(copy_timestamp(at), pattern);
        }
        assert_eq!(copy_nullable_timestamp(None), "\\N");
    }
}
