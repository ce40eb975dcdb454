//! Paging, shared by every list: [`Page`] (`limit`, a typed `cursor`, `min_position`), the one
//! [`Cursor`] type, generic over the key a read model pages on, and `limit`'s and `offset`'s
//! ranges. Each key keeps its own format on the wire; all are parsed here.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use chrono::{DateTime, Utc};
use relations_projections::engagement::query::{BookmarkKey, CommentKey};
use relations_store::LogPosition;
use serde::{Deserialize, Deserializer};
use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::Required;
use utoipa::IntoParams;

use crate::error::ApiError;
use crate::extract::ApiQuery;

/// `limit`: default 20, 1 to 100.
pub fn limit(limit: Option<i64>) -> Result<i64, ApiError> {
    limit_within(limit, 20, 100)
}

/// `limit`: `default` when absent, else 1 to `max`.
pub fn limit_within(limit: Option<i64>, default: i64, max: i64) -> Result<i64, ApiError> {
    match limit {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(n) => Err(ApiError::InvalidInput(format!(
            "limit must be 1 to {max}, got {n}"
        ))),
    }
}

/// `offset`: default 0, not negative, at most 100 000 (deeper pages use cursors).
pub fn offset(offset: Option<i64>) -> Result<i64, ApiError> {
    match offset {
        None => Ok(0),
        Some(n) if (0..=100_000).contains(&n) => Ok(n),
        Some(n) => Err(ApiError::InvalidInput(format!(
            "offset must be 0 to 100000, got {n}"
        ))),
    }
}

/// A key a list pages on, and its format on the wire (opaque to clients).
pub trait CursorKey: Sized {
    /// The format, as the contract states it.
    const PATTERN: &'static str;
    /// Reads a client's cursor.
    fn decode(raw: &str) -> Option<Self>;
    /// Writes the cursor a client sends back.
    fn encode(&self) -> String;
}

/// A search-after key `(since, id)` of a user list, newest first.
pub type SinceKey = (DateTime<Utc>, i64);

/// A follower change's key: its time and log position.
pub type ChangeKey = (DateTime<Utc>, LogPosition);

/// A search-after key `(since, id)`, newest first: `"{since µs}.{id}"`.
impl CursorKey for SinceKey {
    const PATTERN: &'static str = r"^-?[0-9]{1,18}\.[0-9]{1,18}$";

    fn decode(raw: &str) -> Option<Self> {
        let (micros, id) = raw.split_once('.')?;
        let since = relations_domain::time::from_key_micros(micros.parse().ok()?);
        Some((since, id.parse().ok()?))
    }

    fn encode(&self) -> String {
        format!("{}.{}", self.0.timestamp_micros(), self.1)
    }
}

/// A follower change's key: `"{at µs}.{tx}.{gp}"`, its time and log position.
impl CursorKey for ChangeKey {
    const PATTERN: &'static str = r"^-?[0-9]{1,18}\.[0-9]{1,18}\.[0-9]{1,18}$";

    fn decode(raw: &str) -> Option<Self> {
        let mut parts = raw.splitn(3, '.').map(|p| p.parse::<i64>().ok());
        let (micros, tx, gp) = (parts.next()??, parts.next()??, parts.next()??);
        let at = relations_domain::time::from_key_micros(micros);
        let position = LogPosition {
            transaction_id: tx,
            global_position: gp,
        };
        Some((at, position))
    }

    fn encode(&self) -> String {
        format!("{}.{}", self.0.timestamp_micros(), self.1)
    }
}

/// A comment's place in its list: `"{pinned 0|1}.{likes}.{µs}.{n}"`.
impl CursorKey for CommentKey {
    const PATTERN: &'static str = r"^[01]\.-?[0-9]{1,18}\.-?[0-9]{1,18}\.[0-9]{1,9}$";

    fn decode(raw: &str) -> Option<Self> {
        raw.parse().ok()
    }

    fn encode(&self) -> String {
        self.to_string()
    }
}

/// A bookmark's place in its user's bookmarks (issue 46): `"{since µs}.{post id}"`.
impl CursorKey for BookmarkKey {
    const PATTERN: &'static str = r"^-?[0-9]{1,18}\.[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";

    fn decode(raw: &str) -> Option<Self> {
        let (micros, post) = raw.split_once('.')?;
        let since = relations_domain::time::from_key_micros(micros.parse().ok()?);
        Some((since, post.parse().ok()?))
    }

    fn encode(&self) -> String {
        format!("{}.{}", self.0.timestamp_micros(), self.1)
    }
}

/// A post's place in a feed or a timeline (its seq, seed 003): a positive decimal number.
impl CursorKey for i64 {
    const PATTERN: &'static str = r"^[1-9][0-9]{0,17}$";

    fn decode(raw: &str) -> Option<Self> {
        let digits = !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit());
        raw.parse().ok().filter(|&seq| seq > 0 && digits)
    }

    fn encode(&self) -> String {
        self.to_string()
    }
}

/// A client's cursor: the previous page's `next_cursor`, read as key `K`; anything else is
/// 400 `INVALID_INPUT` ("malformed cursor").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor<K>(pub K);

impl<'de, K: CursorKey> Deserialize<'de> for Cursor<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        K::decode(&raw)
            .map(Self)
            .ok_or_else(|| serde::de::Error::custom("malformed cursor"))
    }
}

/// The parameters of a query that takes `min_position` alone.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct MinPosition {
    /// Read-your-writes: a command answer's `position`.
    #[param(value_type = Option<String>, pattern = r"^[0-9]{1,18}\.[0-9]{1,18}$")]
    pub min_position: Option<LogPosition>,
}

/// One page of a cursor-paged list: `limit`, `cursor` (after which key), `min_position`.
#[derive(Debug)]
pub struct Page<K> {
    /// Items per page: default 20, 1 to 100.
    pub limit: i64,
    /// The key after which the page starts; none for the first page.
    pub after: Option<K>,
    /// Read-your-writes: the answer reflects at least the log up to here.
    pub min_position: Option<LogPosition>,
}

impl<K: CursorKey> Page<K> {
    /// How many rows to read: one more than the page, to learn whether another page follows.
    pub fn probe(&self) -> i64 {
        self.limit + 1
    }

    /// Cuts `rows` (read with [`Page::probe`]) to the page; the cursor after it when more
    /// follow.
    pub fn cut<T>(&self, rows: &mut Vec<T>, key: impl Fn(&T) -> K) -> Option<String> {
        let more = rows.len() as i64 > self.limit;
        rows.truncate(self.limit as usize);
        more.then(|| rows.last().map(|row| key(row).encode()))
            .flatten()
    }
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "K: CursorKey"))]
struct RawPage<K> {
    cursor: Option<Cursor<K>>,
    limit: Option<i64>,
    min_position: Option<LogPosition>,
}

impl<S: Send + Sync, K: CursorKey> FromRequestParts<S> for Page<K> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let ApiQuery(raw) = ApiQuery::<RawPage<K>>::from_request_parts(parts, state).await?;
        Ok(Self {
            limit: limit(raw.limit)?,
            after: raw.cursor.map(|c| c.0),
            min_position: raw.min_position,
        })
    }
}

impl<K: CursorKey> IntoParams for Page<K> {
    fn into_params(_: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let cursor = ObjectBuilder::new()
            .schema_type(Type::String)
            .pattern(Some(K::PATTERN));
        let limit = ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(1))
            .maximum(Some(100));
        vec![
            query_param("cursor", "The previous page's `next_cursor`.", cursor),
            query_param("limit", "Items per page: default 20, at most 100.", limit),
            min_position_param(),
        ]
    }
}

/// The `min_position` query parameter every read takes.
pub fn min_position_param() -> Parameter {
    let schema = ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(r"^[0-9]{1,18}\.[0-9]{1,18}$"));
    query_param(
        "min_position",
        "Read-your-writes: a command answer's `position`.",
        schema,
    )
}

fn query_param(name: &str, description: &str, schema: ObjectBuilder) -> Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Query)
        .description(Some(description))
        .required(Required::False)
        .schema(Some(schema))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip<K: CursorKey>(raw: &str) -> Option<String> {
        K::decode(raw).map(|k| k.encode())
    }

    #[test]
    fn each_key_keeps_its_wire_format() {
        type Since = (DateTime<Utc>, i64);
        type Change = (DateTime<Utc>, LogPosition);
        assert_eq!(
            round_trip::<Since>("1700000000000000.7").as_deref(),
            Some("1700000000000000.7")
        );
        assert_eq!(round_trip::<Since>("7"), None);
        assert_eq!(round_trip::<Change>("5.1.2").as_deref(), Some("5.1.2"));
        assert_eq!(round_trip::<Change>("5.1"), None);
        assert_eq!(round_trip::<i64>("42").as_deref(), Some("42"));
        let bookmark = "1700000000000000.0190f5a2-7b6c-7def-8123-456789abcdef";
        assert_eq!(
            round_trip::<BookmarkKey>(bookmark).as_deref(),
            Some(bookmark)
        );
        for bad in [
            "1700000000000000",
            "1.x",
            "x.0190f5a2-7b6c-7def-8123-456789abcdef",
        ] {
            assert_eq!(round_trip::<BookmarkKey>(bad), None, "{bad:?}");
        }
        for bad in ["0", "-1", "+1", "", "x"] {
            assert_eq!(round_trip::<i64>(bad), None, "{bad:?}");
        }
    }
}
