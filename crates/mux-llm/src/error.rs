//! Typed errors: the provider named once, what went wrong as a [`LlmFailure`]; none ever
//! carries an API key.

use std::time::Duration;

/// Which wait ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeoutPhase {
    /// Opening the connection.
    Connect,
    /// Waiting for the response (headers, or the whole body when not streaming).
    Request,
    /// Waiting for the next chunk of a stream.
    Idle,
}

impl TimeoutPhase {
    fn as_str(self) -> &'static str {
        match self {
            Self::Connect => "connecting",
            Self::Request => "waiting for the response",
            Self::Idle => "waiting for the next stream chunk",
        }
    }
}

/// An error from a model provider: the provider, named once, and what went wrong.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{provider}: {failure}")]
pub struct LlmError {
    /// The provider (`anthropic`, `openai`, a fallback chain's member, ...).
    pub provider: String,
    /// What went wrong.
    pub failure: LlmFailure,
}

/// What went wrong in an [`LlmError`].
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum LlmFailure {
    /// The API key is missing or wrong (401).
    #[error("authentication failed (HTTP {status}): {message}")]
    Authentication {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The key may not do this (403).
    #[error("permission denied (HTTP {status}): {message}")]
    PermissionDenied {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The endpoint or model does not exist (404).
    #[error("not found (HTTP {status}; unknown model or endpoint?): {message}")]
    NotFound {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// Too many requests (429).
    #[error("rate limited (HTTP {status}){}: {message}", retry_hint(.retry_after))]
    RateLimited {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
        /// How long the provider asked to wait.
        retry_after: Option<Duration>,
    },
    /// The provider is overloaded (Anthropic's 529, or an `overloaded_error` in a stream).
    #[error("overloaded (HTTP {status}){}: {message}", retry_hint(.retry_after))]
    Overloaded {
        /// The HTTP status (529; 0 when reported inside a stream).
        status: u16,
        /// The provider's message.
        message: String,
        /// How long the provider asked to wait.
        retry_after: Option<Duration>,
    },
    /// The prompt does not fit the model's context window.
    #[error("context length exceeded (HTTP {status}): {message}")]
    ContextLength {
        /// The HTTP status.
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The provider rejected the request.
    #[error("invalid request (HTTP {status}): {message}")]
    InvalidRequest {
        /// The HTTP status (0 when reported inside a stream).
        status: u16,
        /// The provider's message.
        message: String,
    },
    /// The provider failed (5xx, or an `api_error` inside a stream).
    #[error("server error (HTTP {status}): {message}")]
    Server {
        /// The HTTP status (0 when reported inside a stream).
        status: u16,
        /// The provider's message.
        message: String,
        /// How long the provider asked to wait.
        retry_after: Option<Duration>,
    },
    /// The connection failed or broke.
    #[error("transport error: {message}")]
    Transport {
        /// What happened.
        message: String,
    },
    /// A wait ran out.
    #[error("timed out {} after {after:?}", .phase.as_str())]
    Timeout {
        /// Which wait.
        phase: TimeoutPhase,
        /// The limit that was reached.
        after: Duration,
    },
    /// The provider sent something this crate could not read.
    #[error("could not decode the response: {message} (near `{snippet}`)")]
    Decode {
        /// What was wrong.
        message: String,
        /// The offending text, shortened.
        snippet: String,
    },
    /// The client was configured wrongly (missing key, bad URL).
    #[error("configuration error: {message}")]
    Config {
        /// What is wrong.
        message: String,
    },
}

fn retry_hint(retry_after: &Option<Duration>) -> String {
    match retry_after {
        Some(after) => format!(", retry after {} ms", after.as_millis()),
        None => String::new(),
    }
}

/// The longest snippet kept in a decode error or a non-JSON error body.
pub(crate) const SNIPPET_LEN: usize = 200;

/// An error body on one line: HTML tags dropped, and every run of whitespace one space, so a
/// proxy's error page does not spread over a log.
#[cfg(feature = "http")]
pub(crate) fn one_line(text: &str) -> String {
    let looks_like_html = text.trim_start().starts_with('<');
    let mut out = String::with_capacity(text.len().min(1024));
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' if looks_like_html => in_tag = true,
            '>' if looks_like_html && in_tag => {
                in_tag = false;
                out.push(' ');
            }
            _ if in_tag => {}
            c if c.is_whitespace() => out.push(' '),
            c => out.push(c),
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Shortens `text` to at most [`SNIPPET_LEN`] bytes on a character boundary.
pub(crate) fn snippet(text: &str) -> String {
    if text.len() <= SNIPPET_LEN {
        return text.to_owned();
    }
    let mut end = SNIPPET_LEN;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

impl LlmError {
    /// `failure` at `provider`.
    pub fn new(provider: impl Into<String>, failure: LlmFailure) -> Self {
        Self {
            provider: provider.into(),
            failure,
        }
    }

    /// A stable name of the kind: `authentication`, `rate_limited`, ...
    pub fn kind(&self) -> &'static str {
        self.failure.kind()
    }

    /// The HTTP status, when the error came from one (0 or absent for in-stream errors).
    pub fn status(&self) -> Option<u16> {
        self.failure.status()
    }

    /// How long the provider asked to wait before retrying.
    pub fn retry_after(&self) -> Option<Duration> {
        match self.failure {
            LlmFailure::RateLimited { retry_after, .. }
            | LlmFailure::Overloaded { retry_after, .. }
            | LlmFailure::Server { retry_after, .. } => retry_after,
            _ => None,
        }
    }

    /// Whether trying again may succeed: rate limits, overload, server errors, transport
    /// failures and timeouts. Authentication, bad requests and decode errors are final.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.failure,
            LlmFailure::RateLimited { .. }
                | LlmFailure::Overloaded { .. }
                | LlmFailure::Server { .. }
                | LlmFailure::Transport { .. }
                | LlmFailure::Timeout { .. }
        )
    }

    /// The provider's message (or what happened), without the kind and provider prefix.
    pub fn message(&self) -> String {
        match &self.failure {
            LlmFailure::Timeout { phase, after } => {
                format!("timed out {} after {after:?}", phase.as_str())
            }
            failure => failure.message().unwrap_or_default().to_owned(),
        }
    }

    /// A decode error with a snippet of the offending text.
    pub fn decode(provider: &str, message: impl Into<String>, text: &str) -> Self {
        Self::new(
            provider,
            LlmFailure::Decode {
                message: message.into(),
                snippet: snippet(text),
            },
        )
    }

    /// A transport error.
    pub fn transport(provider: &str, message: impl Into<String>) -> Self {
        Self::new(
            provider,
            LlmFailure::Transport {
                message: message.into(),
            },
        )
    }

    /// A configuration error (a missing key, a bad URL).
    pub fn config(provider: &str, message: impl Into<String>) -> Self {
        Self::new(
            provider,
            LlmFailure::Config {
                message: message.into(),
            },
        )
    }

    /// A wait that ran out.
    pub fn timeout(provider: &str, phase: TimeoutPhase, after: Duration) -> Self {
        Self::new(provider, LlmFailure::Timeout { phase, after })
    }

    /// Maps an HTTP error status and the provider's message to a typed error. `error_type` is
    /// the provider's own error code when the body had one (`overloaded_error`,
    /// `context_length_exceeded`, ...).
    pub fn from_status(
        provider: &str,
        status: u16,
        error_type: Option<&str>,
        message: String,
        retry_after: Option<Duration>,
    ) -> Self {
        let kind = error_type.unwrap_or("");
        let failure = if is_context_length(kind, &message) {
            LlmFailure::ContextLength { status, message }
        } else if kind == "overloaded_error" || status == 529 {
            LlmFailure::Overloaded {
                status,
                message,
                retry_after,
            }
        } else {
            match status {
                401 => LlmFailure::Authentication { status, message },
                403 => LlmFailure::PermissionDenied { status, message },
                404 => LlmFailure::NotFound { status, message },
                429 => LlmFailure::RateLimited {
                    status,
                    message,
                    retry_after,
                },
                500..=599 => LlmFailure::Server {
                    status,
                    message,
                    retry_after,
                },
                _ => LlmFailure::InvalidRequest { status, message },
            }
        };
        Self::new(provider, failure)
    }

    /// Maps an error reported inside a stream (`{"type":"error","error":{...}}`).
    pub fn in_stream(provider: &str, error_type: &str, message: String) -> Self {
        let status = match error_type {
            "authentication_error" => 401,
            "permission_error" => 403,
            "not_found_error" => 404,
            "rate_limit_error" => 429,
            "overloaded_error" => 529,
            "api_error" | "server_error" => 500,
            _ => 400,
        };
        let mut error = Self::from_status(provider, status, Some(error_type), message, None);
        if let Some(status) = error.failure.status_mut() {
            *status = 0;
        }
        error
    }

    /// The error after `attempts` tries: its message ends with `(after N attempts)`, so the
    /// final error of a retried request says it was retried. One attempt changes nothing; a
    /// timeout, which has no message, is returned as it is.
    pub fn after_attempts(mut self, attempts: u32) -> Self {
        if attempts > 1
            && let Some(message) = self.failure.message_mut()
        {
            message.push_str(&format!(" (after {attempts} attempts)"));
        }
        self
    }

    /// Replaces every occurrence of `secret` in the error's texts with `[redacted]`.
    pub fn redact(mut self, secret: &str) -> Self {
        if secret.len() < 4 {
            return self;
        }
        let scrub = |text: &mut String| {
            if text.contains(secret) {
                *text = text.replace(secret, "[redacted]");
            }
        };
        scrub(&mut self.provider);
        if let LlmFailure::Decode { snippet, .. } = &mut self.failure {
            scrub(snippet);
        }
        if let Some(message) = self.failure.message_mut() {
            scrub(message);
        }
        self
    }
}

/// `Some(status)` of the variants that carry an HTTP status, by reference or by mutable
/// reference as `$failure` is (one list of variants for both accessors).
macro_rules! status_field {
    ($failure:expr) => {
        match $failure {
            LlmFailure::Authentication { status, .. }
            | LlmFailure::PermissionDenied { status, .. }
            | LlmFailure::NotFound { status, .. }
            | LlmFailure::RateLimited { status, .. }
            | LlmFailure::Overloaded { status, .. }
            | LlmFailure::ContextLength { status, .. }
            | LlmFailure::InvalidRequest { status, .. }
            | LlmFailure::Server { status, .. } => Some(status),
            _ => None,
        }
    };
}

/// `Some(message)` of every variant but a timeout, by reference or by mutable reference as
/// `$failure` is.
macro_rules! message_field {
    ($failure:expr) => {
        match $failure {
            LlmFailure::Timeout { .. } => None,
            LlmFailure::Authentication { message, .. }
            | LlmFailure::PermissionDenied { message, .. }
            | LlmFailure::NotFound { message, .. }
            | LlmFailure::RateLimited { message, .. }
            | LlmFailure::Overloaded { message, .. }
            | LlmFailure::ContextLength { message, .. }
            | LlmFailure::InvalidRequest { message, .. }
            | LlmFailure::Server { message, .. }
            | LlmFailure::Transport { message }
            | LlmFailure::Decode { message, .. }
            | LlmFailure::Config { message } => Some(message),
        }
    };
}

impl LlmFailure {
    /// A stable name of the kind: `authentication`, `rate_limited`, ...
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Authentication { .. } => "authentication",
            Self::PermissionDenied { .. } => "permission_denied",
            Self::NotFound { .. } => "not_found",
            Self::RateLimited { .. } => "rate_limited",
            Self::Overloaded { .. } => "overloaded",
            Self::ContextLength { .. } => "context_length",
            Self::InvalidRequest { .. } => "invalid_request",
            Self::Server { .. } => "server",
            Self::Transport { .. } => "transport",
            Self::Timeout { .. } => "timeout",
            Self::Decode { .. } => "decode",
            Self::Config { .. } => "config",
        }
    }

    /// The HTTP status, when the failure came from one (0 or absent for in-stream failures).
    pub fn status(&self) -> Option<u16> {
        let status = status_field!(self).copied().unwrap_or(0);
        (status != 0).then_some(status)
    }

    fn status_mut(&mut self) -> Option<&mut u16> {
        status_field!(self)
    }

    /// The provider's message or what happened; none for a timeout.
    pub fn message(&self) -> Option<&str> {
        message_field!(self).map(|m| m.as_str())
    }

    fn message_mut(&mut self) -> Option<&mut String> {
        message_field!(self)
    }
}

fn is_context_length(kind: &str, message: &str) -> bool {
    if kind == "context_length_exceeded" {
        return true;
    }
    let lower = message.to_ascii_lowercase();
    lower.contains("prompt is too long")
        || lower.contains("context length")
        || lower.contains("context_length")
        || lower.contains("context window")
        || lower.contains("maximum context")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_kinds() {
        let kind = |status, ty: Option<&str>, msg: &str| {
            LlmError::from_status("p", status, ty, msg.to_owned(), None).kind()
        };
        assert_eq!(kind(401, None, "x"), "authentication");
        assert_eq!(kind(403, None, "x"), "permission_denied");
        assert_eq!(kind(404, None, "x"), "not_found");
        assert_eq!(kind(429, None, "x"), "rate_limited");
        assert_eq!(kind(529, None, "x"), "overloaded");
        assert_eq!(kind(500, Some("overloaded_error"), "x"), "overloaded");
        assert_eq!(kind(503, None, "x"), "server");
        assert_eq!(
            kind(
                400,
                None,
                "prompt is too long: 210000 tokens > 200000 maximum"
            ),
            "context_length"
        );
        assert_eq!(
            kind(400, Some("context_length_exceeded"), "x"),
            "context_length"
        );
        assert_eq!(
            kind(400, None, "max_tokens: must be positive"),
            "invalid_request"
        );
        assert_eq!(kind(422, None, "x"), "invalid_request");
    }

    #[test]
    fn only_transient_errors_are_retryable() {
        let retryable =
            |status| LlmError::from_status("p", status, None, String::new(), None).is_retryable();
        assert!(retryable(429));
        assert!(retryable(529));
        assert!(retryable(500));
        assert!(!retryable(400));
        assert!(!retryable(401));
        assert!(!retryable(403));
        assert!(!LlmError::decode("p", "bad", "{").is_retryable());
        assert!(LlmError::transport("p", "reset").is_retryable());
    }

    #[test]
    fn in_stream_errors_are_typed_without_a_status() {
        let error = LlmError::in_stream("anthropic", "overloaded_error", "Overloaded".into());
        assert_eq!(error.kind(), "overloaded");
        assert_eq!(error.status(), None);
        assert!(error.is_retryable());
    }

    #[test]
    fn redaction_scrubs_every_text() {
        let error = LlmError::from_status("p", 401, None, "bad key sk-secret-123".into(), None)
            .redact("sk-secret-123");
        assert!(!format!("{error} {error:?}").contains("sk-secret-123"));
    }

    #[test]
    fn snippets_cut_on_char_boundaries() {
        let text = "é".repeat(300);
        let cut = snippet(&text);
        assert!(cut.len() <= SNIPPET_LEN + "…".len());
    }
}
