//! When an interrupt expires: RFC 3339 times for `expiresAt`, and whether one has passed
//! (an evicted run's interrupt expires when it is answered late).

use std::time::Duration;

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The RFC 3339 time `after` from now, for an interrupt's `expiresAt`.
pub(crate) fn deadline_after(after: Duration) -> Option<String> {
    let at = OffsetDateTime::now_utc() + after;
    at.format(&Rfc3339).ok()
}

/// Whether the RFC 3339 time `at` has passed (an unreadable one has not).
pub(crate) fn is_past(at: &str) -> bool {
    OffsetDateTime::parse(at, &Rfc3339).is_ok_and(|at| at <= OffsetDateTime::now_utc())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deadlines_read_back() {
        let soon = deadline_after(Duration::from_secs(60)).unwrap();
        assert!(!is_past(&soon));
        let gone = deadline_after(Duration::ZERO).unwrap();
        std::thread::sleep(Duration::from_millis(5));
        assert!(is_past(&gone));
        assert!(!is_past("not a time"));
    }
}
