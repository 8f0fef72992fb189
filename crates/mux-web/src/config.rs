//! What an application can set: security, limits and time limits.

use std::time::Duration;

/// How the web face behaves. [`WebConfig::default`] is safe for a local server: no CORS, no
/// auth (bind to 127.0.0.1, as [`crate::bind`] does), a 1 MiB body limit.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct WebConfig {
    /// A bearer token every request must carry (`Authorization: Bearer <token>`).
    pub bearer_token: Option<String>,
    /// Origins allowed by CORS (`*` allows any); empty means no CORS headers.
    pub cors_origins: Vec<String>,
    /// The largest request body accepted, in bytes.
    pub body_limit: usize,
    /// How long a paused run waits for the answer to an interrupt, or a frontend tool for
    /// its result. An expired approval is denied, and the denial says it expired.
    pub interrupt_timeout: Duration,
    /// How long after the last event a paused loop's pending calls are reported (so that
    /// parallel calls needing approval end the run together).
    pub pause_grace: Duration,
    /// Whether a dropped `POST /agui` connection cancels its run (default: no; reattach
    /// with `GET /agui/runs/{runId}/events`).
    pub cancel_on_disconnect: bool,
    /// How long a finished run's events stay available for replay.
    pub replay_retention: Duration,
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            bearer_token: None,
            cors_origins: Vec::new(),
            body_limit: 1024 * 1024,
            interrupt_timeout: Duration::from_secs(600),
            pause_grace: Duration::from_millis(50),
            cancel_on_disconnect: false,
            replay_retention: Duration::from_secs(300),
        }
    }
}

impl WebConfig {
    /// Requires `Authorization: Bearer <token>` on every request.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Allows cross-origin requests from `origin` (`*` for any).
    pub fn cors_origin(mut self, origin: impl Into<String>) -> Self {
        self.cors_origins.push(origin.into());
        self
    }

    /// Sets the body limit in bytes.
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Sets how long an interrupt or a frontend tool call waits for its answer.
    pub fn interrupt_timeout(mut self, timeout: Duration) -> Self {
        self.interrupt_timeout = timeout;
        self
    }

    /// Cancels a run when its `POST /agui` connection drops.
    pub fn cancel_on_disconnect(mut self, cancel: bool) -> Self {
        self.cancel_on_disconnect = cancel;
        self
    }

    /// Sets how long finished runs stay available for replay.
    pub fn replay_retention(mut self, retention: Duration) -> Self {
        self.replay_retention = retention;
        self
    }
}
