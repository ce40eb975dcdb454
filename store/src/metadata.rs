//! What every event carries besides its payload.

use std::collections::HashMap;

use relations_domain::UserId;

/// Who caused an event and through which request. Stored in the `metadata` column as the
/// string map cqrs-es uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventMetadata {
    /// The request's id (the `x-request-id` header, or one made for it).
    pub request_id: String,
    /// The authenticated user who issued the command.
    pub actor: UserId,
}

impl EventMetadata {
    /// The JSON object stored with each event.
    pub fn to_json(&self) -> serde_json::Value {
        let map: HashMap<&str, String> = HashMap::from([
            ("request_id", self.request_id.clone()),
            ("actor", self.actor.to_string()),
        ]);
        serde_json::to_value(map).expect("a string map serialises")
    }
}

/// Now, to the microsecond: what PostgreSQL keeps, so every read model shows the instant a
/// command stamps on its event.
pub fn now() -> chrono::DateTime<chrono::Utc> {
    let now = chrono::Utc::now();
    chrono::DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now)
}
