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

impl Idempotency {
    /// The key of part `n` of a request made of several commands (a CSV import's lines):
    /// `"{key}#{n}"`, bound to the whole request and to `n`. A retry of the whole request
    /// replays every part; the same key with another request is reused on every part.
    pub fn part(&self, n: usize) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(self.fingerprint);
        hasher.update(n.to_be_bytes());
        Self {
            key: IdempotencyKey(format!("{}#{n}", self.key.0)),
            fingerprint: hasher.finalize().into(),
        }
    }
}

/// A first answer as its caller gave it, kept to be given again as it is (the store never reads
/// it).
#[derive(Debug, Clone, PartialEq)]
pub struct StoredAnswer {
    /// The caller's code for the kind of answer (the API keeps its HTTP status here; the store
    /// never reads it). Kept in the column `idempotency_keys.status`, named before the store
    /// stopped knowing what the code means; a landed migration is never edited, and renaming
    /// a column for its name alone is not worth one.
    pub code: u16,
    /// Its body.
    pub body: serde_json::Value,
}

/// A key to claim: whose, and the request it came with.
pub(crate) struct Claim<'a> {
    /// The user the key belongs to.
    pub actor: UserId,
    /// The key and fingerprint.
    pub idem: &'a Idempotency,
}

/// What a claim found.
#[derive(Debug)]
pub(crate) enum Claimed {
    /// The key is this transaction's: decide, then [`record`] the answer or [`release`] it.
    New,
    /// The key was used before with this request: its first answer.
    Answered(StoredAnswer),
    /// The key was used before with another request.
    Reused,
}

/// Takes each key for this transaction, or finds the answer already given; in one statement
/// (plus one read when some keys were taken before). Keys are taken in (actor, key) order, so
/// two transactions claiming overlapping keys never deadlock; a key another transaction holds
/// is waited for, so two concurrent retries never both decide. Each key appears at most once.
pub(crate) async fn claim(
    conn: &mut PgConnection,
    claims: &[Claim<'_>],
) -> Result<Vec<Claimed>, StoreError> {
    if claims.is_empty() {
        return Ok(Vec::new());
    }
    let actors: Vec<i64> = claims.iter().map(|c| c.actor.get()).collect();
    let keys: Vec<&str> = claims.iter().map(|c| c.idem.key.0.as_str()).collect();
    let prints: Vec<&[u8]> = claims.iter().map(|c| &c.idem.fingerprint[..]).collect();
    let taken: Vec<(i64, String)> = sqlx::query_as(
        "INSERT INTO idempotency_keys (actor, key, fingerprint, status, response)
         SELECT a, k, f, 0, 'null' FROM unnest($1::bigint[], $2::text[], $3::bytea[]) AS x(a, k, f)
          ORDER BY a, k
         ON CONFLICT DO NOTHING RETURNING actor, key",
    )
    .bind(&actors)
    .bind(&keys)
    .bind(&prints)
    .fetch_all(&mut *conn)
    .await?;
    let taken: std::collections::HashSet<(i64, String)> = taken.into_iter().collect();
    let mut found = std::collections::HashMap::new();
    if taken.len() < claims.len() {
        let rows = sqlx::query(
            "SELECT k.actor, k.key, k.fingerprint, k.status, k.response
               FROM idempotency_keys k JOIN unnest($1::bigint[], $2::text[]) AS x(a, kk)
                 ON k.actor = x.a AND k.key = x.kk",
        )
        .bind(&actors)
        .bind(&keys)
        .fetch_all(&mut *conn)
        .await?;
        for row in rows {
            let id: (i64, String) = (row.try_get("actor")?, row.try_get("key")?);
            let fingerprint: Vec<u8> = row.try_get("fingerprint")?;
            let answer = StoredAnswer {
                code: row.try_get::<i16, _>("status")? as u16,
                body: row.try_get("response")?,
            };
            found.insert(id, (fingerprint, answer));
        }
    }
    Ok(claims
        .iter()
        .map(|c| {
            let id = (c.actor.get(), c.idem.key.0.clone());
            if taken.contains(&id) {
                return Claimed::New;
            }
            match found.remove(&id) {
                Some((print, answer)) if print == c.idem.fingerprint => Claimed::Answered(answer),
                _ => Claimed::Reused,
            }
        })
        .collect())
}

/// An answer to store under a key claimed in this transaction.
pub(crate) struct Record<'a> {
    /// The key's owner.
    pub actor: UserId,
    /// The key.
    pub idem: &'a Idempotency,
    /// The answer.
    pub answer: StoredAnswer,
}

/// Stores the answers under the keys claimed in this transaction, in one statement.
pub(crate) async fn record(
    conn: &mut PgConnection,
    records: &[Record<'_>],
) -> Result<(), StoreError> {
    if records.is_empty() {
        return Ok(());
    }
    let actors: Vec<i64> = records.iter().map(|r| r.actor.get()).collect();
    let keys: Vec<&str> = records.iter().map(|r| r.idem.key.0.as_str()).collect();
    let codes: Vec<i16> = records.iter().map(|r| r.answer.code as i16).collect();
    let bodies: Vec<serde_json::Value> = records.iter().map(|r| r.answer.body.clone()).collect();
    sqlx::query(
        "UPDATE idempotency_keys k SET status = x.s, response = x.r
           FROM unnest($1::bigint[], $2::text[], $3::int2[], $4::jsonb[]) AS x(a, kk, s, r)
          WHERE k.actor = x.a AND k.key = x.kk",
    )
    .bind(&actors)
    .bind(&keys)
    .bind(&codes)
    .bind(&bodies)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Gives back keys claimed in this transaction whose commands were refused: only successful
/// answers are stored, so a retry decides again.
pub(crate) async fn release(
    conn: &mut PgConnection,
    claims: &[Claim<'_>],
) -> Result<(), StoreError> {
    if claims.is_empty() {
        return Ok(());
    }
    let actors: Vec<i64> = claims.iter().map(|c| c.actor.get()).collect();
    let keys: Vec<&str> = claims.iter().map(|c| c.idem.key.0.as_str()).collect();
    sqlx::query(
        "DELETE FROM idempotency_keys k USING unnest($1::bigint[], $2::text[]) AS x(a, kk)
          WHERE k.actor = x.a AND k.key = x.kk",
    )
    .bind(&actors)
    .bind(&keys)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// What a key holds for a request made of several commands (a CSV import), whose parts are
/// each keyed with [`Idempotency::part`] and whose whole answer is kept under the key itself.
#[derive(Debug, Clone, PartialEq)]
pub enum Prior {
    /// Unused: run the request.
    Unused,
    /// Answered before, to this request: give the answer again.
    Answered(StoredAnswer),
    /// Used before with another request.
    Reused,
}

/// What `actor`'s key `idem` holds (see [`Prior`]).
pub async fn prior(
    pool: &sqlx::PgPool,
    actor: UserId,
    idem: &Idempotency,
) -> Result<Prior, StoreError> {
    let row = sqlx::query(
        "SELECT fingerprint, status, response FROM idempotency_keys WHERE actor = $1 AND key = $2",
    )
    .bind(actor.get())
    .bind(&idem.key.0)
    .fetch_optional(pool)
    .await?;
    let Some(row) = row else {
        return Ok(Prior::Unused);
    };
    let fingerprint: Vec<u8> = row.try_get("fingerprint")?;
    if fingerprint != idem.fingerprint {
        return Ok(Prior::Reused);
    }
    Ok(Prior::Answered(StoredAnswer {
        code: row.try_get::<i16, _>("status")? as u16,
        body: row.try_get("response")?,
    }))
}

/// Keeps the whole answer of a request made of several commands under its key; when a
/// concurrent retry kept one first, that one stands and is returned.
pub async fn keep(
    pool: &sqlx::PgPool,
    actor: UserId,
    idem: &Idempotency,
    answer: StoredAnswer,
) -> Result<StoredAnswer, StoreError> {
    let kept = sqlx::query(
        "INSERT INTO idempotency_keys (actor, key, fingerprint, status, response)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
    )
    .bind(actor.get())
    .bind(&idem.key.0)
    .bind(&idem.fingerprint[..])
    .bind(answer.code as i16)
    .bind(&answer.body)
    .execute(pool)
    .await?;
    if kept.rows_affected() == 1 {
        return Ok(answer);
    }
    match prior(pool, actor, idem).await? {
        Prior::Answered(first) => Ok(first),
        Prior::Reused | Prior::Unused => Err(StoreError::IdempotencyKeyReused),
    }
}

/// The identity of a key: its owner and its text.
pub(crate) fn key_of(actor: UserId, idem: &Idempotency) -> (i64, &str) {
    (actor.get(), idem.key.0.as_str())
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
