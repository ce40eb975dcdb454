//! One event as the log holds it, and how it comes out of a row: decoded once, straight from
//! its stored text into [`LogEvent`] (issue 43), with no JSON tree in between.

use chrono::{DateTime, Utc};
use relations_domain::{DecodeError, LogEvent, PostContent};
use serde::Deserialize;
use sqlx::postgres::PgRow;
use sqlx::{FromRow, Row};

use crate::position::LogPosition;

/// One event as the log holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedEvent {
    /// Unique id; consumers de-duplicate by it.
    pub event_id: uuid::Uuid,
    /// The event's place in the log.
    pub position: LogPosition,
    /// The stream within its type (`"3:9"` for a relation pair).
    pub stream_id: String,
    /// 1-based version within the stream.
    pub stream_version: i64,
    /// Payload schema version.
    pub event_version: String,
    /// When the command was decided.
    pub occurred_at: DateTime<Utc>,
    /// The event. Its content (`PostPublished`, `CommentAdded`) is `None` until revealed
    /// (`log::reveal`), and after it when the author's key was destroyed.
    pub event: LogEvent,
    /// `{"request_id", "actor"}` as stored (JSON text).
    metadata: Box<str>,
    /// The payload as stored: cqrs-es's externally tagged JSON text, what the relay publishes.
    stored: Box<str>,
    /// Where the event's content stands.
    content: Content,
}

/// Where an event's content stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Content {
    /// The event carries none.
    None,
    /// Sealed (payload version 2), not yet opened: base64 of the nonce and ciphertext.
    Sealed(Box<str>),
    /// In the event: stored plain (version 1), or opened.
    Open,
    /// Its author's key was destroyed (erasure): it is gone for good.
    Erased,
}

/// The one field read beside the typed decode, of an event that carries content.
#[derive(Deserialize)]
struct SealedField {
    sealed: Option<String>,
}

impl Content {
    /// Where the content of `event`, stored as `stored`, stands as read from the log.
    fn of(event: &LogEvent, stored: &str) -> Result<Self, serde_json::Error> {
        if !event.carries_content() {
            return Ok(Self::None);
        }
        let outer: std::collections::HashMap<&str, SealedField> = serde_json::from_str(stored)?;
        Ok(match outer.into_values().next().and_then(|f| f.sealed) {
            Some(sealed) => Self::Sealed(sealed.into()),
            None => Self::Open,
        })
    }
}

impl FromRow<'_, PgRow> for RecordedEvent {
    fn from_row(row: &PgRow) -> Result<Self, sqlx::Error> {
        let stream_type: &str = row.try_get("aggregate_type")?;
        let event_type: &str = row.try_get("event_type")?;
        let stored: &str = row.try_get("payload")?;
        let metadata: &str = row.try_get("metadata")?;
        let decoded = |error: DecodeError| sqlx::Error::ColumnDecode {
            index: "payload".into(),
            source: Box::new(error),
        };
        let event = LogEvent::decode(stream_type, event_type, stored).map_err(decoded)?;
        let content = Content::of(&event, stored).map_err(|e| decoded(e.into()))?;
        Ok(Self {
            event_id: row.try_get("event_id")?,
            position: LogPosition::from_row(row)?,
            stream_id: row.try_get("aggregate_id")?,
            stream_version: row.try_get("sequence")?,
            event_version: row.try_get("event_version")?,
            occurred_at: row.try_get("occurred_at")?,
            event,
            metadata: metadata.into(),
            stored: stored.into(),
            content,
        })
    }
}

impl RecordedEvent {
    /// An event from its stored parts (the Kafka consumer's envelope, tests): decoded as a
    /// row is.
    #[allow(clippy::too_many_arguments)]
    pub fn from_stored(
        event_id: uuid::Uuid,
        position: LogPosition,
        (stream_type, stream_id, stream_version): (&str, &str, i64),
        (event_type, event_version): (&str, &str),
        occurred_at: DateTime<Utc>,
        payload: &serde_json::Value,
        metadata: &serde_json::Value,
    ) -> Result<Self, DecodeError> {
        let stored = payload.to_string();
        let mut event = LogEvent::decode(stream_type, event_type, &stored)?;
        let mut content = Content::of(&event, &stored)?;
        // An envelope of a revealed event (`relations replay`) says so.
        if let (Content::Open, Some(erased)) = (&content, payload[event_type]["erased"].as_bool()) {
            if erased {
                content = Content::Erased;
                event.set_content(None);
            }
        }
        Ok(Self {
            event_id,
            position,
            stream_id: stream_id.to_owned(),
            stream_version,
            event_version: event_version.to_owned(),
            occurred_at,
            event,
            metadata: metadata.to_string().into(),
            stored: stored.into(),
            content,
        })
    }

    /// The type of the event's stream (`relation`, `post`, ...).
    pub fn stream_type(&self) -> &'static str {
        self.event.stream_type()
    }

    /// The event's name (`Followed`, ...).
    pub fn event_type(&self) -> &'static str {
        self.event.event_type()
    }

    /// The payload as the log stores it (JSON text; content sealed): what the relay publishes.
    pub fn stored_payload(&self) -> &str {
        &self.stored
    }

    /// The metadata, `{"request_id", "actor"}`.
    pub fn metadata(&self) -> serde_json::Value {
        serde_json::from_str(&self.metadata).unwrap_or_default()
    }

    /// Whether the event's content was erased: `None` for an event without content, or with
    /// content still sealed.
    pub fn erased(&self) -> Option<bool> {
        match self.content {
            Content::Open => Some(false),
            Content::Erased => Some(true),
            Content::None | Content::Sealed(_) => None,
        }
    }

    /// The payload's inner object as JSON, for output (`relations replay`, the envelope):
    /// as stored, or once revealed with `content` and `erased` in place of `sealed`.
    pub fn data(&self) -> serde_json::Value {
        let mut payload: serde_json::Value = serde_json::from_str(&self.stored).unwrap_or_default();
        let mut data = payload[self.event_type()].take();
        if let (Some(erased), Some(object)) = (self.erased(), data.as_object_mut()) {
            let content = self.event.content().map(|c| c.as_str().to_owned());
            object.remove("sealed");
            object.insert("content".into(), content.into());
            object.insert("erased".into(), erased.into());
        }
        data
    }

    /// The sealed content still to open, if any.
    pub(crate) fn sealed(&self) -> Option<&str> {
        match &self.content {
            Content::Sealed(sealed) => Some(sealed),
            Content::None | Content::Open | Content::Erased => None,
        }
    }

    /// The content opened (`Some`), or found erased (`None`).
    pub(crate) fn open(&mut self, content: Option<PostContent>) {
        self.content = match content {
            Some(_) => Content::Open,
            None => Content::Erased,
        };
        self.event.set_content(content);
    }
}
