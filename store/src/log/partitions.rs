//! The log's partitions (issue 48, item 4): `events` is partitioned by range of
//! `transaction_id`, the first key of the log's order, so each partition holds a whole range of
//! transactions and the partitions in order are the log in order. They are made ahead of the
//! transactions that fall in them (SQL `log_partitions_keep`, migration
//! `20261130000041_log_partitions.sql`); a writer keeps them made while it serves.

use std::time::Duration;

use serde::Serialize;
use sqlx::{FromRow, PgExecutor, PgPool};
use tokio_util::sync::CancellationToken;

/// How often a serving instance makes the partitions the next transactions need. A partition
/// spans 2^26 transaction ids by default and one more is kept made beyond the current one, so a
/// minute is many orders of magnitude inside what a primary can use up.
pub const KEEP_EVERY: Duration = Duration::from_secs(60);

/// One partition of the log: its table, the transaction ids it holds `[low, high)`, and its
/// size on disk with its indexes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, FromRow)]
pub struct Partition {
    /// The partition's table: `events_0`, then `events_<low>`.
    pub name: String,
    /// The first transaction id it holds (0 for the first partition: every one before its high).
    pub low: i64,
    /// The first transaction id it does not hold.
    pub high: i64,
    /// Its bytes on disk, indexes and TOAST included.
    pub bytes: i64,
    /// Whether every transaction it may hold has ended, it is being written, or it waits.
    #[sqlx(try_from = "String")]
    pub state: State,
}

/// Where a partition stands against the transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Every transaction it may hold has ended (its end is below the horizon): it will never
    /// change again.
    Closed,
    /// Transactions in its range may still be running or begin.
    Open,
    /// Made ahead: no transaction in its range has begun.
    Ahead,
}

impl State {
    /// The state's name, as `relations partitions` prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Closed => "closed",
            State::Open => "open",
            State::Ahead => "ahead",
        }
    }
}

impl TryFrom<String> for State {
    type Error = String;

    fn try_from(name: String) -> Result<Self, String> {
        match name.as_str() {
            "closed" => Ok(State::Closed),
            "open" => Ok(State::Open),
            "ahead" => Ok(State::Ahead),
            other => Err(format!("no partition state {other}")),
        }
    }
}

/// Makes the partitions the next transactions fall in, and `ahead` more (`log_partitioning`);
/// answers how many it made. Safe to call from every instance at once.
pub async fn keep<'e>(executor: impl PgExecutor<'e>) -> Result<i32, sqlx::Error> {
    sqlx::query_scalar("SELECT log_partitions_keep()")
        .fetch_one(executor)
        .await
}

/// Every partition of the log, oldest first.
pub async fn list<'e>(executor: impl PgExecutor<'e>) -> Result<Vec<Partition>, sqlx::Error> {
    sqlx::query_as(
        "SELECT name, low, high, pg_total_relation_size(name::regclass) AS bytes,
                CASE WHEN high::text::xid8 <= pg_snapshot_xmin(pg_current_snapshot()) THEN 'closed'
                     WHEN low::text::xid8 >= pg_snapshot_xmax(pg_current_snapshot()) THEN 'ahead'
                     ELSE 'open' END AS state
           FROM log_partitions ORDER BY low",
    )
    .fetch_all(executor)
    .await
}

/// Keeps the partitions made, at once and every [`KEEP_EVERY`], until `shutdown`. A failure is
/// logged and tried again at the next turn.
pub async fn keep_ahead(pool: PgPool, shutdown: CancellationToken) {
    let mut ticks = tokio::time::interval(KEEP_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = ticks.tick() => {}
        }
        match keep(&pool).await {
            Ok(0) => {}
            Ok(made) => tracing::info!(made, "log partitions made ahead"),
            Err(error) => tracing::warn!(%error, "making the log's next partitions failed"),
        }
    }
}

/// The stream versions the log holds twice, in different partitions (at most 10): what no index
/// can refuse, since none spans the partitions, and what the streams' locks keep from
/// happening. Each event past the first partition is looked up in the others.
pub async fn versions_repeated<'e>(
    executor: impl PgExecutor<'e>,
) -> Result<Vec<(String, String, i64)>, sqlx::Error> {
    sqlx::query_as(
        "SELECT p.aggregate_type, p.aggregate_id, p.sequence FROM events p
          WHERE p.transaction_id >= (SELECT min(high) FROM log_partitions)::text::xid8
            AND EXISTS (SELECT 1 FROM events q
                         WHERE q.aggregate_type = p.aggregate_type
                           AND q.aggregate_id = p.aggregate_id
                           AND q.sequence = p.sequence AND q.tableoid <> p.tableoid)
          ORDER BY 1, 2, 3 LIMIT 10",
    )
    .fetch_all(executor)
    .await
}
