//! The server's settings: who may call it, from where, and its limits.

use std::time::Duration;

/// How an [`A2aServer`](crate::A2aServer) guards and describes itself.
///
/// The defaults are the web face's: requests must name a loopback `Host` (`localhost`,
/// `127.0.0.1`, `[::1]`, any port: a DNS-rebinding page names its own host and is refused),
/// a request from a browser page (`Origin`) must come from the server's own loopback origin
/// or a listed one, `POST` bodies must be `application/json` and at most 1 MiB, and no token
/// is needed. [`serve`](crate::A2aServer::serve) refuses to listen beyond loopback without a
/// bearer token.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct A2aConfig {
    /// When set, JSON-RPC requests need `Authorization: Bearer <token>` (the card stays
    /// public and declares the scheme).
    pub bearer_token: Option<String>,
    /// `Host` names accepted besides loopback (`name` for any port, or `name:port`): the
    /// names a proxy or a LAN address serves this server under.
    pub allowed_hosts: Vec<String>,
    /// Browser origins allowed besides the server's own loopback origin
    /// (`https://app.example`).
    pub allowed_origins: Vec<String>,
    /// The URL clients should call, for the card (`https://agents.example/a2a`); by default
    /// `http://<Host of the card request>/a2a`.
    pub public_url: Option<String>,
    /// The agent's name on its card; by default the agent's own name, else `mux agent`.
    pub name: Option<String>,
    /// The agent's description on its card; by default its instructions.
    pub description: Option<String>,
    /// The agent's version on its card.
    pub version: String,
    /// The largest request body, in bytes.
    pub body_limit: usize,
    /// How long a connection may take to send a request's headers.
    pub header_timeout: Duration,
    /// How long a request may take to send its body.
    pub body_timeout: Duration,
    /// How long a connection may stay silent with no request in progress (keep-alive, or a
    /// stream whose client stopped reading).
    pub idle_timeout: Duration,
    /// Connections served at once; at the cap a new connection sheds the oldest idle one (no
    /// request in flight, whether it ever sent a byte or not).
    pub max_connections: usize,
    /// Tasks this process runs at once (a paused task does not count); past it, new tasks
    /// and answers are refused.
    pub max_tasks: usize,
    /// How long after its owner's last heartbeat a running task is taken over by another
    /// process (the owner renews it every third of it).
    pub lease: Duration,
    /// How long ended tasks stay in the run store.
    pub task_retention: Duration,
    /// Updates kept per task for its streams; a stream that falls further behind gets the
    /// whole task instead.
    pub max_task_log: usize,
}

impl Default for A2aConfig {
    fn default() -> Self {
        Self {
            bearer_token: None,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            public_url: None,
            name: None,
            description: None,
            version: env!("CARGO_PKG_VERSION").to_owned(),
            body_limit: 1024 * 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            max_connections: 256,
            max_tasks: 10_000,
            lease: Duration::from_secs(10),
            task_retention: Duration::from_secs(24 * 60 * 60),
            max_task_log: 10_000,
        }
    }
}

impl A2aConfig {
    /// Requires `Authorization: Bearer <token>`.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Accepts `host` (`name` or `name:port`) as a `Host`.
    pub fn allowed_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Accepts requests from pages of `origin`.
    pub fn allowed_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Sets the URL the card gives clients.
    pub fn public_url(mut self, url: impl Into<String>) -> Self {
        self.public_url = Some(url.into());
        self
    }

    /// Sets the card's name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the task lease (at least 30 ms).
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(30));
        self
    }

    /// Sets the card's description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}
