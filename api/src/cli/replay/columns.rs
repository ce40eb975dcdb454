//! The log as one flat, typed table, for columnar output (`relations replay --format parquet`):
//! the envelope's fields, the sortable pair `(transaction_id, global_position)` as integers,
//! and one typed column per payload field, null where an event type lacks it. No JSON strings:
//! `metadata` is flattened into `request_id` and `actor`, `data` into the payload columns.
//!
//! Every payload field the log holds must have a column here: an event with a field (or a
//! field of a type) that none holds fails the replay, naming it, rather than losing it.

use std::sync::Arc;

use arrow_array::builder::{
    BooleanBuilder, Int64Builder, ListBuilder, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use relations_store::log::RecordedEvent;
use serde_json::Value;

/// What a column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A 64-bit integer (user ids, numbers).
    Int,
    /// UTF-8 text.
    Text,
    /// An instant, microseconds, UTC (RFC 3339 in JSON).
    Time,
    /// true or false.
    Bool,
    /// A list of 64-bit integers (a list's members).
    Ints,
    /// A list of UTF-8 texts (a filter's contexts).
    Texts,
}

impl Kind {
    fn data_type(self) -> DataType {
        match self {
            Kind::Int => DataType::Int64,
            Kind::Text => DataType::Utf8,
            Kind::Time => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            Kind::Bool => DataType::Boolean,
            Kind::Ints => DataType::List(Arc::new(Field::new_list_field(DataType::Int64, true))),
            Kind::Texts => DataType::List(Arc::new(Field::new_list_field(DataType::Utf8, true))),
        }
    }

    /// Whether a JSON value is one of these (null is one of every kind).
    fn holds(self, value: &Value) -> bool {
        match self {
            Kind::Int => value.is_i64(),
            Kind::Text => value.is_string(),
            Kind::Time => micros(value).is_some(),
            Kind::Bool => value.is_boolean(),
            Kind::Ints => value
                .as_array()
                .is_some_and(|items| items.iter().all(Value::is_i64)),
            Kind::Texts => value
                .as_array()
                .is_some_and(|items| items.iter().all(Value::is_string)),
        }
    }
}

/// An RFC 3339 text as microseconds since the epoch.
fn micros(value: &Value) -> Option<i64> {
    let at = chrono::DateTime::parse_from_rfc3339(value.as_str()?).ok()?;
    Some(at.timestamp_micros())
}

/// The envelope's columns, in order (docs/analytics.md lists them).
const ENVELOPE: [(&str, Kind); 11] = [
    ("transaction_id", Kind::Int),
    ("global_position", Kind::Int),
    ("event_id", Kind::Text),
    ("stream_type", Kind::Text),
    ("stream_id", Kind::Text),
    ("stream_version", Kind::Int),
    ("type", Kind::Text),
    ("version", Kind::Text),
    ("occurred_at", Kind::Time),
    ("request_id", Kind::Text),
    ("actor", Kind::Int),
];

/// The payload's columns: (column, the `data` field it holds, kind), after the envelope's.
/// One field, `target`, has two kinds (a user id in follow requests, `"post:{id}"` or
/// `"comment:{id}"` in likes): it has one column per kind, `target` and `like_target`.
const PAYLOAD: [(&str, &str, Kind); 44] = [
    ("follower", "follower", Kind::Int),
    ("followee", "followee", Kind::Int),
    ("cause", "cause", Kind::Text),
    ("blocker", "blocker", Kind::Int),
    ("blocked", "blocked", Kind::Int),
    ("muter", "muter", Kind::Int),
    ("muted", "muted", Kind::Int),
    ("until", "until", Kind::Time),
    ("requester", "requester", Kind::Int),
    ("target", "target", Kind::Int),
    ("like_target", "target", Kind::Text),
    ("post_id", "post_id", Kind::Text),
    ("comment", "comment", Kind::Int),
    ("parent", "parent", Kind::Int),
    ("author", "author", Kind::Int),
    ("post_author", "post_author", Kind::Int),
    ("by", "by", Kind::Int),
    ("content", "content", Kind::Text),
    ("erased", "erased", Kind::Bool),
    ("created_at", "created_at", Kind::Time),
    ("visibility", "visibility", Kind::Text),
    ("user", "user", Kind::Int),
    ("client", "client", Kind::Text),
    ("up_to", "up_to", Kind::Int),
    ("post", "post", Kind::Text),
    ("show_reposts", "show_reposts", Kind::Bool),
    ("notify", "notify", Kind::Bool),
    ("quote_of", "quote_of", Kind::Text),
    ("quote_author", "quote_author", Kind::Int),
    ("quote_policy", "quote_policy", Kind::Text),
    ("comment_policy", "comment_policy", Kind::Text),
    ("not_following", "not_following", Kind::Text),
    ("not_followers", "not_followers", Kind::Text),
    ("dismissed", "dismissed", Kind::Int),
    ("owner", "owner", Kind::Int),
    ("list", "list", Kind::Text),
    ("title", "title", Kind::Text),
    ("exclusive", "exclusive", Kind::Bool),
    ("members", "members", Kind::Ints),
    ("filter", "filter", Kind::Text),
    ("whole_word", "whole_word", Kind::Bool),
    ("contexts", "contexts", Kind::Texts),
    ("action", "action", Kind::Text),
    ("expires_at", "expires_at", Kind::Time),
];

/// The table's schema: every column nullable but the sortable pair and the envelope's own.
pub fn schema() -> SchemaRef {
    let envelope = ENVELOPE.iter().map(|&(name, kind)| {
        let nullable = matches!(name, "actor" | "request_id");
        Field::new(name, kind.data_type(), nullable)
    });
    let payload = PAYLOAD
        .iter()
        .map(|&(name, _, kind)| Field::new(name, kind.data_type(), true));
    Arc::new(Schema::new(envelope.chain(payload).collect::<Vec<_>>()))
}

/// The index of column `name` (a column [`schema`] has).
pub fn index(name: &str) -> usize {
    schema().index_of(name).expect("a column of the flat table")
}

/// A JSON field with no column of its kind: the table would lose it.
#[derive(Debug, thiserror::Error)]
#[error("event {event_id} ({event_type}): its field {field:?} ({value}) has no column")]
pub struct Unmapped {
    event_id: uuid::Uuid,
    event_type: String,
    field: String,
    value: Value,
}

/// Checks that every non-null field of `event`'s data has a column of its kind.
fn mapped(event: &RecordedEvent, data: &Value) -> Result<(), Unmapped> {
    let unmapped = |field: &str, value: &Value| Unmapped {
        event_id: event.event_id,
        event_type: event.event_type().to_owned(),
        field: field.to_owned(),
        value: value.clone(),
    };
    let Some(data) = data.as_object() else {
        return Err(unmapped("data", data));
    };
    for (field, value) in data {
        let held = value.is_null()
            || PAYLOAD
                .iter()
                .any(|&(_, f, kind)| f == field && kind.holds(value));
        if !held {
            return Err(unmapped(field, value));
        }
    }
    Ok(())
}

/// One column of `kind` from each row's JSON value (null where absent or of another kind).
fn column<'v>(kind: Kind, values: impl Iterator<Item = Option<&'v Value>>) -> ArrayRef {
    let values = values.map(|v| v.filter(|v| !v.is_null() && kind.holds(v)));
    match kind {
        Kind::Int => {
            let mut b = Int64Builder::new();
            values.for_each(|v| b.append_option(v.and_then(Value::as_i64)));
            Arc::new(b.finish())
        }
        Kind::Text => {
            let mut b = StringBuilder::new();
            values.for_each(|v| b.append_option(v.and_then(Value::as_str)));
            Arc::new(b.finish())
        }
        Kind::Time => {
            let mut b = TimestampMicrosecondBuilder::new().with_timezone("UTC");
            values.for_each(|v| b.append_option(v.and_then(micros)));
            Arc::new(b.finish())
        }
        Kind::Bool => {
            let mut b = BooleanBuilder::new();
            values.for_each(|v| b.append_option(v.and_then(Value::as_bool)));
            Arc::new(b.finish())
        }
        Kind::Ints => {
            let mut b = ListBuilder::new(Int64Builder::new());
            values.for_each(|v| {
                b.append_option(
                    v.and_then(Value::as_array)
                        .map(|items| items.iter().map(Value::as_i64)),
                )
            });
            Arc::new(b.finish())
        }
        Kind::Texts => {
            let mut b = ListBuilder::new(StringBuilder::new());
            values.for_each(|v| {
                b.append_option(
                    v.and_then(Value::as_array)
                        .map(|items| items.iter().map(Value::as_str)),
                )
            });
            Arc::new(b.finish())
        }
    }
}

/// The envelope's columns of `events`, in [`ENVELOPE`]'s order.
fn envelope_columns(events: &[&RecordedEvent]) -> Vec<ArrayRef> {
    let ints = |f: fn(&RecordedEvent) -> Option<i64>| -> ArrayRef {
        Arc::new(
            events
                .iter()
                .map(|e| f(e))
                .collect::<arrow_array::Int64Array>(),
        )
    };
    let texts = |f: fn(&RecordedEvent) -> Option<String>| -> ArrayRef {
        Arc::new(
            events
                .iter()
                .map(|e| f(e))
                .collect::<arrow_array::StringArray>(),
        )
    };
    let occurred = events
        .iter()
        .map(|e| Some(e.occurred_at.timestamp_micros()))
        .collect::<arrow_array::TimestampMicrosecondArray>()
        .with_timezone("UTC");
    vec![
        ints(|e| Some(e.position.transaction_id)),
        ints(|e| Some(e.position.global_position)),
        texts(|e| Some(e.event_id.to_string())),
        texts(|e| Some(e.stream_type().to_owned())),
        texts(|e| Some(e.stream_id.clone())),
        ints(|e| Some(e.stream_version)),
        texts(|e| Some(e.event_type().to_owned())),
        texts(|e| Some(e.event_version.clone())),
        Arc::new(occurred),
        texts(|e| e.metadata()["request_id"].as_str().map(str::to_owned)),
        ints(|e| e.metadata()["actor"].as_str().and_then(|a| a.parse().ok())),
    ]
}

/// `events` (revealed: content opened or null) as rows of the table, in the order given.
pub fn batch(events: &[&RecordedEvent]) -> anyhow::Result<RecordBatch> {
    // Each event's data as JSON, once.
    let data: Vec<Value> = events.iter().map(|e| e.data()).collect();
    for (event, data) in events.iter().zip(&data) {
        mapped(event, data)?;
    }
    let mut columns = envelope_columns(events);
    for &(_, field, kind) in &PAYLOAD {
        columns.push(column(kind, data.iter().map(|d| d.get(field))));
    }
    Ok(RecordBatch::try_new(schema(), columns)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_array::Array;
    use relations_store::LogPosition;

    fn event(event_type: &str, data: Value) -> RecordedEvent {
        try_event(event_type, data).expect("an event of the log")
    }

    /// An event as the log would hold it, if it decodes as one.
    fn try_event(
        event_type: &str,
        data: Value,
    ) -> Result<RecordedEvent, relations_domain::DecodeError> {
        let stream_type = match event_type {
            "Liked" | "Unliked" => "like",
            _ => "relation",
        };
        RecordedEvent::from_stored(
            uuid::Uuid::new_v4(),
            LogPosition {
                transaction_id: 320_569,
                global_position: 10,
            },
            (stream_type, "3:9", 1),
            (event_type, "1"),
            chrono::DateTime::from_timestamp_micros(1_700_000_000_123_456).unwrap(),
            &serde_json::json!({ event_type: data }),
            &serde_json::json!({"request_id": "r", "actor": "3"}),
        )
    }

    #[test]
    fn each_field_lands_in_its_typed_column_and_the_rest_are_null() {
        let follow = event(
            "Followed",
            serde_json::json!({"follower": 3, "followee": 9}),
        );
        let like = event(
            "Liked",
            serde_json::json!({"user": 3, "target": format!("post:0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"), "author": 9}),
        );
        let batch = batch(&[&follow, &like]).unwrap();
        let int = |name: &str, row: usize| {
            let column = batch.column(index(name)).as_primitive::<Int64Type>();
            column.is_valid(row).then(|| column.value(row))
        };
        assert_eq!(int("transaction_id", 0), Some(320_569));
        assert_eq!(int("global_position", 1), Some(10));
        assert_eq!(int("actor", 0), Some(3));
        assert_eq!((int("follower", 0), int("follower", 1)), (Some(3), None));
        assert_eq!((int("user", 0), int("user", 1)), (None, Some(3)));
        assert_eq!(int("target", 1), None, "a like's target is text");
        let like_target = batch.column(index("like_target")).as_string::<i32>();
        assert_eq!(
            like_target.value(1),
            "post:0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
        );
        assert!(like_target.is_null(0));
        // Issue 46: a dismissed suggestion has a column of its own.
        let dismissal = event(
            "SuggestionDismissed",
            serde_json::json!({"user": 3, "dismissed": 9}),
        );
        let alone = super::batch(&[&dismissal]).unwrap();
        let dismissed = alone.column(index("dismissed")).as_primitive::<Int64Type>();
        assert_eq!(dismissed.value(0), 9);
    }

    #[test]
    fn a_field_with_no_column_fails_loudly() {
        let odd = event(
            "Followed",
            serde_json::json!({"follower": 3, "followee": 9, "mood": "odd"}),
        );
        let error = batch(&[&odd]).unwrap_err().to_string();
        assert!(error.contains("\"mood\""), "{error}");
        // A field of the wrong kind is refused earlier, by the decoder: no such event is read.
        let wrong = try_event(
            "Followed",
            serde_json::json!({"follower": "three", "followee": 9}),
        );
        assert!(wrong.is_err());
    }
}
