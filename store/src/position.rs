//! A place in the global log: what an answer's `position` and a query's `min_position` carry.

use std::fmt;
use std::str::FromStr;

/// An event's place in the global log: readers visit events in `(transaction_id,
/// global_position)` order, so this pair is what a checkpoint stores and what a client's
/// read-your-writes token must encode. Written as `"{transaction_id}.{global_position}"`;
/// clients treat it as opaque.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogPosition {
    /// The writer's transaction id (`xid8`, epoch included).
    pub transaction_id: i64,
    /// The event's `global_position`.
    pub global_position: i64,
}

impl LogPosition {
    /// Before the first event.
    pub const START: LogPosition = LogPosition {
        transaction_id: 0,
        global_position: 0,
    };
}

impl fmt::Display for LogPosition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.transaction_id, self.global_position)
    }
}

/// A `position` token that this service did not issue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a log position: {0:?}")]
pub struct BadPosition(pub String);

impl FromStr for LogPosition {
    type Err = BadPosition;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadPosition(s.chars().take(64).collect());
        let (tx, pos) = s.split_once('.').ok_or_else(bad)?;
        let digits =
            |p: &str| !p.is_empty() && p.len() <= 19 && p.bytes().all(|b| b.is_ascii_digit());
        if !digits(tx) || !digits(pos) {
            return Err(bad());
        }
        Ok(Self {
            transaction_id: tx.parse().map_err(|_| bad())?,
            global_position: pos.parse().map_err(|_| bad())?,
        })
    }
}

impl serde::Serialize for LogPosition {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for LogPosition {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Decodes the columns `transaction_id` (as a bigint) and `global_position`, as every query that
/// returns a position names them.
impl sqlx::FromRow<'_, sqlx::postgres::PgRow> for LogPosition {
    fn from_row(row: &sqlx::postgres::PgRow) -> Result<Self, sqlx::Error> {
        use sqlx::Row;
        Ok(Self {
            transaction_id: row.try_get("transaction_id")?,
            global_position: row.try_get("global_position")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_orders_by_transaction_first() {
        let p = LogPosition {
            transaction_id: 812,
            global_position: 40,
        };
        assert_eq!(p.to_string().parse::<LogPosition>(), Ok(p));
        let later = LogPosition {
            transaction_id: 813,
            global_position: 2,
        };
        assert!(p < later);
        for bad in [
            "",
            "1",
            ".1",
            "1.",
            "a.b",
            "-1.2",
            "1.2.3",
            "99999999999999999999.1",
        ] {
            assert!(bad.parse::<LogPosition>().is_err(), "{bad:?}");
        }
    }
}
