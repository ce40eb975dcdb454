//! One event as the log holds it, and how it comes out of a row.

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::postgres::PgRow;
use sqlx::{FromRow, Row};

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

impl FromRow<'_, PgRow> for RecordedEvent {
    fn from_row(row: &PgRow) -> Result<Self, sqlx::Error> {
        Ok(Self {
            event_id: row.try_get("event_id")?,
            position: LogPosition::from_row(row)?,
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
}

impl RecordedEvent {
    /// The payload's inner object (`payload[event_type]`).
    pub fn data(&self) -> &serde_json::Value {
        &self.payload[self.event_type.as_str()]
    }

    /// Decodes the payload as an aggregate's event type.
    pub fn decode<E: serde::de::DeserializeOwned>(&self) -> Result<E, serde_json::Error> {
        E::deserialize(&self.payload)
    }
}
