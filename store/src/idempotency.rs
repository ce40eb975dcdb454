//! `Idempotency-Key`: the first answer to (actor, key) is stored in the same transaction as the
//! events it reports; a retry gets that answer back and appends nothing.
//!
//! Only successful answers are stored: a refused command rolls back with its key, so a retry
//! decides again (the refusal may no longer hold).

use serde::Serialize;
use sha2::{Digest, Sha256};
use sqlx::{PgConnection, Row};

use crate::error::StoreError;
use relations_domain::UserId;

/// Why a header value is not an idempotency key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an Idempotency-Key is 1 to 255 visible ASCII characters")]
pub struct BadIdempotencyKey;

/// A client's idempotency key: 1 to 255 visible ASCII characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    /// Parses a header value.
    pub fn parse(value: &str) -> Result<Self, BadIdempotencyKey> {
        let ok = (1..=255).contains(&value.len()) && value.bytes().all(|b| b.is_ascii_graphic());
        if ok {
            Ok(Self(value.to_owned()))
        } else {
            Err(BadIdempotencyKey)
        }
    }
}

/// A key and the fingerprint of the request it came with.
#[derive(Debug, Clone)]
pub struct Idempotency {
    key: IdempotencyKey,
    fingerprint: [u8; 32],
}

impl Idempotency {
    /// `operation` names the endpoint; `request` is the parsed request, so that two bodies that
    /// mean the same (whitespace, key order) count as the same request.
    pub fn new(key: IdempotencyKey, operation: &str, request: &impl Serialize) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(operation.as_bytes());
        hasher.update([0]);
        hasher.update(serde_json::to_vec(request).expect("a request serialises"));
        Self {
            key,
            fingerprint: hasher.finalize().into(),
        }
    }
}

/// A stored first answer.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAnswer {
    /// Its HTTP status.
    pub status: u16,
    /// Its body.
    pub body: serde_json::Value,
}

/// Takes the key for this transaction, or finds the answer already given. Waits while another
/// transaction holds the same key, so two concurrent retries never both decide.
pub(crate) async fn claim(
    conn: &mut PgConnection,
    actor: UserId,
    idem: &Idempotency,
) -> Result<Option<StoredAnswer>, StoreError> {
    let inserted = sqlx::query(
        "INSERT INTO idempotency_keys (actor, key, fingerprint, status, response)
         VALUES ($1, $2, $3, 0, 'null') ON CONFLICT DO NOTHING",
    )
    .bind(actor.get())
    .bind(&idem.key.0)
    .bind(&idem.fingerprint[..])
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if inserted == 1 {
        return Ok(None);
    }
    let row = sqlx::query(
        "SELECT fingerprint, status, response FROM idempotency_keys WHERE actor = $1 AND key = $2",
    )
    .bind(actor.get())
    .bind(&idem.key.0)
    .fetch_one(&mut *conn)
    .await?;
    let fingerprint: Vec<u8> = row.try_get("fingerprint")?;
    if fingerprint != idem.fingerprint {
        return Err(StoreError::IdempotencyKeyReused);
    }
    Ok(Some(StoredAnswer {
        status: row.try_get::<i16, _>("status")? as u16,
        body: row.try_get("response")?,
    }))
}

/// Stores the answer under the key claimed in this transaction.
pub(crate) async fn record(
    conn: &mut PgConnection,
    actor: UserId,
    idem: &Idempotency,
    status: u16,
    body: &impl Serialize,
) -> Result<(), StoreError> {
    sqlx::query(
        "UPDATE idempotency_keys SET status = $3, response = $4 WHERE actor = $1 AND key = $2",
    )
    .bind(actor.get())
    .bind(&idem.key.0)
    .bind(status as i16)
    .bind(sqlx::types::Json(body))
    .execute(&mut *conn)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_visible_ascii_up_to_255() {
        assert!(IdempotencyKey::parse("a-b_c.1").is_ok());
        assert!(IdempotencyKey::parse(&"k".repeat(255)).is_ok());
        for bad in ["", " ", "a b", "ключ", &"k".repeat(256)] {
            assert_eq!(
                IdempotencyKey::parse(bad),
                Err(BadIdempotencyKey),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn the_fingerprint_is_of_the_operation_and_the_request() {
        let key = IdempotencyKey::parse("k").unwrap();
        let a = Idempotency::new(key.clone(), "follow", &serde_json::json!({"target": 2}));
        let b = Idempotency::new(key.clone(), "follow", &serde_json::json!({"target": 2}));
        let c = Idempotency::new(key.clone(), "block", &serde_json::json!({"target": 2}));
        let d = Idempotency::new(key, "follow", &serde_json::json!({"target": 3}));
        assert_eq!(a.fingerprint, b.fingerprint);
        assert_ne!(a.fingerprint, c.fingerprint);
        assert_ne!(a.fingerprint, d.fingerprint);
    }
}
