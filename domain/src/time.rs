//! Times a client sends back inside an opaque key (a cursor): microseconds since the epoch.

use chrono::{DateTime, Utc};

/// The first microsecond of year 1 and the last of year 9999 (the years RFC 3339 writes).
const FIRST: i64 = -62_135_596_800_000_000;
const LAST: i64 = 253_402_300_799_999_999;

/// The time `micros` microseconds after the epoch, clamped to years 1 to 9999. Every time the
/// service holds is inside them, so a key beyond either end pages exactly as one at that end
/// does (nothing, or everything, lies beyond it); PostgreSQL, whose times end at 4713 BC,
/// would refuse some of them.
pub fn from_key_micros(micros: i64) -> DateTime<Utc> {
    DateTime::<Utc>::from_timestamp_micros(micros.clamp(FIRST, LAST))
        .expect("years 1 to 9999 are times")
}

#[cfg(test)]
mod tests {
    use chrono::Datelike;

    use super::*;

    #[test]
    fn keys_hold_the_years_rfc_3339_writes_and_clamp_the_rest() {
        let at = from_key_micros(1_700_000_000_123_456);
        assert_eq!(at.timestamp_micros(), 1_700_000_000_123_456);
        assert_eq!(from_key_micros(FIRST).year(), 1);
        assert_eq!(from_key_micros(LAST).year(), 9999);
        assert_eq!(from_key_micros(i64::MIN), from_key_micros(FIRST));
        assert_eq!(
            from_key_micros(-219_757_733_932_122_220),
            from_key_micros(FIRST)
        );
        assert_eq!(from_key_micros(i64::MAX), from_key_micros(LAST));
        assert_eq!(from_key_micros(LAST + 1), from_key_micros(LAST));
    }
}
