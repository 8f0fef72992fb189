//! Milliseconds since the epoch as RFC 3339 (UTC).

use time::OffsetDateTime;

/// `ms` as `YYYY-MM-DDTHH:MM:SSZ` (a time out of the calendar's range as the epoch).
pub(crate) fn rfc3339(ms: u64) -> String {
    let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_764_000_000_123), "2025-11-24T16:00:00Z");
    }
}
