//! The one sanctioned rewrite of the log (issue 25): the version-1 `PostPublished` and
//! `CommentAdded` events an older log holds, with their content in plain text, are sealed in
//! place as version 2, keeping every event's id, stream version, position, transaction and
//! time. `relations migrate` runs it; the append-only trigger lets exactly this UPDATE through,
//! and only in a transaction that sets `relations.rewrite` (migration
//! `20261124000016_sanctioned_rewrite.sql`).
//!
//! The log is walked in its order, a span at a time, each span one short transaction that
//! locks its plain events, seals them (making their authors' keys in that transaction) and
//! writes them back. Nothing is remembered between runs: a run that stops part way leaves
//! sealed and plain events side by side, which every reader understands, and the next run
//! finds the plain ones left; a run over a sealed log changes nothing.

use sqlx::{Connection, PgConnection};

use super::content::{self, Unsealed, CONTENT_TYPES};
use super::event::RecordedEvent;
use crate::db::end_transaction;
use crate::keys::{KeyError, Keyring};
use crate::position::LogPosition;

/// Events walked per transaction.
const SPAN: i64 = 10_000;

/// What a rewrite did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sealed {
    /// Events walked.
    pub walked: u64,
    /// Events sealed in place.
    pub sealed: u64,
}

/// Seals every plain-text content event of the log in place; `progress` hears the running
/// totals after each span.
pub async fn seal_plain_content(
    conn: &mut PgConnection,
    keys: &Keyring,
    progress: impl Fn(Sealed),
) -> Result<Sealed, KeyError> {
    let mut after = LogPosition::START;
    let mut done = Sealed::default();
    loop {
        let mut tx = conn.begin().await?;
        let span = seal_span(&mut tx, keys, after).await;
        let span = end_transaction(tx, span, |_| true).await?;
        let Some((end, walked, sealed)) = span else {
            return Ok(done);
        };
        after = end;
        done.walked += walked;
        done.sealed += sealed;
        progress(done);
    }
}

/// Seals the plain events of the next span after `after`, in the caller's transaction: the
/// span's last position, events walked and events sealed; `None` past the end of the log.
async fn seal_span(
    tx: &mut PgConnection,
    keys: &Keyring,
    after: LogPosition,
) -> Result<Option<(LogPosition, u64, u64)>, KeyError> {
    let Some((end, walked)) = span_end(tx, after).await? else {
        return Ok(None);
    };
    sqlx::query("SET LOCAL relations.rewrite = 'seal-content'")
        .execute(&mut *tx)
        .await?;
    let read: Vec<RecordedEvent> = sqlx::query_as(concat!(
        "SELECT ",
        columns!(),
        " FROM events WHERE ",
        after_position!(),
        " AND (transaction_id, global_position) <= ($3::text::xid8, $4)
          AND event_type = ANY($5) AND event_version = '1'
          ORDER BY events.transaction_id, events.global_position
          FOR UPDATE"
    ))
    .bind(after.transaction_id.to_string())
    .bind(after.global_position)
    .bind(end.transaction_id.to_string())
    .bind(end.global_position)
    .bind(&CONTENT_TYPES[..])
    .fetch_all(&mut *tx)
    .await?;
    // The write path's shape: each payload as a JSON tree, sealed in place.
    let mut plain: Vec<Plain> = read
        .iter()
        .map(|e| Plain {
            stream_type: e.stream_type(),
            stream_id: e.stream_id.clone(),
            sequence: e.stream_version,
            event_type: e.event_type(),
            version: e.event_version.clone(),
            payload: serde_json::from_str(e.stored_payload()).unwrap_or_default(),
        })
        .collect();
    let mut unsealed: Vec<Unsealed<'_>> = plain
        .iter_mut()
        .map(|e| Unsealed {
            stream_type: e.stream_type,
            stream_id: &e.stream_id,
            sequence: e.sequence,
            event_type: e.event_type,
            version: &mut e.version,
            payload: &mut e.payload,
        })
        .collect();
    content::seal(&mut *tx, keys, &mut unsealed).await?;
    let sealed = write_back(tx, &plain).await?;
    Ok(Some((end, walked, sealed)))
}

/// The last position of the span of [`SPAN`] events after `after`, and how many it holds;
/// `None` past the end of the log.
async fn span_end(
    tx: &mut PgConnection,
    after: LogPosition,
) -> Result<Option<(LogPosition, u64)>, sqlx::Error> {
    let end: Option<(i64, i64, i64)> = sqlx::query_as(concat!(
        "SELECT transaction_id::text::bigint, global_position, count(*) OVER ()
           FROM (SELECT transaction_id, global_position FROM events WHERE ",
        after_position!(),
        " ORDER BY transaction_id, global_position LIMIT $3) AS span
          ORDER BY transaction_id DESC, global_position DESC LIMIT 1"
    ))
    .bind(after.transaction_id.to_string())
    .bind(after.global_position)
    .bind(SPAN)
    .fetch_optional(tx)
    .await?;
    Ok(end.map(|(transaction_id, global_position, walked)| {
        let end = LogPosition {
            transaction_id,
            global_position,
        };
        (end, walked as u64)
    }))
}

/// A version-1 event on its way to being sealed.
struct Plain {
    stream_type: &'static str,
    stream_id: String,
    sequence: i64,
    event_type: &'static str,
    version: String,
    payload: serde_json::Value,
}

/// Writes back the events of `events` that were sealed (payload and version only; the
/// trigger checks that nothing else moved); how many.
async fn write_back(tx: &mut PgConnection, events: &[Plain]) -> Result<u64, sqlx::Error> {
    let sealed: Vec<&Plain> = events
        .iter()
        .filter(|e| e.version == content::SEALED_VERSION)
        .collect();
    sqlx::query(
        "UPDATE events e SET payload = x.p::json, event_version = $5
           FROM unnest($1::text[], $2::text[], $3::bigint[], $4::jsonb[]) AS x(t, id, s, p)
          WHERE e.aggregate_type = x.t AND e.aggregate_id = x.id AND e.sequence = x.s",
    )
    .bind(sealed.iter().map(|e| e.stream_type).collect::<Vec<_>>())
    .bind(
        sealed
            .iter()
            .map(|e| e.stream_id.as_str())
            .collect::<Vec<_>>(),
    )
    .bind(sealed.iter().map(|e| e.sequence).collect::<Vec<_>>())
    .bind(sealed.iter().map(|e| e.payload.clone()).collect::<Vec<_>>())
    .bind(content::SEALED_VERSION)
    .execute(tx)
    .await?;
    Ok(sealed.len() as u64)
}
