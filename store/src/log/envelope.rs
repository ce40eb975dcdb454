//! The versioned JSON envelope of an event: what `relations replay` prints and Kafka carries
//! (docs/events.md).

use super::event::RecordedEvent;

/// The schema name of the public event envelope (`relations replay`, Kafka).
pub const ENVELOPE_SCHEMA: &str = "relations.event/1";

impl RecordedEvent {
    /// The versioned JSON envelope analysts and Kafka consumers read:
    /// `{schema, event_id, position, transaction_id, global_position, stream: {type, id,
    /// version}, type, version, occurred_at, metadata, data}` where `data` is the payload's
    /// inner object, and the two integers are `position`'s parts: sorting by them (in that
    /// order) is log order, which sorting `position` as text is not.
    pub fn envelope(&self) -> serde_json::Value {
        serde_json::json!({
            "schema": ENVELOPE_SCHEMA,
            "event_id": self.event_id,
            "position": self.position,
            "transaction_id": self.position.transaction_id,
            "global_position": self.position.global_position,
            "stream": {"type": self.stream_type(), "id": self.stream_id, "version": self.stream_version},
            "type": self.event_type(),
            "version": self.event_version,
            "occurred_at": self.occurred_at,
            "metadata": self.metadata(),
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
        let stream_type = text(&envelope["stream"]["type"], "stream.type")?;
        let stream_id = text(&envelope["stream"]["id"], "stream.id")?;
        let stream_version = envelope["stream"]["version"]
            .as_i64()
            .ok_or_else(|| bad("stream.version"))?;
        let event_version = text(&envelope["version"], "version")?;
        Self::from_stored(
            text(&envelope["event_id"], "event_id")?
                .parse()
                .map_err(|_| bad("event_id"))?,
            text(&envelope["position"], "position")?
                .parse()
                .map_err(|_| bad("position"))?,
            (&stream_type, &stream_id, stream_version),
            (&event_type, &event_version),
            text(&envelope["occurred_at"], "occurred_at")?
                .parse()
                .map_err(|_| bad("occurred_at"))?,
            &serde_json::json!({ event_type.clone(): envelope["data"].clone() }),
            &envelope["metadata"],
        )
        .map_err(|e| BadEnvelope(format!("data: {e}")))
    }

    /// The key that keeps a stream in order on a partitioned topic: `"{type}:{id}"`.
    pub fn stream_key(&self) -> String {
        format!("{}:{}", self.stream_type(), self.stream_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::position::LogPosition;
    use chrono::DateTime;

    #[test]
    fn an_envelope_reads_back_as_the_event_it_was() {
        let event = RecordedEvent::from_stored(
            uuid::Uuid::new_v4(),
            LogPosition {
                transaction_id: 812,
                global_position: 40,
            },
            ("relation", "3:9", 2),
            ("Unfollowed", "1"),
            DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap(),
            &serde_json::json!({"Unfollowed": {"follower": 3, "followee": 9, "cause": "block"}}),
            &serde_json::json!({"request_id": "r", "actor": "3"}),
        )
        .unwrap();
        assert_eq!(
            RecordedEvent::from_envelope(&event.envelope()),
            Ok(event.clone())
        );
        assert_eq!(event.stream_key(), "relation:3:9");
        let envelope = event.envelope();
        assert_eq!(
            (&envelope["transaction_id"], &envelope["global_position"]),
            (&serde_json::json!(812), &serde_json::json!(40))
        );
        let mut other = event.envelope();
        other["schema"] = "relations.event/2".into();
        assert!(RecordedEvent::from_envelope(&other).is_err());
        assert!(RecordedEvent::from_envelope(&serde_json::json!({})).is_err());
    }
}
