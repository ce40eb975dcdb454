//! Reading the whole log once, as `relations replay` does: everything committed when the read
//! starts, in log order, even if an open transaction elsewhere holds the horizon back for a
//! while.

use std::time::{Duration, Instant};

use sqlx::PgConnection;

use super::event::RecordedEvent;
use super::read::read_after;
use crate::position::LogPosition;

/// Events per batch.
const BATCH: i64 = 5_000;

/// A reader of everything committed before [`Replay::start`].
#[derive(Debug)]
pub struct Replay {
    after: LogPosition,
    /// The highest `global_position` committed when the replay started.
    committed: i64,
    /// How long to wait, in all, for the horizon to pass what was committed.
    deadline: Instant,
}

impl Replay {
    /// A replay of the events after `after`, waiting at most `patience` for the horizon.
    pub async fn start(
        conn: &mut PgConnection,
        after: LogPosition,
        patience: Duration,
    ) -> Result<Self, sqlx::Error> {
        let committed: Option<i64> = sqlx::query_scalar("SELECT max(global_position) FROM events")
            .fetch_one(conn)
            .await?;
        Ok(Self {
            after,
            committed: committed.unwrap_or(0),
            deadline: Instant::now() + patience,
        })
    }

    /// The next batch in log order; `None` at the end. When the horizon (held back by any open
    /// writer in the cluster) stops short of what was committed at the start, waits for it to
    /// move until the deadline, then ends with a warning.
    pub async fn next_batch(
        &mut self,
        conn: &mut PgConnection,
    ) -> Result<Option<Vec<RecordedEvent>>, sqlx::Error> {
        loop {
            let batch = read_after(conn, self.after, BATCH).await?;
            if let Some(last) = batch.last() {
                self.after = last.position;
                return Ok(Some(batch));
            }
            let behind: bool = sqlx::query_scalar(concat!(
                "SELECT EXISTS (SELECT 1 FROM events WHERE ",
                after_position!(),
                " AND global_position <= $3)"
            ))
            .bind(self.after.transaction_id.to_string())
            .bind(self.after.global_position)
            .bind(self.committed)
            .fetch_one(&mut *conn)
            .await?;
            if !behind {
                return Ok(None);
            }
            if Instant::now() >= self.deadline {
                tracing::warn!("an open transaction held the log back too long; stopping here");
                return Ok(None);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
