//! How a rebuild's in-memory result reaches PostgreSQL (issue 43: the rebuilds' targets): a
//! [`BulkFold`](super::projector::BulkFold) lays out each table's rows in `COPY`'s text format
//! on a thread of its own, in chunks of about [`CHUNK`] bytes, while [`write`] hands each chunk
//! to the first of a few connections that is free. PostgreSQL parses one chunk while the next
//! is laid out, and two chunks (of one table or of two) are written at once.
//!
//! The tables are written without any index: [`write`] drops them all (the primary keys and
//! unique constraints too) before the first row and builds them again after the last, as many
//! at once as there are connections, then attaches the constraints to their indexes. A sorted
//! build of a finished table is cheaper than millions of inserts into its B-trees, and the
//! builds run side by side.
//!
//! Each connection writes in transactions of its own: the shadow tables are no one's but the
//! rebuild's until the swap, and a rebuild that stops half way is started again from empty
//! shadows ([`super::rebuild`]).

use std::fmt;
use std::sync::Arc;

use futures::stream::{FuturesUnordered, StreamExt as _};
use sqlx::PgConnection;
use tokio::sync::mpsc;

use crate::error::ProjectionError;

/// About how many bytes of rows go to PostgreSQL in one `COPY`.
const CHUNK: usize = 8 << 20;

/// One `COPY`: its target (`table (columns)`) and its rows.
struct Chunk {
    target: Arc<str>,
    rows: String,
}

/// Where a bulk fold writes its tables' rows ([`CopyOut::table`]); chunks go to PostgreSQL
/// while the next are laid out.
pub struct CopyOut {
    chunks: mpsc::Sender<Chunk>,
    /// About how many bytes leave at once ([`CHUNK`]).
    chunk: usize,
}

impl CopyOut {
    /// The rows of `target` (`table (columns)`), written with `writeln!` a row at a time in
    /// `COPY`'s text format ([`copy_text`], [`copy_timestamp`], `\N` for NULL). They leave in
    /// chunks, the last when the returned writer is dropped.
    pub fn table(&self, target: &str) -> TableRows<'_> {
        TableRows {
            out: self,
            target: Arc::from(target),
            rows: String::new(),
        }
    }

    /// Hands `rows` over (the blocking send of a thread of its own: [`write`] runs the layout
    /// on the blocking pool). A closed channel means the writing side stopped on an error,
    /// which [`write`] reports: the rows are dropped.
    fn send(&self, target: &Arc<str>, rows: String) {
        if !rows.is_empty() {
            let target = Arc::clone(target);
            let _ = self.chunks.blocking_send(Chunk { target, rows });
        }
    }
}

/// One table's rows on their way ([`CopyOut::table`]).
pub struct TableRows<'a> {
    out: &'a CopyOut,
    target: Arc<str>,
    rows: String,
}

impl fmt::Write for TableRows<'_> {
    /// A chunk is cut only at a row's end. In `COPY`'s text format a raw line end ends a row
    /// and nothing else ([`copy_text`] escapes them inside a field), and `writeln!` writes it
    /// as the end of its last piece.
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let chunk = self.out.chunk;
        if self.rows.capacity() == 0 {
            self.rows.reserve(chunk + chunk / 16);
        }
        self.rows.push_str(s);
        if self.rows.len() >= chunk && s.ends_with('\n') {
            if self.out.chunks.is_closed() {
                // The writing side stopped on an error, which it reports: the rest is dropped
                // a chunk at a time instead of being sent.
                self.rows.clear();
            } else {
                let rows = std::mem::take(&mut self.rows);
                self.out.send(&self.target, rows);
            }
        }
        Ok(())
    }
}

impl Drop for TableRows<'_> {
    /// The table's last chunk leaves.
    fn drop(&mut self) {
        self.out.send(&self.target, std::mem::take(&mut self.rows));
    }
}

/// Writes what `lay_out` lays out into `tables` over `conns` (every one on the shadow
/// schema's search_path): every index of the tables dropped first, the rows copied a chunk per
/// free connection, the indexes built again a table per free connection.
pub(crate) async fn write(
    mut conns: Vec<&mut PgConnection>,
    tables: &[&str],
    lay_out: impl FnOnce(&CopyOut) -> Result<(), ProjectionError> + Send + 'static,
) -> Result<(), ProjectionError> {
    let (started, connections) = (std::time::Instant::now(), conns.len());
    let deferred = drop_indexes(conns[0], tables).await?;
    // Two chunks wait at most: the layout runs ahead of PostgreSQL by that much memory.
    let (chunks, mut pending) = mpsc::channel::<Chunk>(2);
    let layout = tokio::task::spawn_blocking(move || {
        lay_out(&CopyOut {
            chunks,
            chunk: CHUNK,
        })
    });
    let copied = async {
        let mut running = FuturesUnordered::new();
        loop {
            tokio::select! {
                chunk = pending.recv(), if !conns.is_empty() => {
                    let Some(chunk) = chunk else { break };
                    let conn = conns.pop().expect("a free connection");
                    running.push(async move {
                        copy_in(conn, &chunk.target, chunk.rows).await.map(|()| conn)
                    });
                }
                Some(done) = running.next() => conns.push(done?),
            }
        }
        while let Some(done) = running.next().await {
            conns.push(done?);
        }
        Ok::<_, ProjectionError>(())
    }
    .await;
    // A COPY that failed closes the channel under the layout, which then stops: the COPY's
    // error is the one to report.
    drop(pending);
    let laid_out = layout.await.expect("the layout does not panic");
    copied?;
    laid_out?;
    let copied_after = started.elapsed();
    build_indexes(conns, deferred).await?;
    tracing::info!(
        connections,
        rows_secs = copied_after.as_secs_f64(),
        indexes_secs = (started.elapsed() - copied_after).as_secs_f64(),
        "tables written"
    );
    Ok(())
}

/// COPYs tab-separated `rows` into `target` (`table (columns)`).
async fn copy_in(
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

/// What [`drop_indexes`] took away: the statements that make each index again, and those that
/// then make a primary key or unique constraint of its index, each in its phase.
struct Dropped {
    /// Each index's table and the statement that makes it.
    indexes: [Vec<(String, String)>; 2],
    constraints: [Vec<String>; 2],
}

/// The phases of [`Dropped`]: a partitioned table's index is made after its partitions' (and
/// then only attaches them).
const PARTITIONS: usize = 0;
const TABLES: usize = 1;

/// An index as [`drop_indexes`] finds it: its table, whether that is a partition, the statement
/// that drops it (none for a partition's index, which goes with its table's), the one that
/// makes it (none for a partitioned table's constraint, whose statement makes its index) and
/// the one that makes its constraint.
type IndexRow = (String, bool, Option<String>, Option<String>, Option<String>);

/// Drops every index of `tables` on `conn`'s search_path (the shadows), those of their
/// primary keys and unique constraints too, and remembers their partitions' (one level) to
/// build them one by one. Indexes behind other constraints (an exclusion) are kept.
async fn drop_indexes(
    conn: &mut PgConnection,
    tables: &[&str],
) -> Result<Dropped, ProjectionError> {
    let tables: Vec<String> = tables.iter().map(|t| (*t).to_owned()).collect();
    let indexes: Vec<IndexRow> = sqlx::query_as(
        "WITH top AS (
             SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = current_schema() AND c.relname = ANY($1)),
         rels AS (
             SELECT oid, false AS part FROM top
             UNION ALL
             SELECT h.inhrelid, true FROM pg_inherits h JOIN top ON h.inhparent = top.oid)
         SELECT t.relname::text, rels.part,
                CASE WHEN EXISTS (SELECT 1 FROM pg_inherits h WHERE h.inhrelid = x.indexrelid)
                          THEN NULL
                     WHEN c.oid IS NULL THEN format('DROP INDEX %I.%I', n.nspname, i.relname)
                     ELSE format('ALTER TABLE %I.%I DROP CONSTRAINT %I',
                                 n.nspname, t.relname, c.conname) END,
                CASE WHEN t.relkind <> 'p' THEN pg_get_indexdef(x.indexrelid)
                     WHEN c.oid IS NULL
                          -- A partitioned table's index is shown `ON ONLY` it, which would
                          -- attach no partition's and stay invalid.
                          THEN regexp_replace(pg_get_indexdef(x.indexrelid), ' ON ONLY ', ' ON ')
                     END,
                CASE WHEN c.oid IS NOT NULL THEN
                  CASE WHEN t.relkind = 'p' THEN
                    format('ALTER TABLE %I.%I ADD CONSTRAINT %I %s', n.nspname, t.relname,
                           c.conname, pg_get_constraintdef(c.oid))
                  ELSE
                    format('ALTER TABLE %I.%I ADD CONSTRAINT %I %s USING INDEX %I%s',
                           n.nspname, t.relname, c.conname,
                           CASE c.contype WHEN 'p' THEN 'PRIMARY KEY' ELSE 'UNIQUE' END,
                           i.relname,
                           CASE WHEN NOT c.condeferrable THEN ''
                                WHEN c.condeferred THEN ' DEFERRABLE INITIALLY DEFERRED'
                                ELSE ' DEFERRABLE' END) END END
           FROM rels
           JOIN pg_index x ON x.indrelid = rels.oid
           JOIN pg_class i ON i.oid = x.indexrelid
           JOIN pg_class t ON t.oid = x.indrelid
           JOIN pg_namespace n ON n.oid = t.relnamespace
           LEFT JOIN pg_constraint c
             ON c.conindid = x.indexrelid AND c.conrelid = t.oid AND c.contype IN ('p', 'u')
          WHERE NOT EXISTS (SELECT 1 FROM pg_constraint o
                             WHERE o.conindid = x.indexrelid AND o.contype NOT IN ('p', 'u'))
          ORDER BY t.relname, i.relname",
    )
    .bind(&tables)
    .fetch_all(&mut *conn)
    .await?;
    let mut dropped = Dropped {
        indexes: Default::default(),
        constraints: Default::default(),
    };
    // A partitioned table's own index (and constraint: its index comes with it) is made by a
    // statement that would make its partitions' too unless they have theirs: which they will,
    // built first.
    for (table, part, drop, index, constraint) in indexes {
        if let Some(drop) = drop {
            sqlx::query(&drop).execute(&mut *conn).await?;
        }
        let phase = if part { PARTITIONS } else { TABLES };
        dropped.indexes[phase].extend(index.map(|index| (table, index)));
        dropped.constraints[phase].extend(constraint);
    }
    Ok(dropped)
}

/// Builds every index again, partitions' first, as many at once as there are connections
/// (builds of one table's indexes share its lock), the largest tables' first, then makes the
/// constraints of theirs; then the partitioned tables' (which attach what their partitions
/// have) and the other tables'.
async fn build_indexes(
    mut conns: Vec<&mut PgConnection>,
    dropped: Dropped,
) -> Result<(), ProjectionError> {
    for (mut indexes, constraints) in dropped.indexes.into_iter().zip(dropped.constraints) {
        let tables: Vec<String> = indexes.iter().map(|(t, _)| t.clone()).collect();
        let sizes: std::collections::HashMap<String, i64> =
            sqlx::query_as("SELECT t, pg_relation_size(t::regclass) FROM unnest($1::text[]) AS t")
                .bind(&tables)
                .fetch_all(&mut *conns[0])
                .await?
                .into_iter()
                .collect();
        indexes.sort_by_key(|(table, _)| std::cmp::Reverse(sizes.get(table).copied().unwrap_or(0)));
        let mut indexes = indexes.into_iter().map(|(_, index)| index);
        let mut running = FuturesUnordered::new();
        loop {
            while let Some(conn) = conns.pop() {
                let Some(index) = indexes.next() else {
                    conns.push(conn);
                    break;
                };
                running.push(async move {
                    sqlx::query(&index).execute(&mut *conn).await?;
                    Ok::<_, ProjectionError>(conn)
                });
            }
            match running.next().await {
                Some(done) => conns.push(done?),
                None => break,
            }
        }
        for constraint in constraints {
            sqlx::query(&constraint).execute(&mut *conns[0]).await?;
        }
    }
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

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    /// Rows cut into chunks of about `chunk` bytes: what each `COPY` receives.
    fn chunks(chunk: usize, rows: &[&str]) -> Vec<(String, String)> {
        let (chunks, mut pending) = mpsc::channel(rows.len() + 2);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let out = CopyOut { chunks, chunk };
                let mut a = out.table("a (x, y)");
                let mut b = out.table("b (x)");
                for row in rows {
                    writeln!(a, "{row}\t{}", row.len()).unwrap();
                    writeln!(b, "{row}").unwrap();
                }
            });
        });
        let mut sent = Vec::new();
        while let Ok(c) = pending.try_recv() {
            sent.push((c.target.to_string(), c.rows));
        }
        sent
    }

    #[test]
    fn rows_leave_in_chunks_cut_at_row_ends_and_none_is_lost() {
        let rows: Vec<String> = (0..50)
            .map(|i| format!("row {i}").repeat(i % 4 + 1))
            .collect();
        let rows: Vec<&str> = rows.iter().map(String::as_str).collect();
        let sent = chunks(40, &rows);
        let of = |target: &str| -> Vec<&String> {
            sent.iter()
                .filter(|(t, _)| t == target)
                .map(|(_, r)| r)
                .collect()
        };
        let (a, b) = (of("a (x, y)"), of("b (x)"));
        assert!(
            a.len() > 5 && b.len() > 5,
            "cut into chunks: {} and {}",
            a.len(),
            b.len()
        );
        for chunk in a.iter().chain(&b) {
            assert!(
                chunk.ends_with('\n'),
                "a chunk ends at a row's end: {chunk:?}"
            );
            assert!(!chunk.is_empty());
        }
        let whole_a: String = a.iter().map(|c| c.as_str()).collect();
        let whole_b: String = b.iter().map(|c| c.as_str()).collect();
        let want_a: String = rows.iter().map(|r| format!("{r}\t{}\n", r.len())).collect();
        let want_b: String = rows.iter().map(|r| format!("{r}\n")).collect();
        assert_eq!(whole_a, want_a);
        assert_eq!(whole_b, want_b);
    }

    #[test]
    fn a_table_with_no_rows_sends_nothing() {
        assert!(chunks(40, &[]).is_empty());
    }

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
