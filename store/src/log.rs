//! The global log, read in commit order without ever skipping an event.
//!
//! Events are visited in `(transaction_id, global_position)` order, and only below the oldest
//! transaction still open (`pg_snapshot_xmin`): an event whose transaction has not committed
//! yet may carry a lower `global_position` than events already visible, and reading past it
//! would skip it for good. Every transaction below the horizon has committed or aborted, so
//! what is read there never changes.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::postgres::PgRow;
use sqlx::{PgConnection, PgExecutor, Row};

use crate::position::LogPosition;

/// One event as the log holds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedEvent {
    /// Unique id; consumers de-duplicate by it.
    pub event_id: uuid::Uuid,
    /// The event's place in the log.
    pub position: LogPosition,
    /// The aggregate type (`relation`, ...).
    pub stream_type: String,
    /// The stream within the type (`"3:9"` for a relation pair).
    pub stream_id: String,
    /// 1-based version within the stream.
    pub stream_version: i64,
    /// `Followed`, `Unfollowed`, ...
    pub event_type: String,
    /// Payload schema version.
    pub event_version: String,
    /// When the command was decided.
    pub occurred_at: DateTime<Utc>,
    /// cqrs-es's externally tagged payload: `{"<event_type>": {...}}`.
    pub payload: serde_json::Value,
    /// `{"request_id", "actor"}`.
    pub metadata: serde_json::Value,
}

/// The columns of [`RecordedEvent`]. `transaction_id` comes out as a bigint under its own name,
/// so an ORDER BY must name `events.transaction_id` (the indexed xid8), not the alias: ordering
/// by the alias sorts the whole rest of the log on every read.
const COLUMNS: &str = "event_id, transaction_id::text::bigint AS transaction_id, global_position, \
    aggregate_type, aggregate_id, sequence, event_type, event_version, occurred_at, \
    payload::jsonb AS payload, metadata::jsonb AS metadata";

impl RecordedEvent {
    fn from_row(row: &PgRow) -> Result<Self, sqlx::Error> {
        Ok(Self {
            event_id: row.try_get("event_id")?,
            position: LogPosition {
                transaction_id: row.try_get("transaction_id")?,
                global_position: row.try_get("global_position")?,
            },
            stream_type: row.try_get("aggregate_type")?,
            stream_id: row.try_get("aggregate_id")?,
            stream_version: row.try_get("sequence")?,
            event_type: row.try_get("event_type")?,
            event_version: row.try_get("event_version")?,
            occurred_at: row.try_get("occurred_at")?,
            payload: row.try_get("payload")?,
            metadata: row.try_get("metadata")?,
        })
    }

    /// The payload's inner object (`payload[event_type]`).
    pub fn data(&self) -> &serde_json::Value {
        &self.payload[self.event_type.as_str()]
    }

    /// Decodes the payload as an aggregate's event type.
    pub fn decode<E: serde::de::DeserializeOwned>(&self) -> Result<E, serde_json::Error> {
        E::deserialize(&self.payload)
    }
}

/// Up to `limit` events after `after`, in commit order, all below the horizon, extended to
/// whole transactions: a batch never ends in the middle of one, so a projector that commits per
/// batch never shows a reader half of a command (a block without its unfollows).
pub async fn read_after(
    conn: &mut PgConnection,
    after: LogPosition,
    limit: i64,
) -> Result<Vec<RecordedEvent>, sqlx::Error> {
    let sql = format!(
        "SELECT {COLUMNS} FROM events
          WHERE (transaction_id, global_position) > ($1::text::xid8, $2)
            AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())
          ORDER BY events.transaction_id, events.global_position
          LIMIT $3"
    );
    let rows = sqlx::query(&sql)
        .bind(after.transaction_id.to_string())
        .bind(after.global_position)
        .bind(limit)
        .fetch_all(&mut *conn)
        .await?;
    let mut events = rows
        .iter()
        .map(RecordedEvent::from_row)
        .collect::<Result<Vec<_>, _>>()?;
    if events.len() as i64 == limit {
        if let Some(last) = events.last().map(|e| e.position) {
            // The rest of the last transaction (committed: it is below the horizon).
            let sql = format!(
                "SELECT {COLUMNS} FROM events
                  WHERE transaction_id = $1::text::xid8 AND global_position > $2
                  ORDER BY global_position"
            );
            let rest = sqlx::query(&sql)
                .bind(last.transaction_id.to_string())
                .bind(last.global_position)
                .fetch_all(&mut *conn)
                .await?;
            for row in &rest {
                events.push(RecordedEvent::from_row(row)?);
            }
        }
    }
    Ok(events)
}

/// The position of the last event below the horizon: how far a reader could get now.
pub async fn head<'e>(executor: impl PgExecutor<'e>) -> Result<LogPosition, sqlx::Error> {
    let row = sqlx::query(
        "SELECT transaction_id::text::bigint AS transaction_id, global_position FROM events
          WHERE transaction_id < pg_snapshot_xmin(pg_current_snapshot())
          ORDER BY events.transaction_id DESC, events.global_position DESC LIMIT 1",
    )
    .fetch_optional(executor)
    .await?;
    match row {
        Some(row) => Ok(LogPosition {
            transaction_id: row.try_get("transaction_id")?,
            global_position: row.try_get("global_position")?,
        }),
        None => Ok(LogPosition::START),
    }
}

/// Whether any event lies between `after` and the horizon.
pub async fn has_after<'e>(
    executor: impl PgExecutor<'e>,
    after: LogPosition,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM events
          WHERE (transaction_id, global_position) > ($1::text::xid8, $2)
            AND transaction_id < pg_snapshot_xmin(pg_current_snapshot()))",
    )
    .bind(after.transaction_id.to_string())
    .bind(after.global_position)
    .fetch_one(executor)
    .await
}

/// How many events lie between `after` and the horizon.
pub async fn count_after<'e>(
    executor: impl PgExecutor<'e>,
    after: LogPosition,
) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT count(*) FROM events
          WHERE (transaction_id, global_position) > ($1::text::xid8, $2)
            AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())",
    )
    .bind(after.transaction_id.to_string())
    .bind(after.global_position)
    .fetch_one(executor)
    .await
}

/// The schema name of the public event envelope (`relations replay`, Kafka).
pub const ENVELOPE_SCHEMA: &str = "relations.event/1";

impl RecordedEvent {
    /// The versioned JSON envelope analysts and Kafka consumers read:
    /// `{schema, event_id, position, stream: {type, id, version}, type, version, occurred_at,
    /// metadata, data}` where `data` is the payload's inner object.
    pub fn envelope(&self) -> serde_json::Value {
        serde_json::json!({
            "schema": ENVELOPE_SCHEMA,
            "event_id": self.event_id,
            "position": self.position,
            "stream": {"type": self.stream_type, "id": self.stream_id, "version": self.stream_version},
            "type": self.event_type,
            "version": self.event_version,
            "occurred_at": self.occurred_at,
            "metadata": self.metadata,
            "data": self.data(),
        })
    }

    /// Whether `user` appears in the event's data (as any user field).
    pub fn mentions(&self, user: i64) -> bool {
        self.data()
            .as_object()
            .is_some_and(|o| o.values().any(|v| v.as_i64() == Some(user)))
    }
}

/// An envelope this service did not write, or of a schema it does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a {ENVELOPE_SCHEMA} envelope: {0}")]
pub struct BadEnvelope(pub String);

impl RecordedEvent {
    /// Reads back what [`RecordedEvent::envelope`] wrote (a Kafka message's value).
    pub fn from_envelope(envelope: &serde_json::Value) -> Result<Self, BadEnvelope> {
        let bad = |what: &str| BadEnvelope(what.to_owned());
        if envelope["schema"] != ENVELOPE_SCHEMA {
            return Err(bad("schema"));
        }
        let text = |field: &serde_json::Value, name: &str| {
            field.as_str().map(str::to_owned).ok_or_else(|| bad(name))
        };
        let event_type = text(&envelope["type"], "type")?;
        Ok(Self {
            event_id: text(&envelope["event_id"], "event_id")?
                .parse()
                .map_err(|_| bad("event_id"))?,
            position: text(&envelope["position"], "position")?
                .parse()
                .map_err(|_| bad("position"))?,
            stream_type: text(&envelope["stream"]["type"], "stream.type")?,
            stream_id: text(&envelope["stream"]["id"], "stream.id")?,
            stream_version: envelope["stream"]["version"]
                .as_i64()
                .ok_or_else(|| bad("stream.version"))?,
            event_version: text(&envelope["version"], "version")?,
            occurred_at: text(&envelope["occurred_at"], "occurred_at")?
                .parse()
                .map_err(|_| bad("occurred_at"))?,
            payload: serde_json::json!({ event_type.clone(): envelope["data"].clone() }),
            metadata: envelope["metadata"].clone(),
            event_type,
        })
    }

    /// The key that keeps a stream in order on a partitioned topic: `"{type}:{id}"`.
    pub fn stream_key(&self) -> String {
        format!("{}:{}", self.stream_type, self.stream_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_reads_back_as_the_event_it_was() {
        let event = RecordedEvent {
            event_id: uuid::Uuid::new_v4(),
            position: LogPosition {
                transaction_id: 812,
                global_position: 40,
            },
            stream_type: "relation".into(),
            stream_id: "3:9".into(),
            stream_version: 2,
            event_type: "Unfollowed".into(),
            event_version: "1".into(),
            occurred_at: DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap(),
            payload: serde_json::json!({"Unfollowed": {"follower": 3, "followee": 9, "cause": "block"}}),
            metadata: serde_json::json!({"request_id": "r", "actor": "3"}),
        };
        assert_eq!(
            RecordedEvent::from_envelope(&event.envelope()),
            Ok(event.clone())
        );
        assert_eq!(event.stream_key(), "relation:3:9");
        let mut other = event.envelope();
        other["schema"] = "relations.event/2".into();
        assert!(RecordedEvent::from_envelope(&other).is_err());
        assert!(RecordedEvent::from_envelope(&serde_json::json!({})).is_err());
    }
}
