//! When and how long to wait before trying a request again.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::error::LlmError;

/// Exponential backoff with jitter and a maximum number of retries. A wait the provider asks
/// for (`retry-after`, `retry-after-ms`, rate-limit reset headers) replaces the computed
/// backoff; a wait longer than `max_retry_after` is not waited for: the error is returned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (0 disables retrying).
    pub max_retries: u32,
    /// The first backoff.
    pub initial_backoff: Duration,
    /// The largest computed backoff.
    pub max_backoff: Duration,
    /// The longest provider-requested wait that is honoured.
    pub max_retry_after: Duration,
    /// Randomize each backoff between half and all of its value.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The default policy with `max_retries` retries.
    pub fn with_max_retries(max_retries: u32) -> Self {
        Self {
            max_retries,
            ..Self::default()
        }
    }

    /// The wait before retry number `retry` (0-based), or `None` when no retry is left or the
    /// provider asked for a longer wait than [`RetryPolicy::max_retry_after`].
    pub fn delay(&self, retry: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if retry >= self.max_retries {
            return None;
        }
        if let Some(after) = retry_after {
            return (after <= self.max_retry_after).then_some(after);
        }
        let factor = 2u32.saturating_pow(retry.min(16));
        let base = self
            .initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff);
        if self.jitter {
            let half = base / 2;
            Some(half + half.mul_f64(fastrand::f64()))
        } else {
            Some(base)
        }
    }
}

/// A failed attempt that will be tried again, as told to [`OnRetry`].
#[derive(Clone, Copy, Debug)]
pub struct RetryNotice<'a> {
    /// The attempt that failed (1 for the first).
    pub attempt: u32,
    /// The wait before the next attempt.
    pub delay: Duration,
    /// Why the attempt failed.
    pub error: &'a LlmError,
}

/// Called before each retry of a request, so a face can show "retrying in 2 s" instead of
/// a silent pause. Set it with [`Request::on_retry`](crate::Request::on_retry).
#[derive(Clone)]
pub struct OnRetry(Arc<dyn Fn(RetryNotice<'_>) + Send + Sync>);

impl OnRetry {
    /// Wraps a callback. It runs on the request's task: keep it short and never block.
    pub fn new(callback: impl Fn(RetryNotice<'_>) + Send + Sync + 'static) -> Self {
        Self(Arc::new(callback))
    }

    /// Tells the callback about a retry.
    pub fn notify(&self, notice: RetryNotice<'_>) {
        (self.0)(notice)
    }
}

impl fmt::Debug for OnRetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("OnRetry(..)")
    }
}

/// Two callbacks are equal when they are the same one.
impl PartialEq for OnRetry {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// Reads the wait a provider asked for from response headers: `retry-after-ms`, then
/// `retry-after` (seconds or an HTTP date), then the earliest of Anthropic's
/// `anthropic-ratelimit-*-reset` (RFC 3339) and OpenAI's `x-ratelimit-reset-*` (`1s`, `6m0s`,
/// `20ms`) headers. `header` looks a header up by lowercase name.
pub fn retry_after_from_headers<'a>(header: impl Fn(&str) -> Option<&'a str>) -> Option<Duration> {
    let non_negative = |v: &f64| v.is_finite() && *v >= 0.0;
    if let Some(ms) = header("retry-after-ms")
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(non_negative)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    if let Some(value) = header("retry-after") {
        let value = value.trim();
        if let Some(secs) = value.parse::<f64>().ok().filter(non_negative) {
            return Some(Duration::from_secs_f64(secs));
        }
        if let Some(at) = parse_http_date(value) {
            return Some(
                at.duration_since(SystemTime::now())
                    .unwrap_or(Duration::ZERO),
            );
        }
    }
    let mut earliest: Option<Duration> = None;
    let mut keep = |d: Duration| earliest = Some(earliest.map_or(d, |e| e.min(d)));
    for name in [
        "anthropic-ratelimit-requests-reset",
        "anthropic-ratelimit-tokens-reset",
        "anthropic-ratelimit-input-tokens-reset",
        "anthropic-ratelimit-output-tokens-reset",
    ] {
        if let Some(at) = header(name).and_then(parse_rfc3339) {
            keep(
                at.duration_since(SystemTime::now())
                    .unwrap_or(Duration::ZERO),
            );
        }
    }
    for name in ["x-ratelimit-reset-requests", "x-ratelimit-reset-tokens"] {
        if let Some(d) = header(name).and_then(parse_go_duration) {
            keep(d);
        }
    }
    earliest
}

/// Parses OpenAI's reset durations: `1s`, `6m0s`, `20ms`, `1h2m3.5s`.
pub fn parse_go_duration(text: &str) -> Option<Duration> {
    let mut rest = text.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let split = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..split].parse().ok()?;
        rest = &rest[split..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            "us" | "µs" => 0.000_001,
            "ns" => 0.000_000_001,
            _ => return None,
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    Some(Duration::from_secs_f64(total))
}

/// Parses an RFC 3339 time (`2025-01-02T03:04:05Z`, with a fraction or an offset).
fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let at =
        time::OffsetDateTime::parse(text.trim(), &time::format_description::well_known::Rfc3339)
            .ok()?;
    Some(SystemTime::from(at))
}

/// Parses an HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT`, or the obsolete forms HTTP allows).
fn parse_http_date(text: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(text.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<&'a str> {
        move |name| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
    }

    #[test]
    fn retry_after_headers_are_read_in_order() {
        assert_eq!(
            retry_after_from_headers(headers(&[("retry-after-ms", "250")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after_from_headers(headers(&[("retry-after", "2")])),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after_from_headers(headers(&[("retry-after", "7"), ("retry-after-ms", "10")])),
            Some(Duration::from_millis(10))
        );
        assert_eq!(
            retry_after_from_headers(headers(&[
                ("x-ratelimit-reset-requests", "6m0s"),
                ("x-ratelimit-reset-tokens", "20ms")
            ])),
            Some(Duration::from_millis(20))
        );
        assert_eq!(
            retry_after_from_headers(headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")])),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after_from_headers(headers(&[(
                "anthropic-ratelimit-requests-reset",
                "2020-01-01T00:00:00Z"
            )])),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after_from_headers(headers(&[])), None);
    }

    #[test]
    fn dates_parse_to_the_right_instant() {
        let at = parse_http_date("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        assert_eq!(
            at.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(),
            1_445_412_480
        );
        let at = parse_rfc3339("2015-10-21T07:28:00Z").unwrap();
        assert_eq!(
            at.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs(),
            1_445_412_480
        );
    }

    #[test]
    fn backoff_grows_is_capped_and_stops() {
        let policy = RetryPolicy {
            jitter: false,
            max_retries: 5,
            ..RetryPolicy::default()
        };
        assert_eq!(policy.delay(0, None), Some(Duration::from_millis(500)));
        assert_eq!(policy.delay(1, None), Some(Duration::from_secs(1)));
        assert_eq!(policy.delay(4, None), Some(Duration::from_secs(8)));
        assert_eq!(policy.delay(5, None), None);
        assert_eq!(
            policy.delay(0, Some(Duration::from_secs(3))),
            Some(Duration::from_secs(3))
        );
        assert_eq!(policy.delay(0, Some(Duration::from_secs(3600))), None);
    }

    #[test]
    fn jitter_stays_within_half_and_full() {
        let policy = RetryPolicy::with_max_retries(3);
        for _ in 0..100 {
            let d = policy.delay(1, None).unwrap();
            assert!(d >= Duration::from_millis(500) && d <= Duration::from_secs(1));
        }
    }
}
