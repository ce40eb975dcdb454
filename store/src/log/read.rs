//! Reading events: a batch after a position (whole transactions, below the horizon), every
//! event of a stream type up to a position, a pair's relation streams up to a moment, and what
//! is held above the horizon.

use chrono::{DateTime, Utc};
use relations_domain::{LogEvent, PairId, RelationEvent, RelationPair, UserId};
use sqlx::{FromRow, PgConnection, Row};

use super::event::RecordedEvent;
use crate::position::LogPosition;

/// Up to `limit` events after `after`, in commit order, all below the horizon, extended to
/// whole transactions: a batch never ends in the middle of one, so a projector that commits per
/// batch never shows a reader half of a command (a block without its unfollows).
pub async fn read_after(
    conn: &mut PgConnection,
    after: LogPosition,
    limit: i64,
) -> Result<Vec<RecordedEvent>, sqlx::Error> {
    let mut events: Vec<RecordedEvent> = sqlx::query_as(concat!(
        "SELECT ",
        columns!(),
        " FROM events WHERE ",
        after_position!(),
        " AND ",
        below_horizon!(),
        " ORDER BY events.transaction_id, events.global_position LIMIT $3"
    ))
    .bind(after.transaction_id.to_string())
    .bind(after.global_position)
    .bind(limit)
    .fetch_all(&mut *conn)
    .await?;
    if events.len() as i64 == limit {
        if let Some(last) = events.last().map(|e| e.position) {
            // The rest of the last transaction (committed: it is below the horizon).
            let rest: Vec<RecordedEvent> = sqlx::query_as(concat!(
                "SELECT ",
                columns!(),
                " FROM events
                  WHERE transaction_id = $1::text::xid8 AND global_position > $2
                  ORDER BY global_position"
            ))
            .bind(last.transaction_id.to_string())
            .bind(last.global_position)
            .fetch_all(&mut *conn)
            .await?;
            events.extend(rest);
        }
    }
    Ok(events)
}

/// Every event of streams of type `stream_type` after `after` up to `until` (inclusive), in
/// log order: for readers that fold a rare kind of event in full before tailing the log from
/// `until`, or that must know what lies between two read models' checkpoints.
pub async fn read_type(
    conn: &mut PgConnection,
    stream_type: &str,
    after: LogPosition,
    until: LogPosition,
) -> Result<Vec<RecordedEvent>, sqlx::Error> {
    sqlx::query_as(concat!(
        "SELECT ",
        columns!(),
        " FROM events WHERE aggregate_type = $3 AND ",
        after_position!(),
        " AND (transaction_id, global_position) <= ($4::text::xid8, $5)
          ORDER BY events.transaction_id, events.global_position"
    ))
    .bind(after.transaction_id.to_string())
    .bind(after.global_position)
    .bind(stream_type)
    .bind(until.transaction_id.to_string())
    .bind(until.global_position)
    .fetch_all(conn)
    .await
}

/// A relation event as `as_of` folds it: where it sits in the log, when it occurred, what it
/// says.
pub type RelationFact = (LogPosition, DateTime<Utc>, RelationEvent);

/// The events of the relation streams between `user` and each of `others` (a user and
/// themselves have none) that occurred by `at`, in log order: what `as_of` folds (the
/// relation as it stood then). A pair with an erased user yields nothing: after an erasure the
/// pair's relation is `none` at every moment. One range scan of each partition's stream index per pair;
/// only the columns the fold reads.
pub async fn relation_streams_until<'e>(
    executor: impl sqlx::PgExecutor<'e>,
    user: UserId,
    others: &[UserId],
    at: DateTime<Utc>,
) -> Result<Vec<RelationFact>, sqlx::Error> {
    let (streams, ids): (Vec<String>, Vec<i64>) = others
        .iter()
        .filter_map(|&other| {
            PairId::new(user, other)
                .ok()
                .map(|p| (p.stream_id(), other.get()))
        })
        .unzip();
    let rows = sqlx::query(
        "SELECT transaction_id::text::bigint AS transaction_id, global_position, occurred_at,
                event_type, payload::text AS payload
           FROM unnest($2::text[], $3::bigint[]) AS p(stream, other)
           JOIN events ON aggregate_type = $1 AND aggregate_id = p.stream
          WHERE occurred_at <= $4
            AND NOT EXISTS (SELECT 1 FROM erased_users x WHERE x.user_id = p.other)
            AND NOT EXISTS (SELECT 1 FROM erased_users x WHERE x.user_id = $5)
          ORDER BY events.transaction_id, events.global_position",
    )
    .bind(RelationPair::TYPE)
    .bind(&streams)
    .bind(&ids)
    .bind(at)
    .bind(user.get())
    .fetch_all(executor)
    .await?;
    rows.iter().map(relation_fact).collect()
}

/// The events of the relation streams of `pairs` at or below `up_to` in log order, in that
/// order: what a fold of each pair up to a place in the log reads (issue 47: the follows a
/// notification is judged against, at the place it is caused). The caller reads below the
/// horizon, so nothing at or below `up_to` commits later. One range scan of each partition's stream index
/// per pair.
pub async fn relation_streams_up_to<'e>(
    executor: impl sqlx::PgExecutor<'e>,
    pairs: &[PairId],
    up_to: LogPosition,
) -> Result<Vec<RelationFact>, sqlx::Error> {
    let streams: Vec<String> = pairs.iter().map(|p| p.stream_id()).collect();
    let rows = sqlx::query(
        "SELECT transaction_id::text::bigint AS transaction_id, global_position, occurred_at,
                event_type, payload::text AS payload
           FROM unnest($2::text[]) AS p(stream)
           JOIN events ON aggregate_type = $1 AND aggregate_id = p.stream
          WHERE (events.transaction_id, events.global_position) <= ($3::text::xid8, $4)
          ORDER BY events.transaction_id, events.global_position",
    )
    .bind(RelationPair::TYPE)
    .bind(&streams)
    .bind(up_to.transaction_id.to_string())
    .bind(up_to.global_position)
    .fetch_all(executor)
    .await?;
    rows.iter().map(relation_fact).collect()
}

/// One row of the relation readers above: its place, time and event.
fn relation_fact(row: &sqlx::postgres::PgRow) -> Result<RelationFact, sqlx::Error> {
    let event_type: &str = row.try_get("event_type")?;
    let payload: &str = row.try_get("payload")?;
    let decoded = LogEvent::decode(RelationPair::TYPE, event_type, payload);
    let Ok(LogEvent::Relation(event)) = decoded else {
        return Err(sqlx::Error::ColumnDecode {
            index: "payload".into(),
            source: format!("not a relation event: {event_type} {payload}").into(),
        });
    };
    Ok((
        LogPosition::from_row(row)?,
        row.try_get("occurred_at")?,
        event,
    ))
}

/// The events in the caller's snapshot that lie at or above the horizon (their
/// transactions committed after the oldest open one began), in log order. Readers never see
/// these yet; `verify` needs them to compare the write side's guard rows, which count every
/// committed event.
pub async fn read_unsettled(conn: &mut PgConnection) -> Result<Vec<RecordedEvent>, sqlx::Error> {
    sqlx::query_as(concat!(
        "SELECT ",
        columns!(),
        " FROM events WHERE NOT (",
        below_horizon!(),
        ") ORDER BY events.transaction_id, events.global_position"
    ))
    .fetch_all(conn)
    .await
}
