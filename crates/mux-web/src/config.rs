//! What an application can set: security, limits and time limits.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub(crate) use crate::error::ConfigError;
use crate::security::{Authenticator, BearerTokens, ProbeLimit, Refusal, RefusalHook};

/// How the web face behaves. [`WebConfig::default`] is safe for a local server: requests
/// only for the server's own `Host` (its address and `localhost` on its port), from its own
/// origin, with JSON bodies; one principal and no token (bind to 127.0.0.1, as
/// [`crate::bind`] does); a 1 MiB body limit.
#[derive(Clone)]
#[non_exhaustive]
pub struct WebConfig {
    /// Who a request comes from; `None` is one principal for everyone
    /// ([`crate::OnePrincipal`]).
    pub authenticator: Option<Arc<dyn Authenticator>>,
    /// Origins allowed by CORS (`*` allows any but `null`); empty means no CORS headers.
    /// Requests whose `Origin` is neither these nor the server's own are refused (403).
    pub cors_origins: Vec<String>,
    /// More `Host` values to answer to (`name` on any port, or `name:port`), for a server
    /// behind a proxy; the server's own address and `localhost` on its port always are.
    pub allowed_hosts: Vec<String>,
    /// How many unknown thread, run or interrupt ids a principal may ask for per window.
    pub probe_limit: ProbeLimit,
    /// Called for every refused request (besides a `tracing` warning).
    pub on_refusal: Option<RefusalHook>,
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
    /// How long a process holds a run without renewing it. The owner renews every third of
    /// it; when an owner dies, another process takes its runs over once the lease ran out.
    pub lease: Duration,
    /// What a prompt does when its thread has a run in progress.
    pub double_texting: DoubleTexting,
}

/// What a prompt does when its thread has a run in progress (LangGraph's "double-texting"
/// strategies). A thread paused on an interrupt refuses a new prompt under every strategy
/// but [`Interrupt`](Self::Interrupt) (409 `interrupt_pending`): answer it first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DoubleTexting {
    /// Refuse it: 409 `thread_busy` (the default).
    #[default]
    Reject,
    /// Run it after the current run ends (waiting at most the interrupt timeout).
    Enqueue,
    /// Cancel the current run (what it wrote so far stays in the thread) and run this one.
    Interrupt,
}

impl DoubleTexting {
    /// The strategy named `name`: `reject`, `enqueue` or `interrupt`.
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "reject" => Some(Self::Reject),
            "enqueue" => Some(Self::Enqueue),
            "interrupt" => Some(Self::Interrupt),
            _ => None,
        }
    }
}

impl Default for WebConfig {
    fn default() -> Self {
        Self {
            authenticator: None,
            cors_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            probe_limit: ProbeLimit::default(),
            on_refusal: None,
            body_limit: 1024 * 1024,
            interrupt_timeout: Duration::from_secs(600),
            pause_grace: Duration::from_millis(50),
            cancel_on_disconnect: false,
            replay_retention: Duration::from_secs(300),
            lease: Duration::from_secs(10),
            double_texting: DoubleTexting::Reject,
        }
    }
}

impl fmt::Debug for WebConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebConfig")
            .field(
                "authenticator",
                &self.authenticator.as_ref().map(|_| "custom"),
            )
            .field("cors_origins", &self.cors_origins)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("probe_limit", &self.probe_limit)
            .field("body_limit", &self.body_limit)
            .field("interrupt_timeout", &self.interrupt_timeout)
            .field("pause_grace", &self.pause_grace)
            .field("cancel_on_disconnect", &self.cancel_on_disconnect)
            .field("replay_retention", &self.replay_retention)
            .field("lease", &self.lease)
            .field("double_texting", &self.double_texting)
            .finish_non_exhaustive()
    }
}

impl WebConfig {
    /// Requires `Authorization: Bearer <token>` (the scheme in any case) on every request;
    /// the one principal is [`crate::Principal::local`].
    pub fn bearer_token(self, token: impl Into<String>) -> Self {
        self.authenticator(BearerTokens::single(token))
    }

    /// Maps requests to principals with `authenticator` (for example [`BearerTokens`] with a
    /// token per user). Each thread is visible only to the principal that created it.
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        self.authenticator = Some(Arc::new(authenticator));
        self
    }

    /// Also answers requests whose `Host` is `host` (`name` or `name:port`): the public name
    /// of a proxy in front of the server.
    pub fn allowed_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Sets how many unknown ids a principal may ask for per window before getting 429.
    pub fn probe_limit(mut self, misses: u32, window: Duration) -> Self {
        self.probe_limit = ProbeLimit { misses, window };
        self
    }

    /// Calls `hook` with every refused request (to log or count them).
    pub fn on_refusal(mut self, hook: impl Fn(&Refusal) + Send + Sync + 'static) -> Self {
        self.on_refusal = Some(RefusalHook(Arc::new(hook)));
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

    /// Sets the run lease (at least 30 ms): how long after its owner's last heartbeat a run
    /// is taken over by another process.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(30));
        self
    }

    /// Sets what a prompt does on a thread with a run in progress.
    pub fn double_texting(mut self, strategy: DoubleTexting) -> Self {
        self.double_texting = strategy;
        self
    }

    /// Sets how long finished runs stay available for replay.
    pub fn replay_retention(mut self, retention: Duration) -> Self {
        self.replay_retention = retention;
        self
    }
}
