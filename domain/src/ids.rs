//! Identifiers: parsed once at the edge, trusted everywhere after.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// An id the service makes, a UUID (version 7), shown hyphenated: the type `$name`, and
/// `$bad`, what parsing anything else gives (`$what` its message). A list's and a filter's.
macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident, $bad:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash,
            serde::Serialize, serde::Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(uuid::Uuid);

        impl $name {
            /// Wraps a UUID the caller made.
            pub fn from_uuid(id: uuid::Uuid) -> Self {
                Self(id)
            }

            /// The UUID, as PostgreSQL stores it.
            pub fn uuid(self) -> uuid::Uuid {
                self.0
            }
        }

        #[doc = concat!("A string that is not ", $what, ".")]
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $bad;

        impl std::fmt::Display for $bad {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(concat!("not ", $what))
            }
        }

        impl std::error::Error for $bad {}

        impl std::str::FromStr for $name {
            type Err = $bad;

            /// Only the hyphenated form the API hands out.
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                if s.len() != 36 {
                    return Err($bad);
                }
                uuid::Uuid::try_parse(s).map(Self).map_err(|_| $bad)
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.hyphenated().fmt(f)
            }
        }
    };
}
pub(crate) use uuid_id;

/// Whether `text` is a short text a user names something with (a list's title, a filter's
/// phrase): 1 to `max` characters, none of them NUL (PostgreSQL's `text` holds none).
pub(crate) fn short_text(text: &str, max: usize) -> bool {
    let chars = text.chars().count();
    chars != 0 && chars <= max && !text.contains('\0')
}

/// Why a value is not a valid user id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UserIdError {
    /// Zero or negative.
    #[error("a user id is a positive integer, got {0}")]
    NotPositive(i64),
    /// Not a decimal integer, or larger than 2^63 - 1.
    #[error("a user id is a positive integer below 2^63, got {0:?}")]
    Malformed(String),
}

/// A user: a positive 64-bit integer that fits PostgreSQL's `bigint` (1 ..= 2^63 - 1).
///
/// The service does not own profiles; a user exists as soon as an id is named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "i64", into = "i64")]
pub struct UserId(i64);

/// A JSON number that is an integer in `i64`'s range, however it is written: `7`, or `7.0`
/// (JSON Schema's `integer` admits both). Fractions and out-of-range values are refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Integral(pub i64);

impl<'de> Deserialize<'de> for Integral {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Integral;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an integer")
            }

            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Integral, E> {
                Ok(Integral(v))
            }

            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Integral, E> {
                i64::try_from(v)
                    .map(Integral)
                    .map_err(|_| E::custom(format!("{v} is out of range")))
            }

            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Integral, E> {
                // Both ends are open: i64::MAX as f64 is 2^63 (out of range), and a float equal
                // to -2^63 may be a rounded value below i64::MIN.
                if v.fract() == 0.0 && v > i64::MIN as f64 && v < i64::MAX as f64 {
                    Ok(Integral(v as i64))
                } else {
                    Err(E::custom(format!("{v} is not an integer in range")))
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// Deserializes an `i64` field of a JSON body written as any integral JSON number (see
/// [`Integral`]).
pub fn integral<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    Integral::deserialize(deserializer).map(|i| i.0)
}

/// [`integral`] for an optional field (null or absent: `None`; with `#[serde(default)]`).
pub fn optional_integral<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<i64>, D::Error> {
    Option::<Integral>::deserialize(deserializer).map(|v| v.map(|v| v.0))
}

/// Deserializes a [`UserId`] field of a JSON body written as any integral JSON number (query
/// strings use `UserId`'s own `Deserialize`, which reads their text).
pub fn integral_user<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<UserId, D::Error> {
    let value = integral(deserializer)?;
    UserId::try_from(value).map_err(serde::de::Error::custom)
}

/// An `int64` of at least 1: what [`UserId`] accepts, said in the schema.
#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for UserId {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(1))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for UserId {}

impl UserId {
    /// The id as PostgreSQL stores it.
    pub fn get(self) -> i64 {
        self.0
    }
}

impl TryFrom<i64> for UserId {
    type Error = UserIdError;

    fn try_from(value: i64) -> Result<Self, Self::Error> {
        if value > 0 {
            Ok(Self(value))
        } else {
            Err(UserIdError::NotPositive(value))
        }
    }
}

impl From<UserId> for i64 {
    fn from(id: UserId) -> Self {
        id.0
    }
}

impl FromStr for UserId {
    type Err = UserIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // Only plain decimal digits: no sign, no whitespace, no leading '+'.
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(UserIdError::Malformed(s.to_owned()));
        }
        let value: i64 = s
            .parse()
            .map_err(|_| UserIdError::Malformed(s.to_owned()))?;
        Self::try_from(value)
    }
}

impl fmt::Display for UserId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// Two distinct users, unordered: the identity of the stream that holds every follow and
/// block fact between them. `low < high` always.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PairId {
    low: UserId,
    high: UserId,
}

/// A relation between a user and themselves was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a user has no relation with themselves")]
pub struct SelfRelation;

impl PairId {
    /// The pair of `a` and `b`, in either order; `a == b` is refused (rule 1).
    pub fn new(a: UserId, b: UserId) -> Result<Self, SelfRelation> {
        match a.cmp(&b) {
            std::cmp::Ordering::Less => Ok(Self { low: a, high: b }),
            std::cmp::Ordering::Greater => Ok(Self { low: b, high: a }),
            std::cmp::Ordering::Equal => Err(SelfRelation),
        }
    }

    /// The smaller id.
    pub fn low(self) -> UserId {
        self.low
    }

    /// The larger id.
    pub fn high(self) -> UserId {
        self.high
    }

    /// The other user of the pair, if `user` is one of the two.
    pub fn other(self, user: UserId) -> Option<UserId> {
        match user {
            u if u == self.low => Some(self.high),
            u if u == self.high => Some(self.low),
            _ => None,
        }
    }

    /// The stream id in the event store: `"{low}:{high}"`.
    pub fn stream_id(self) -> String {
        format!("{}:{}", self.low, self.high)
    }
}

impl FromStr for PairId {
    type Err = UserIdError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (a, b) = s
            .split_once(':')
            .ok_or_else(|| UserIdError::Malformed(s.to_owned()))?;
        let (a, b) = (a.parse()?, b.parse()?);
        PairId::new(a, b).map_err(|_| UserIdError::Malformed(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_ids_are_positive_and_fit_bigint() {
        assert_eq!(UserId::try_from(1).unwrap().get(), 1);
        assert_eq!(UserId::try_from(0), Err(UserIdError::NotPositive(0)));
        assert_eq!(UserId::try_from(-7), Err(UserIdError::NotPositive(-7)));
        assert_eq!(
            "9223372036854775807".parse::<UserId>().unwrap().get(),
            i64::MAX
        );
        for bad in [
            "",
            "0",
            "-1",
            "+1",
            " 1",
            "1.0",
            "9223372036854775808",
            "abc",
        ] {
            assert!(bad.parse::<UserId>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn user_ids_deserialize_only_from_positive_json_integers() {
        assert_eq!(
            serde_json::from_str::<UserId>("42").unwrap(),
            UserId::try_from(42).unwrap()
        );
        for bad in [
            "0",
            "-1",
            "1.5",
            "\"42\"",
            "18446744073709551616",
            "null",
            "1e3",
        ] {
            assert!(serde_json::from_str::<UserId>(bad).is_err(), "{bad} parsed");
        }
    }

    #[test]
    fn an_integral_float_below_2_pow_53_reads_exactly() {
        // serde_json's default float parser may miss by one ulp (2067777880556271.0 read as
        // ...271.25 and refused as not integral): the workspace enables `float_roundtrip`.
        let read = |text: &str| {
            let mut de = serde_json::Deserializer::from_str(text);
            integral_user(&mut de).map(UserId::get)
        };
        assert_eq!(read("2067777880556271.0").unwrap(), 2_067_777_880_556_271);
        assert_eq!(read("5833718113939244.0").unwrap(), 5_833_718_113_939_244);
        assert!(read("2.5").is_err());
    }

    #[test]
    fn a_pair_is_unordered_and_never_self() {
        let (a, b) = (UserId(3), UserId(9));
        assert_eq!(PairId::new(a, b), PairId::new(b, a));
        assert_eq!(PairId::new(a, b).unwrap().stream_id(), "3:9");
        assert_eq!(PairId::new(a, a), Err(SelfRelation));
        assert_eq!("3:9".parse::<PairId>().unwrap(), PairId::new(a, b).unwrap());
        assert!("3:3".parse::<PairId>().is_err());
    }
}
