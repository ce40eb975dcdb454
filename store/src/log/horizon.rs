//! Where the horizon stands and who holds it: the head, what lies ahead of a reader, lag,
//! events held above the horizon, the session holding it, the log's footprint.

use serde::Serialize;
use sqlx::{FromRow, PgExecutor};

use crate::position::LogPosition;

/// The position of the last event below the horizon: how far a reader could get now.
pub async fn head<'e>(executor: impl PgExecutor<'e>) -> Result<LogPosition, sqlx::Error> {
    let head: Option<LogPosition> = sqlx::query_as(concat!(
        "SELECT transaction_id::text::bigint AS transaction_id, global_position FROM events
          WHERE ",
        below_horizon!(),
        "
          ORDER BY events.transaction_id DESC, events.global_position DESC LIMIT 1"
    ))
    .fetch_optional(executor)
    .await?;
    Ok(head.unwrap_or(LogPosition::START))
}

/// The id of the event at `position`, if the log holds one there: what tells a snapshot taken
/// at `position` of this log from one of another (a restored backup, another database).
pub async fn event_at<'e>(
    executor: impl PgExecutor<'e>,
    position: LogPosition,
) -> Result<Option<uuid::Uuid>, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT event_id FROM events
          WHERE transaction_id = $1::text::xid8 AND global_position = $2",
    )
    .bind(position.transaction_id.to_string())
    .bind(position.global_position)
    .fetch_optional(executor)
    .await
}

/// What lies after a reader's position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromRow)]
pub struct Ahead {
    /// Events below the horizon: readable now.
    pub settled: bool,
    /// Events committed at or above the horizon (an older transaction somewhere in the cluster
    /// is still open): readable once it ends, so a reader should look again shortly. Only
    /// looked for when nothing is `settled` (false otherwise).
    pub unsettled: bool,
}

/// What lies after `after`, in one round trip.
pub async fn ahead<'e>(
    executor: impl PgExecutor<'e>,
    after: LogPosition,
) -> Result<Ahead, sqlx::Error> {
    // Each look is an ordered LIMIT 1, so PostgreSQL walks the log-order index from `after`:
    // an EXISTS was planned as a sequential scan of the whole log (130 ms at 600k events, each
    // idle step). `unsettled` is looked for only when nothing is settled: a reader far behind
    // has millions of settled events after it (CASE evaluates a branch only when reached).
    sqlx::query_as(concat!(
        "SELECT settled, CASE WHEN settled THEN false ELSE (SELECT true FROM events WHERE ",
        after_position!(),
        " AND NOT (",
        below_horizon!(),
        ") ORDER BY events.transaction_id, events.global_position LIMIT 1) IS NOT NULL END
           AS unsettled
           FROM (SELECT (SELECT true FROM events WHERE ",
        after_position!(),
        " AND ",
        below_horizon!(),
        " ORDER BY events.transaction_id, events.global_position LIMIT 1) IS NOT NULL AS settled) AS s"
    ))
    .bind(after.transaction_id.to_string())
    .bind(after.global_position)
    .fetch_one(executor)
    .await
}

/// How far a reader at some position is behind the horizon.
#[derive(Debug, Clone, Copy, Default, PartialEq, FromRow)]
pub struct Lag {
    /// Events between the position and the horizon: counted one by one up to [`COUNTED`],
    /// estimated from global positions beyond (an upper bound: aborted transactions leave gaps).
    pub events: i64,
    /// Age in seconds of the oldest of them (0 when there are none).
    pub seconds: f64,
}

/// Most events [`lags`] and [`held`] count one by one. Beyond it the answer is an estimate, so
/// that these looks cost the same on a log of a thousand events or of a hundred million (a
/// count of everything behind a reader was 1.6 s at 11.7M events).
pub const COUNTED: i64 = 10_000;

/// How far `after` is behind the horizon.
pub async fn lag<'e>(
    executor: impl PgExecutor<'e>,
    after: LogPosition,
) -> Result<Lag, sqlx::Error> {
    Ok(lags(executor, &[after]).await?.pop().unwrap_or_default())
}

/// How far each of `readers` is behind the horizon, in one round trip.
pub async fn lags<'e>(
    executor: impl PgExecutor<'e>,
    readers: &[LogPosition],
) -> Result<Vec<Lag>, sqlx::Error> {
    // Each reader walks the log-order index from its position for at most COUNTED rows (the
    // ordered LIMIT keeps PostgreSQL on the index: a bare count was planned as a sequential
    // scan); a reader that fills them is estimated from the head's global position.
    let transactions: Vec<String> = readers
        .iter()
        .map(|r| r.transaction_id.to_string())
        .collect();
    let positions: Vec<i64> = readers.iter().map(|r| r.global_position).collect();
    let rows: Vec<Lag> = sqlx::query_as(concat!(
        "WITH head AS (SELECT global_position FROM events WHERE ",
        below_horizon!(),
        " ORDER BY events.transaction_id DESC, events.global_position DESC LIMIT 1)
         SELECT CASE WHEN count(b.occurred_at) < $3 THEN count(b.occurred_at)
                     ELSE GREATEST($3, COALESCE((SELECT global_position FROM head), 0) - r.gp)
                END AS events,
                GREATEST(COALESCE(EXTRACT(EPOCH FROM now() - min(b.occurred_at))::float8, 0), 0)
                  AS seconds
           FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS r(tx, gp, i)
           LEFT JOIN LATERAL (
                SELECT occurred_at FROM events
                 WHERE (transaction_id, global_position) > (r.tx::xid8, r.gp) AND ",
        below_horizon!(),
        "
                 ORDER BY events.transaction_id, events.global_position LIMIT $3) AS b ON true
          GROUP BY r.i, r.gp ORDER BY r.i"
    ))
    .bind(transactions)
    .bind(positions)
    .bind(COUNTED)
    .fetch_all(executor)
    .await?;
    Ok(rows)
}

/// Committed events no reader may read yet: they lie at or above the horizon because an older
/// transaction somewhere in the cluster is still open.
#[derive(Debug, Clone, Copy, Default, PartialEq, FromRow, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Held {
    /// How many (counted up to [`COUNTED`]: "at least" beyond it).
    pub events: i64,
    /// Age in seconds of the oldest of them (0 when there are none).
    pub seconds: f64,
}

/// The events held above the horizon now.
pub async fn held<'e>(executor: impl PgExecutor<'e>) -> Result<Held, sqlx::Error> {
    // A range on the log-order index's leading column, behind an ordered LIMIT so that
    // PostgreSQL reads the index from the horizon on (NOT (below the horizon) was planned as a
    // sequential scan of the whole log: a second per look at 600k events), for at most COUNTED
    // rows: a bulk load holding millions above the horizon made an uncapped count 1.6 s.
    let held: Held = sqlx::query_as(
        "SELECT count(*) AS events,
                COALESCE(EXTRACT(EPOCH FROM now() - min(occurred_at))::float8, 0) AS seconds
           FROM (SELECT occurred_at FROM events
                  WHERE transaction_id >= pg_snapshot_xmin(pg_current_snapshot())
                  ORDER BY events.transaction_id, events.global_position LIMIT $1) AS held",
    )
    .bind(COUNTED)
    .fetch_one(executor)
    .await?;
    Ok(Held {
        seconds: held.seconds.max(0.0),
        ..held
    })
}

/// The session whose open transaction is the oldest in the cluster: what holds the horizon
/// (from `pg_stat_activity`).
#[derive(Debug, Clone, PartialEq, FromRow, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct HorizonHolder {
    /// Its backend's process id (`pg_terminate_backend(pid)` ends it).
    pub pid: i32,
    /// Its transaction id.
    pub xid: String,
    /// Seconds since its transaction began.
    pub age_seconds: f64,
    /// Its `application_name`.
    pub application_name: String,
    /// Its state (`idle in transaction` is the usual culprit).
    pub state: String,
    /// Its database, user and client address.
    pub who: String,
}

/// The oldest open transaction that holds a transaction id, if any.
pub async fn horizon_holder<'e>(
    executor: impl PgExecutor<'e>,
) -> Result<Option<HorizonHolder>, sqlx::Error> {
    sqlx::query_as(
        "SELECT pid, backend_xid::text AS xid,
                COALESCE(EXTRACT(EPOCH FROM now() - xact_start)::float8, 0) AS age_seconds,
                COALESCE(application_name, '') AS application_name,
                COALESCE(state, '') AS state,
                concat_ws(' ', datname, usename, client_addr::text) AS who
           FROM pg_stat_activity
          WHERE backend_xid IS NOT NULL
          ORDER BY age(backend_xid) DESC LIMIT 1",
    )
    .fetch_optional(executor)
    .await
}

/// How many events the log holds, and its size on disk with its indexes, in bytes.
pub async fn footprint<'e>(executor: impl PgExecutor<'e>) -> Result<(i64, i64), sqlx::Error> {
    sqlx::query_as(concat!(
        "SELECT (SELECT count(*) FROM events), ",
        log_bytes!()
    ))
    .fetch_one(executor)
    .await
}

/// How many events lie between `after` and the horizon (exact up to [`COUNTED`], estimated
/// beyond: a rebuild's progress total).
pub async fn count_after<'e>(
    executor: impl PgExecutor<'e>,
    after: LogPosition,
) -> Result<i64, sqlx::Error> {
    lag(executor, after).await.map(|lag| lag.events)
}
