//! Post and comment content in the log: sealed on the way in, and the one place every reader
//! turns a stored payload back into content.
//!
//! `PostPublished`, `CommentAdded` and `FilterCreated` (a filter's phrase, issue 47: personal
//! data like a post) are the events that carry content. Version 1 holds it as
//! plain text (`"content": string`), version 2 sealed with its author's data key
//! (`"sealed": base64(nonce || AES-256-GCM ciphertext)`, no `content`); the command paths write
//! version 2 only, and `relations migrate` seals the version-1 events an older log holds
//! ([`super::rewrite`]). [`reveal`] brings either version to the shape every reader folds:
//! `"content": string | null` and `"erased": bool` (null and true when the author's key was
//! destroyed). Sealed content is bound to its place: the associated data names the stream, the
//! event's version in it, its type and its author, so a ciphertext moved elsewhere never opens.

use std::borrow::Cow;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use serde_json::Value;
use sqlx::PgConnection;

use relations_domain::PostContent;

use super::event::RecordedEvent;
use crate::keys::{KeyError, Keyring};

/// The event types whose payload carries content.
pub const CONTENT_TYPES: [&str; 3] = ["PostPublished", "CommentAdded", "FilterCreated"];

/// The payload version that holds content sealed.
pub const SEALED_VERSION: &str = "2";

/// One payload on its way into the log, sealed in place if its type carries content.
pub(crate) struct Unsealed<'a> {
    /// `post`, `thread`, ...
    pub stream_type: &'a str,
    /// The stream's id.
    pub stream_id: &'a str,
    /// The event's version in its stream.
    pub sequence: i64,
    /// Its type.
    pub event_type: &'a str,
    /// Its payload version (set to [`SEALED_VERSION`] when sealed).
    pub version: &'a mut String,
    /// cqrs-es's externally tagged payload.
    pub payload: &'a mut Value,
}

/// What sealed content is bound to (AES-GCM's associated data).
fn place(
    stream_type: &str,
    stream_id: &str,
    sequence: i64,
    event_type: &str,
    author: i64,
) -> Vec<u8> {
    format!("relations.content/{stream_type}/{stream_id}/{sequence}/{event_type}/{author}")
        .into_bytes()
}

/// The payload's inner object and its author, when it is one that carries content.
fn carrier<'p>(
    event_type: &str,
    payload: &'p mut Value,
) -> Option<(&'p mut serde_json::Map<String, Value>, Option<i64>)> {
    if !CONTENT_TYPES.contains(&event_type) {
        return None;
    }
    let data = payload.get_mut(event_type)?.as_object_mut()?;
    let author = data.get("author").and_then(Value::as_i64);
    Some((data, author))
}

/// Seals the content of every event in `events` that carries it in plain text, with its
/// author's key (made in the caller's transaction for an author who has none).
pub(crate) async fn seal(
    conn: &mut PgConnection,
    keys: &Keyring,
    events: &mut [Unsealed<'_>],
) -> Result<(), KeyError> {
    let shape = |problem| KeyError::Shape {
        event_id: uuid::Uuid::nil(),
        problem,
    };
    let mut authors = Vec::new();
    for event in events.iter_mut() {
        if let Some((data, author)) = carrier(event.event_type, event.payload) {
            if data.contains_key("content") {
                authors.push(author.ok_or_else(|| shape("content without an author"))?);
            }
        }
    }
    if authors.is_empty() {
        return Ok(());
    }
    let keys = keys.for_writing(conn, &authors).await?;
    for event in events.iter_mut() {
        let Some((data, Some(author))) = carrier(event.event_type, event.payload) else {
            continue;
        };
        let Some(content) = data.remove("content") else {
            continue;
        };
        let text = content
            .as_str()
            .ok_or_else(|| shape("content is not text"))?;
        let key = keys
            .get(&author)
            .ok_or_else(|| shape("no key for the author"))?;
        let at = place(
            event.stream_type,
            event.stream_id,
            event.sequence,
            event.event_type,
            author,
        );
        data.insert("sealed".into(), BASE64.encode(key.seal(&at, text)).into());
        *event.version = SEALED_VERSION.to_owned();
    }
    Ok(())
}

/// Brings every event of `events` that carries content to the shape readers fold: version 2
/// opened with its author's key into the event's `content` (`None`, and erased, when the key
/// is gone), version 1 as it was. Other events are left alone; an event revealed already is
/// too. The relay publishes what the log stores and never calls this.
pub async fn reveal(keys: &Keyring, events: &mut [RecordedEvent]) -> Result<(), KeyError> {
    let authors: Vec<i64> = events
        .iter()
        .filter(|e| e.sealed().is_some())
        .filter_map(author)
        .collect();
    if authors.is_empty() {
        return Ok(());
    }
    let keys = keys.for_reading(&authors).await?;
    for event in events.iter_mut() {
        let (Some(sealed), Some(author)) = (event.sealed(), author(event)) else {
            continue;
        };
        let id = event.event_id;
        let content = match keys.get(&author) {
            Some(key) => {
                let bytes = BASE64.decode(sealed).map_err(|_| KeyError::Shape {
                    event_id: id,
                    problem: "sealed content is not base64",
                })?;
                let at = place(
                    event.stream_type(),
                    &event.stream_id,
                    event.stream_version,
                    event.event_type(),
                    author,
                );
                let text = key
                    .open(&at, &bytes)
                    .map_err(|_| KeyError::Unopenable { event_id: id })?;
                Some(PostContent::try_from(text).map_err(|_| KeyError::Shape {
                    event_id: id,
                    problem: "sealed content is not a post's content",
                })?)
            }
            None => None,
        };
        event.open(content);
    }
    Ok(())
}

/// The author of an event that carries content.
fn author(event: &RecordedEvent) -> Option<i64> {
    event.event.content_author().map(|author| author.get())
}

/// Forgets the key of every user `events` erase: a reader that opened a batch opens none of an
/// erased user's content after their erasure (their key is gone from the store with it).
pub fn forget_erased(keys: &Keyring, events: &[RecordedEvent]) {
    for user in events.iter().filter_map(|e| e.event.erased_user()) {
        keys.forget(user);
    }
}

/// A batch as a projector folds it: [`revealed`], then the keys of the users it erases
/// forgotten ([`forget_erased`]).
pub async fn revealed_to_fold<'e>(
    keys: &Keyring,
    events: &'e [RecordedEvent],
) -> Result<Cow<'e, [RecordedEvent]>, KeyError> {
    let events = revealed(keys, events).await?;
    forget_erased(keys, &events);
    Ok(events)
}

/// `events` as readers fold them ([`reveal`]): borrowed as they are when none carries content
/// still to reveal, else a revealed copy.
pub async fn revealed<'e>(
    keys: &Keyring,
    events: &'e [RecordedEvent],
) -> Result<Cow<'e, [RecordedEvent]>, KeyError> {
    if !events.iter().any(|e| e.sealed().is_some()) {
        return Ok(Cow::Borrowed(events));
    }
    let mut copy = events.to_vec();
    reveal(keys, &mut copy).await?;
    Ok(Cow::Owned(copy))
}
