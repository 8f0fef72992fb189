//! Typed errors: HTTP errors with JSON bodies, and the codes of `RUN_ERROR` events.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// A request the web face refuses before any run starts.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WebError {
    /// The body is not a valid `RunAgentInput` (400).
    #[error("malformed RunAgentInput: {0}")]
    BadRequest(String),
    /// The request lacks the bearer token, or carries another (401).
    #[error("missing or wrong bearer token")]
    Unauthorized,
    /// The thread has a run in progress (409).
    #[error("thread `{thread_id}` is busy with run `{run_id}`; cancel it or wait for it to end")]
    ThreadBusy {
        /// The thread.
        thread_id: String,
        /// The run in progress.
        run_id: String,
    },
    /// The thread's loop is paused on interrupts that this request does not answer (409).
    #[error(
        "thread `{thread_id}` is paused on interrupts {interrupt_ids:?}; answer them in `resume`"
    )]
    InterruptPending {
        /// The thread.
        thread_id: String,
        /// The interrupts waiting for an answer.
        interrupt_ids: Vec<String>,
    },
    /// A run with this id exists already (409).
    #[error("run `{0}` exists already; every run needs a new runId")]
    RunExists(String),
    /// The session store failed or is unreachable (503 `run_store_unavailable`, with
    /// `Retry-After`). The cause (here) goes to the log, never to the client.
    #[error("the session store failed: {0}")]
    Session(String),
    /// The run store failed or is unreachable (503 `run_store_unavailable`, with
    /// `Retry-After`): no run can start or resume until it answers again. The cause (here)
    /// goes to the log, never to the client.
    #[error("the run store failed: {0}")]
    RunStore(String),
    /// No run has this id, or it is no longer kept (404).
    #[error("no run `{0}` (unknown, or finished longer ago than the replay retention)")]
    RunNotFound(String),
    /// No thread has this id, or it belongs to another principal (404: the two look alike).
    #[error("no thread `{0}`")]
    ThreadNotFound(String),
    /// The `Host` is not one this server answers to (403): DNS rebinding, or a proxy whose
    /// name is not in [`crate::WebConfig::allowed_hosts`].
    #[error("Host `{0}` is not allowed (configure allowed hosts to serve behind a proxy)")]
    HostNotAllowed(String),
    /// The `Origin` is neither the server's own nor configured for CORS (403).
    #[error("Origin `{0}` is not allowed (configure it as a CORS origin to call from that page)")]
    OriginNotAllowed(String),
    /// A `POST` body that is not `application/json` (415).
    #[error("Content-Type `{0}` is not application/json")]
    UnsupportedMediaType(String),
    /// The principal asked for too many unknown ids (429).
    #[error(
        "too many requests for unknown threads, runs or interrupts; retry in {retry_after_secs} s"
    )]
    TooManyMisses {
        /// Seconds until the window ends.
        retry_after_secs: u64,
    },
}

impl WebError {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::BadRequest(_) => StatusCode::BAD_REQUEST,
            Self::Unauthorized => StatusCode::UNAUTHORIZED,
            Self::ThreadBusy { .. } | Self::InterruptPending { .. } | Self::RunExists(_) => {
                StatusCode::CONFLICT
            }
            Self::RunNotFound(_) | Self::ThreadNotFound(_) => StatusCode::NOT_FOUND,
            Self::HostNotAllowed(_) | Self::OriginNotAllowed(_) => StatusCode::FORBIDDEN,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::TooManyMisses { .. } => StatusCode::TOO_MANY_REQUESTS,
            Self::Session(_) | Self::RunStore(_) => StatusCode::SERVICE_UNAVAILABLE,
        }
    }

    /// The stable code in the body's `error` field.
    pub fn code(&self) -> &'static str {
        match self {
            Self::BadRequest(_) => "bad_request",
            Self::Unauthorized => "unauthorized",
            Self::ThreadBusy { .. } => "thread_busy",
            Self::InterruptPending { .. } => "interrupt_pending",
            Self::RunExists(_) => "run_exists",
            Self::RunNotFound(_) => "run_not_found",
            // One code for any store outage (sessions and runs live in one store, and which
            // of them a request needs first is not the client's concern).
            Self::Session(_) | Self::RunStore(_) => "run_store_unavailable",
            Self::ThreadNotFound(_) => "thread_not_found",
            Self::HostNotAllowed(_) => "host_not_allowed",
            Self::OriginNotAllowed(_) => "origin_not_allowed",
            Self::UnsupportedMediaType(_) => "unsupported_media_type",
            Self::TooManyMisses { .. } => "too_many_misses",
        }
    }
}

/// Seconds a client is asked to wait (`Retry-After`) after a store outage.
pub(crate) const STORE_RETRY_AFTER_SECS: u64 = 2;

impl WebError {
    /// The message the client sees: a store's failure is named, its cause (an OS error, a
    /// socket or file path, the driver's words) is logged instead.
    fn client_message(&self) -> String {
        match self {
            Self::Session(cause) | Self::RunStore(cause) => {
                let store = if matches!(self, Self::Session(_)) {
                    "session"
                } else {
                    "run"
                };
                tracing::warn!(store, %cause, "a request failed: the {store} store is unavailable");
                format!("the {store} store is unavailable; retry in {STORE_RETRY_AFTER_SECS} s")
            }
            _ => self.to_string(),
        }
    }
}

impl IntoResponse for WebError {
    fn into_response(self) -> Response {
        let mut body = json!({"error": self.code(), "message": self.client_message()});
        match &self {
            Self::ThreadBusy { thread_id, run_id } => {
                body["threadId"] = json!(thread_id);
                body["runId"] = json!(run_id);
            }
            Self::InterruptPending {
                thread_id,
                interrupt_ids,
            } => {
                body["threadId"] = json!(thread_id);
                body["interruptIds"] = json!(interrupt_ids);
            }
            _ => {}
        }
        let mut response = (self.status(), Json(body)).into_response();
        match self {
            Self::Unauthorized => {
                response.headers_mut().insert(
                    axum::http::header::WWW_AUTHENTICATE,
                    axum::http::HeaderValue::from_static("Bearer"),
                );
            }
            Self::TooManyMisses { retry_after_secs } => {
                response
                    .headers_mut()
                    .insert(axum::http::header::RETRY_AFTER, retry_after_secs.into());
            }
            Self::Session(_) | Self::RunStore(_) => {
                response.headers_mut().insert(
                    axum::http::header::RETRY_AFTER,
                    STORE_RETRY_AFTER_SECS.into(),
                );
            }
            _ => {}
        }
        response
    }
}

/// The `code` of a `RUN_ERROR` event.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCode {
    /// `resume` names an interrupt this thread never raised.
    UnknownInterrupt,
    /// `resume` answers an interrupt that was answered already.
    InterruptAlreadyAnswered,
    /// `resume` answers an interrupt whose loop another process holds in memory (an
    /// `ask_user` question): send it to that process.
    InterruptHeldElsewhere,
    /// The request has no user message to run.
    NoUserMessage,
    /// A frontend tool in `tools` is not usable (bad name or parameters schema).
    InvalidTool,
    /// The session store failed (the cause is logged, not sent).
    Session,
    /// The run store failed, or another process took the run over (a failure's cause is
    /// logged, not sent).
    RunStore,
    /// The loop could not start or failed: its `LoopEvent::Error` kind.
    Loop(String),
}

impl ErrorCode {
    /// The wire code.
    pub fn as_str(&self) -> &str {
        match self {
            Self::UnknownInterrupt => "unknown_interrupt",
            Self::InterruptAlreadyAnswered => "interrupt_already_answered",
            Self::InterruptHeldElsewhere => "interrupt_held_elsewhere",
            Self::NoUserMessage => "no_user_message",
            Self::InvalidTool => "invalid_tool",
            Self::Session => "session",
            Self::RunStore => "run_store",
            Self::Loop(kind) => kind,
        }
    }
}

/// Whether a `RUN_ERROR` code names a store: the session store (`session`), records the
/// store has not taken (`unwritten`), or the run store (`run_store`).
fn is_store_code(code: &str) -> bool {
    matches!(code, "session" | "unwritten" | "run_store")
}

/// Whether `text` carries an operating system's error (`… (os error 32)`), whose words,
/// socket and file paths are for the log, not the client.
fn carries_os_error(text: &str) -> bool {
    text.contains("(os error ")
}

/// The message a client is shown for a `RUN_ERROR` with `code`: one carrying an OS error (a
/// store that went away, a socket, a full disk) is logged and replaced by what failed (for a
/// store, with a retry hint); any other is shown as it is.
pub(crate) fn run_error_message(code: Option<&str>, message: String) -> String {
    if !carries_os_error(&message) {
        return message;
    }
    let code = code.unwrap_or("error");
    tracing::warn!(code, cause = %message, "a run failed");
    if is_store_code(code) {
        format!(
            "the store is unavailable ({code}); the run stopped; retry in {STORE_RETRY_AFTER_SECS} s"
        )
    } else {
        format!("the run failed ({code}); the cause is in the server's log")
    }
}

/// A configuration the router cannot use.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// An allowed host that is not `name` or `name:port`.
    #[error("allowed host `{0}` is not `name` or `name:port`")]
    InvalidAllowedHost(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_error_shows_no_os_error_and_keeps_other_words() {
        let shown = run_error_message(
            Some("session"),
            "session `t`: loading failed: Broken pipe (os error 32)".into(),
        );
        assert!(
            !shown.contains("os error") && !shown.contains("Broken pipe"),
            "{shown}"
        );
        assert!(shown.contains("store is unavailable"), "{shown}");
        let shown = run_error_message(
            Some("llm"),
            "connect: Connection refused (os error 111)".into(),
        );
        assert!(!shown.contains("os error"), "{shown}");
        let kept = "session `t-race` already exists";
        assert_eq!(run_error_message(Some("session"), kept.into()), kept);
    }

    #[test]
    fn a_store_failure_is_503_with_retry_after_and_no_cause() {
        for err in [
            WebError::Session("loading failed: Broken pipe (os error 32)".into()),
            WebError::RunStore("/tmp/mux-pg-x/.s.PGSQL.5432: No such file (os error 2)".into()),
        ] {
            assert_eq!(err.code(), "run_store_unavailable");
            let response = err.into_response();
            assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
            assert!(
                response
                    .headers()
                    .contains_key(axum::http::header::RETRY_AFTER)
            );
        }
    }
}
