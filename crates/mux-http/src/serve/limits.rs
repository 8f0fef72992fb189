//! The time limits and the connection cap of [`super::accept_loop`].

use std::time::Duration;

/// Limits [`super::accept_loop`] enforces on every connection, before any handler runs (so
/// before authentication: a token does not protect against idle sockets, these do). The same
/// for every mux server: the web face, A2A and MCP.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// How long a new connection may take to send its first request's headers.
    pub header_read_timeout: Duration,
    /// How long a connection may wait between requests (keep-alive), or take to send a later
    /// request's headers; also how long a response body, once started, may go without a
    /// frame going out (a client that stops reading stalls it). SSE streams send a keep-alive
    /// comment every 15 s, so keep this above that.
    pub idle_timeout: Duration,
    /// How long a request may take to send its whole body, counted from its headers.
    pub body_read_timeout: Duration,
    /// At most this many connections at once; `None` derives it from the process's file
    /// descriptor limit (three quarters of what is left after 128 for files and children).
    /// At the cap, a new connection sheds the oldest one that is idle or still sending its
    /// request; when every connection is busy with a response, the new one is closed.
    pub max_connections: Option<usize>,
    /// How long graceful shutdown waits for responses in progress before closing them.
    pub shutdown_grace: Duration,
    /// The largest request head (request line and headers) in bytes.
    pub max_header_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            body_read_timeout: Duration::from_secs(30),
            max_connections: None,
            shutdown_grace: Duration::from_secs(10),
            max_header_bytes: 64 * 1024,
        }
    }
}

impl Limits {
    /// Sets the header read timeout.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = timeout;
        self
    }

    /// Sets the idle (keep-alive, stalled response) timeout.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// Sets the body read timeout.
    pub fn body_read_timeout(mut self, timeout: Duration) -> Self {
        self.body_read_timeout = timeout;
        self
    }

    /// Caps concurrent connections at `max`.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = Some(max);
        self
    }

    /// Sets how long graceful shutdown waits.
    pub fn shutdown_grace(mut self, grace: Duration) -> Self {
        self.shutdown_grace = grace;
        self
    }

    /// Sets the largest request head in bytes (at least 8 KiB is used).
    pub fn max_header_bytes(mut self, max: usize) -> Self {
        self.max_header_bytes = max;
        self
    }

    /// The connection cap: the configured one, or one derived from the descriptor limit.
    pub fn connection_cap(&self) -> usize {
        if let Some(max) = self.max_connections {
            return max.max(1);
        }
        let soft = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(u64::MAX);
        let usable = soft.saturating_sub(128).saturating_mul(3) / 4;
        usize::try_from(usable.clamp(16, 65_536)).unwrap_or(65_536)
    }
}
