//! Timestamps as A2A carries them (RFC 3339, UTC), to and from milliseconds since the epoch.

use std::time::{SystemTime, UNIX_EPOCH};

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// `2026-11-25T22:01:02.345Z` (always three digits of milliseconds; a time out of the
/// calendar's range is written as the epoch).
pub(crate) fn format(ms: i64) -> String {
    let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.millisecond()
    )
}

/// Reads an RFC 3339 time (`Z` or an offset, any fraction) as milliseconds; `None` when it
/// is not one.
pub(crate) fn parse(text: &str) -> Option<i64> {
    let at = OffsetDateTime::parse(text, &Rfc3339).ok()?;
    i64::try_from(at.unix_timestamp_nanos().div_euclid(1_000_000)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_go_there_and_back() {
        for ms in [0, 1_764_108_062_345, 951_782_400_000, 4_102_444_799_999] {
            assert_eq!(parse(&format(ms)), Some(ms), "{}", format(ms));
        }
        assert_eq!(format(1_764_108_062_345), "2025-11-25T22:01:02.345Z");
        assert_eq!(
            parse("2025-11-25T23:01:02.3456+01:00"),
            Some(1_764_108_062_345)
        );
        assert_eq!(parse("2025-11-25T22:01:02Z"), Some(1_764_108_062_000));
        for bad in [
            "",
            "yesterday",
            "2025-11-25",
            "2025-13-25T22:01:02Z",
            "2025-11-25T22:01:02",
            "2025-11-25T22:01:02.Z",
            "2025-11-25T22:01:02Zjunk",
            "2025-11-25T22:01:02+0100",
            "２025-11-25T22:01:02Z",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
