//! Read marks written off the request path: a first feed page records its mark in memory and
//! answers at once; a flusher writes every pending mark in one statement a few milliseconds
//! later (seed 003's `time_mark`, batched). This instance's `new_count` sees its own pending
//! marks at once; other instances see them once flushed (within [`FLUSH_EVERY`] plus a write).
//! Marks only move forward, so a late or repeated flush never moves one back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use relations_domain::UserId;
use sqlx::PgPool;
use tokio_util::sync::CancellationToken;

/// How often pending marks are written.
pub const FLUSH_EVERY: Duration = Duration::from_millis(20);

/// Pending read marks. Cheap to clone.
#[derive(Clone, Default)]
pub struct ReadMarks {
    pending: Arc<Mutex<HashMap<i64, i64>>>,
}

impl ReadMarks {
    /// No pending marks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves `reader`'s mark forward to `seq` (written by the next flush).
    pub fn mark(&self, reader: UserId, seq: i64) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let mark = pending.entry(reader.get()).or_insert(seq);
        *mark = (*mark).max(seq);
    }

    /// `reader`'s mark not yet written, if any.
    pub fn pending(&self, reader: UserId) -> Option<i64> {
        let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        pending.get(&reader.get()).copied()
    }

    /// Writes the pending marks every [`FLUSH_EVERY`] until `shutdown`, then once more.
    pub async fn run(self, pool: PgPool, shutdown: CancellationToken) {
        let mut backoff = FLUSH_EVERY;
        loop {
            let stop = tokio::select! {
                _ = shutdown.cancelled() => true,
                _ = tokio::time::sleep(backoff) => false,
            };
            backoff = match self.flush(&pool).await {
                Ok(()) => FLUSH_EVERY,
                Err(error) => {
                    tracing::warn!(%error, "writing read marks failed; retrying");
                    (backoff * 2).min(Duration::from_secs(5))
                }
            };
            if stop {
                return;
            }
        }
    }

    /// Writes every pending mark in one statement. A mark stays pending (and seen by
    /// [`ReadMarks::pending`]) until it is written; on failure, all stay.
    pub async fn flush(&self, pool: &PgPool) -> Result<(), sqlx::Error> {
        let mut marks: Vec<(i64, i64)> = {
            let pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
            pending.iter().map(|(&r, &s)| (r, s)).collect()
        };
        if marks.is_empty() {
            return Ok(());
        }
        // In reader order, like every writer of these rows: concurrent flushes of several
        // instances never deadlock.
        marks.sort_unstable();
        let (readers, seqs): (Vec<i64>, Vec<i64>) = marks.iter().copied().unzip();
        sqlx::query(
            "INSERT INTO feed_read_marks AS m (reader, seq)
             SELECT * FROM unnest($1::bigint[], $2::bigint[])
             ON CONFLICT (reader) DO UPDATE SET seq = greatest(m.seq, excluded.seq), updated_at = now()",
        )
        .bind(&readers)
        .bind(&seqs)
        .execute(pool)
        .await?;
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        for (reader, written) in marks {
            if pending.get(&reader).is_some_and(|&seq| seq <= written) {
                pending.remove(&reader);
            }
        }
        metrics::counter!("relations_feed_read_marks_written_total")
            .increment(readers.len() as u64);
        Ok(())
    }
}
