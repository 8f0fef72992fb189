//! One server connection: its state machine, its rmcp session, its log and its calls.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant, SystemTime};

use rmcp::model::{ClientRequest, PingRequest, ProtocolVersion, RequestMetaObject};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, ClientServiceExt, Peer, RoleClient, RunningService,
    ServiceError,
};
use rmcp::transport::streamable_http_client::StreamableHttpClient;
use rustls::pki_types::CertificateDer;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use self::handler::Handler;
use self::transport::Child;
use self::types::{PendingCalls, PendingEntry, ProgressBarrier, Shared, lock};
use crate::client::ClientHandlers;
use crate::config::{ConfigError, HttpSpec, ServerSpec, TransportSpec};
use crate::event::EventSender;
use crate::log::LogBuffer;
use crate::oauth::{
    Challenge, FlowContext, OAuth, RestoreError, init_challenge, request_challenge,
};
use crate::standalone::{Opening, StandaloneStream};
use crate::tls;
use crate::{
    AuthProgress, ConnectError, ConnectionState, Events, LogEntry, LogLevel, LogSource, McpEvent,
    ToolInfo, TransitionError,
};

mod call;
// Server log messages are deprecated in 2026-07-28, but older servers still send them.
#[allow(deprecated)]
mod handler;
mod subscription;
mod transport;
mod types;

/// The default time a connection attempt (spawn, handshake, first `tools/list`) may take.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// The default time an OAuth authorization may take, the user's part included.
pub const DEFAULT_AUTHORIZATION_TIMEOUT: Duration = Duration::from_secs(300);
/// The default time a stdio server gets to exit after stdin closes, and again after SIGTERM.
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// How long `connect` waits for the standalone GET stream of an HTTP session that began with
/// `initialize` before it reports `connected` anyway (with a warning in the log).
const STANDALONE_STREAM_WAIT: Duration = Duration::from_secs(2);

/// How a connection begins its MCP session, and so which protocol revisions it speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Lifecycle {
    /// Try the stateless 2026-07-28 lifecycle (`server/discover`) and fall back to the
    /// `initialize` handshake at 2025-11-25 for older servers.
    #[default]
    Auto,
    /// Only the stateless 2026-07-28 lifecycle: `server/discover`, then self-contained requests.
    Stateless,
    /// Only the `initialize` handshake, offering 2025-11-25.
    Initialize,
}

impl Lifecycle {
    fn mode(self) -> ClientLifecycleMode {
        match self {
            Self::Auto => ClientLifecycleMode::Auto {
                preferred_versions: vec![
                    ProtocolVersion::V_2026_07_28,
                    ProtocolVersion::V_2025_11_25,
                ],
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            },
            Self::Stateless => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
            Self::Initialize => ClientLifecycleMode::Initialize,
        }
    }
}

/// Timeouts and lifecycle of one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionOptions {
    /// How long spawn, handshake and the first `tools/list` may take together.
    pub connect_timeout: Duration,
    /// How long a stdio server gets to exit after stdin closes, and again after SIGTERM,
    /// before its process group is killed.
    pub shutdown_grace: Duration,
    /// How the session begins; [`Lifecycle::Auto`] unless set.
    pub lifecycle: Lifecycle,
    /// How long an OAuth authorization may take, the user's part included. It does not
    /// count against `connect_timeout`.
    pub authorization_timeout: Duration,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        Self {
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            lifecycle: Lifecycle::Auto,
            authorization_timeout: DEFAULT_AUTHORIZATION_TIMEOUT,
        }
    }
}

/// A call in flight.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PendingCall {
    /// The mux call id.
    pub call_id: String,
    /// The tool's name on the server.
    pub tool: String,
    /// How long it has been running.
    pub elapsed: Duration,
}

/// The most `input_required` rounds (SEP-2322) one tool call may take.
pub const MAX_INPUT_ROUNDS: usize = 10;
/// The most authorizations (after 401 or 403 `insufficient_scope`) one connect or one tool
/// call may run.
const MAX_AUTH_ROUNDS: u32 = 3;

/// How often the deadline keeper looks at pending calls when there are none.
const IDLE_TICK: Duration = Duration::from_millis(250);
/// The longest the keeper sleeps while calls are pending.
const BUSY_TICK: Duration = Duration::from_millis(100);

/// What a live connection needs for calls.
#[derive(Clone)]
struct Link {
    peer: Peer<RoleClient>,
    closed: CancellationToken,
    generation: u64,
    barrier: Arc<ProgressBarrier>,
}

/// What a live connection owns: the rmcp service, the child process and helper tasks.
struct Session {
    service: RunningService<RoleClient, Handler>,
    child: Option<Child>,
    generation: u64,
    tasks: Vec<JoinHandle<()>>,
    /// The `subscriptions/listen` stream for tool list changes, on 2026-07-28 sessions.
    listener: Option<subscription::Listener>,
}

impl Session {
    /// Closes the service (for stdio that closes the child's stdin), then waits for the child,
    /// then SIGTERM, then kills its process group.
    async fn shut_down(mut self, grace: Duration) {
        if let Some(listener) = self.listener.take() {
            listener.stop(grace).await;
        }
        let _ = self.service.close_with_timeout(grace).await;
        if let Some(child) = self.child.take() {
            child.shut_down(grace).await;
        }
        for task in &self.tasks {
            task.abort();
        }
    }

    /// Ends a session whose peer is already gone: no grace, kill the group.
    async fn abandon(mut self) {
        if let Some(listener) = self.listener.take() {
            listener.abort();
        }
        if let Some(child) = self.child.take() {
            child.kill().await;
        }
        let _ = self
            .service
            .close_with_timeout(Duration::from_millis(200))
            .await;
        for task in &self.tasks {
            task.abort();
        }
    }
}

struct Inner {
    spec: ServerSpec,
    options: ConnectionOptions,
    shared: Arc<Shared>,
    link: Mutex<Option<Arc<Link>>>,
    /// Held for a whole connect or disconnect, so lifecycle operations never overlap.
    session: tokio::sync::Mutex<Option<Session>>,
    attempt: Mutex<Option<CancellationToken>>,
    /// Calls in flight, by the progress token of their current request.
    pending: PendingCalls,
    generation: AtomicU64,
    retries: AtomicU32,
    pid: Mutex<Option<u32>>,
    protocol_version: Mutex<Option<String>>,
    lost: Mutex<Option<mpsc::UnboundedSender<String>>>,
    client: Mutex<Option<Arc<dyn ClientHandlers>>>,
    /// OAuth state of an HTTP server with an `oauth` spec; kept across reconnects.
    oauth: Mutex<Option<Arc<OAuth>>>,
}

/// One MCP server connection with an explicit, validated state machine.
///
/// Cloning gives another handle to the same connection.
#[derive(Clone)]
pub struct ServerConnection {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ServerConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConnection")
            .field("server", &self.inner.spec.name)
            .field("state", &self.state().name())
            .finish_non_exhaustive()
    }
}

impl ServerConnection {
    /// A connection in the idle state with its own event channel.
    pub fn new(spec: ServerSpec, options: ConnectionOptions) -> Self {
        Self::with_events(spec, options, EventSender::new())
    }

    pub(crate) fn with_events(
        spec: ServerSpec,
        mut options: ConnectionOptions,
        events: EventSender,
    ) -> Self {
        if let Some(timeout) = spec.connect_timeout {
            options.connect_timeout = timeout;
        }
        let shared = Arc::new(Shared {
            server: spec.name.clone(),
            state: Mutex::new(ConnectionState::Idle),
            log: Mutex::new(LogBuffer::default()),
            events,
        });
        Self {
            inner: Arc::new(Inner {
                spec,
                options,
                shared,
                link: Mutex::new(None),
                session: tokio::sync::Mutex::new(None),
                attempt: Mutex::new(None),
                pending: PendingCalls::default(),
                generation: AtomicU64::new(0),
                retries: AtomicU32::new(0),
                pid: Mutex::new(None),
                protocol_version: Mutex::new(None),
                lost: Mutex::new(None),
                client: Mutex::new(None),
                oauth: Mutex::new(None),
            }),
        }
    }

    /// Tells `tx` the server's name whenever an established connection is lost.
    pub(crate) fn on_lost(&self, tx: mpsc::UnboundedSender<String>) {
        *lock(&self.inner.lost) = Some(tx);
    }

    /// Answers the server's roots, sampling and elicitation requests with `handlers` (from
    /// the next connect on).
    pub fn set_client_handlers(&self, handlers: Arc<dyn ClientHandlers>) {
        *lock(&self.inner.client) = Some(handlers);
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.inner.spec.name
    }

    /// The spec it was made from.
    pub fn spec(&self) -> &ServerSpec {
        &self.inner.spec
    }

    /// The current state.
    pub fn state(&self) -> ConnectionState {
        self.inner.shared.state()
    }

    /// The latest log entries (at most [`LOG_CAPACITY`](crate::LOG_CAPACITY)), oldest first.
    pub fn log(&self) -> Vec<LogEntry> {
        lock(&self.inner.shared.log).snapshot()
    }

    /// How many log entries were dropped because the log was full.
    pub fn log_dropped(&self) -> u64 {
        lock(&self.inner.shared.log).dropped()
    }

    /// Subscribes to this connection's events.
    pub fn subscribe(&self) -> Events {
        self.inner.shared.events.subscribe()
    }

    /// The calls in flight, by call id.
    pub fn pending_calls(&self) -> Vec<PendingCall> {
        let pending = lock(&self.inner.pending);
        let mut entries: Vec<&PendingEntry> = pending.values().collect();
        entries.sort_by_key(|entry| entry.started);
        entries
            .into_iter()
            .map(|entry| PendingCall {
                call_id: entry.call_id.clone(),
                tool: entry.tool.clone(),
                elapsed: entry.started.elapsed(),
            })
            .collect()
    }

    /// The process id of the stdio server, while connected.
    pub fn pid(&self) -> Option<u32> {
        *lock(&self.inner.pid)
    }

    /// The protocol version negotiated with the server, while connected.
    pub fn protocol_version(&self) -> Option<String> {
        lock(&self.inner.protocol_version).clone()
    }

    /// Moves a failed connection to `reconnecting`; used by the coordinator's policy.
    pub(crate) fn mark_reconnecting(
        &self,
        attempt: u32,
        max_attempts: u32,
        next_at: Option<SystemTime>,
    ) -> Result<(), TransitionError> {
        self.inner.retries.store(attempt, Ordering::SeqCst);
        self.inner.shared.transition(ConnectionState::Reconnecting {
            attempt,
            max_attempts,
            next_at,
        })
    }

    /// Connects: spawn or dial, handshake (by default `server/discover` with fallback to
    /// `initialize`; see [`Lifecycle`]), then list every tool page. Valid from idle, failed, reconnecting and disconnected.
    pub async fn connect(&self) -> Result<Vec<ToolInfo>, ConnectError> {
        let inner = &self.inner;
        let server = inner.spec.name.clone();
        let mut slot = inner.session.lock().await;
        inner.shared.transition(ConnectionState::Connecting)?;
        let cancel = CancellationToken::new();
        *lock(&inner.attempt) = Some(cancel.clone());
        let generation = inner.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let result = tokio::select! {
            opened = self.open_authorized(generation) => opened,
            () = cancel.cancelled() => Err(ConnectError::Cancelled { server: server.clone() }),
        };
        *lock(&inner.attempt) = None;
        match result {
            Ok((session, link, tools)) => {
                let closed = link.closed.clone();
                *lock(&inner.link) = Some(Arc::new(link));
                *slot = Some(session);
                drop(slot);
                inner.retries.store(0, Ordering::SeqCst);
                inner.shared.transition(ConnectionState::Connected {
                    tools: tools.clone(),
                })?;
                self.watch(closed, generation);
                Ok(tools)
            }
            Err(err) => {
                let next = if matches!(err, ConnectError::Cancelled { .. }) {
                    ConnectionState::Idle
                } else {
                    ConnectionState::Failed {
                        message: err.to_string(),
                        retries: inner.retries.load(Ordering::SeqCst),
                    }
                };
                inner
                    .shared
                    .log(LogLevel::Error, LogSource::Protocol, err.to_string());
                inner.shared.transition(next)?;
                Err(err)
            }
        }
    }

    /// Cancels a connection attempt in progress; the connection returns to idle. Returns
    /// whether an attempt was running.
    pub fn cancel_connect(&self) -> bool {
        match lock(&self.inner.attempt).as_ref() {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Opens the session; when an OAuth server refuses it with a challenge, authorizes and
    /// opens again (at most [`MAX_AUTH_ROUNDS`] times). Each opening has the connect timeout; authorization has its own.
    async fn open_authorized(
        &self,
        generation: u64,
    ) -> Result<(Session, Link, Vec<ToolInfo>), ConnectError> {
        let inner = &self.inner;
        let server = inner.spec.name.clone();
        let timeout = inner.options.connect_timeout;
        let mut authorizations = 0u32;
        loop {
            let attempt = match tokio::time::timeout(timeout, self.open(generation)).await {
                Ok(attempt) => attempt,
                Err(_) => {
                    return Err(ConnectError::Timeout {
                        server: server.clone(),
                        timeout,
                    });
                }
            };
            let (challenge, error) = match attempt {
                Ok(opened) => return Ok(opened),
                Err(Attempt::Failed(error)) => return Err(error),
                Err(Attempt::Challenged { challenge, error }) => (challenge, error),
            };
            let oauth = match lock(&inner.oauth).clone() {
                // The server may move to a new authorization server mid-connect, but a server
                // that keeps refusing fresh tokens must not loop.
                Some(oauth) if authorizations < MAX_AUTH_ROUNDS => oauth,
                _ => return Err(error),
            };
            inner.shared.log(
                LogLevel::Info,
                LogSource::Protocol,
                "the server requires authorization; starting OAuth".to_string(),
            );
            let shared = inner.shared.clone();
            let progress = move |progress: AuthProgress| {
                let _ = shared.transition(ConnectionState::Authenticating { progress });
            };
            let cx = FlowContext {
                server: &server,
                handlers: lock(&inner.client).clone(),
                progress: &progress,
            };
            let limit = inner.options.authorization_timeout;
            let flow = match &challenge {
                Challenge::Unauthorized(header) => {
                    tokio::time::timeout(limit, oauth.authorize(header, &cx)).await
                }
                Challenge::InsufficientScope(header) => {
                    tokio::time::timeout(limit, oauth.upgrade(header, &cx)).await
                }
            };
            match flow {
                Ok(Ok(())) => authorizations += 1,
                Ok(Err(reason)) => {
                    return Err(ConnectError::Authorization { server, reason });
                }
                Err(_) => {
                    return Err(ConnectError::Authorization {
                        server,
                        reason: format!("not completed within {limit:?}"),
                    });
                }
            }
        }
    }

    /// The OAuth state for an HTTP server with an `oauth` spec, made on first use.
    /// Its stored credentials are loaded first; it is kept only once that worked, so a
    /// failed load is tried again on the next attempt.
    async fn oauth_for(
        &self,
        http: &HttpSpec,
        extra_roots: &[CertificateDer<'static>],
    ) -> Result<Option<Arc<OAuth>>, ConnectError> {
        let Some(spec) = &http.oauth else {
            return Ok(None);
        };
        if let Some(oauth) = lock(&self.inner.oauth).clone() {
            return Ok(Some(oauth));
        }
        let server = &self.inner.spec.name;
        let oauth = OAuth::new(&http.url, spec.clone(), extra_roots.to_vec())
            .await
            .map_err(|reason| ConnectError::Transport {
                server: server.clone(),
                reason,
            })?;
        let restored = oauth.restore().await.map_err(|err| match err {
            RestoreError::Store(source) => ConnectError::TokenStore {
                server: server.clone(),
                source,
            },
            RestoreError::Flow(reason) => ConnectError::Authorization {
                server: server.clone(),
                reason,
            },
        })?;
        if restored {
            self.inner.shared.log(
                LogLevel::Info,
                LogSource::Protocol,
                "using stored OAuth credentials".to_string(),
            );
        }
        let oauth = Arc::new(oauth);
        Ok(Some(lock(&self.inner.oauth).get_or_insert(oauth).clone()))
    }

    async fn open(&self, generation: u64) -> Result<(Session, Link, Vec<ToolInfo>), Attempt> {
        let inner = &self.inner;
        let server = inner.spec.name.clone();
        let closed = CancellationToken::new();
        let tools_changed = Arc::new(Notify::new());
        let barrier = Arc::new(ProgressBarrier::default());
        let handler = Handler {
            shared: inner.shared.clone(),
            pending: inner.pending.clone(),
            tools_changed: tools_changed.clone(),
            barrier: barrier.clone(),
            client: lock(&inner.client).clone(),
        };
        let lifecycle = inner.options.lifecycle.mode();
        let handshake = |err: rmcp::service::ClientInitializeError| {
            let error = match tls::tls_failure(&err) {
                Some(reason) => ConnectError::Tls {
                    server: server.clone(),
                    reason,
                },
                None => ConnectError::Handshake {
                    server: server.clone(),
                    reason: err.to_string(),
                },
            };
            match init_challenge(&err) {
                Some(challenge) => Attempt::Challenged { challenge, error },
                None => Attempt::Failed(error),
            }
        };
        let mut tasks = Vec::new();
        let standalone = StandaloneStream::new();
        let (service, child) = match &inner.spec.transport {
            TransportSpec::Stdio(stdio) => {
                let (transport, child, stderr) =
                    transport::spawn(stdio, closed.clone(), barrier.clone()).map_err(|err| {
                        ConnectError::Spawn {
                            server: server.clone(),
                            command: stdio.command.clone(),
                            source: err,
                        }
                    })?;
                *lock(&inner.pid) = child.id();
                inner.shared.log(
                    LogLevel::Info,
                    LogSource::Protocol,
                    format!("spawned `{}` (pid {:?})", stdio.command, child.id()),
                );
                let shared = inner.shared.clone();
                tasks.push(tokio::spawn(transport::pump_stderr(stderr, move |line| {
                    shared.log(LogLevel::Info, LogSource::Stderr, line);
                })));
                // On failure `child` is dropped here, which kills its process group.
                let service = handler
                    .serve_with_lifecycle(transport, lifecycle)
                    .await
                    .map_err(handshake)?;
                (service, Some(child))
            }
            TransportSpec::Http(http) => {
                let bad_transport = |reason| ConnectError::Transport {
                    server: server.clone(),
                    reason,
                };
                let extra_roots = tls::read_ca_files(&http.ca_certificates).map_err(|err| {
                    ConnectError::Config(ConfigError::Field {
                        server: server.clone(),
                        field: format!("caCertificates[{}]", err.index),
                        problem: err.problem,
                    })
                })?;
                let wiring = Wiring {
                    closed: closed.clone(),
                    barrier: barrier.clone(),
                    standalone: standalone.clone(),
                };
                let served = match self.oauth_for(http, &extra_roots).await? {
                    None => {
                        let client = tls::http_client(extra_roots).map_err(bad_transport)?;
                        serve_http(handler, client, http, wiring, lifecycle).await
                    }
                    Some(oauth) => {
                        serve_http(handler, oauth.http_client(), http, wiring, lifecycle).await
                    }
                };
                (served.map_err(bad_transport)?.map_err(handshake)?, None)
            }
        };
        let peer = service.peer().clone();
        let version = peer
            .peer_info()
            .map(|info| info.protocol_version.to_string());
        inner.shared.log(
            LogLevel::Info,
            LogSource::Protocol,
            format!(
                "handshake done, protocol {}",
                version.as_deref().unwrap_or("unknown")
            ),
        );
        // rmcp opens the standalone GET stream of such a session in the background; a server
        // request sent on it before it is open would be lost.
        let standalone = (matches!(inner.spec.transport, TransportSpec::Http(_))
            && peer
                .peer_info()
                .is_some_and(|info| info.protocol_version.has_initialize()))
        .then_some(standalone);
        *lock(&inner.protocol_version) = version;
        let session = Session {
            service,
            child,
            generation,
            tasks,
            listener: None,
        };
        // Listen before the first list, so no change after it goes unseen.
        let listen = if subscription::wanted(&peer) {
            subscription::open(&peer, &inner.shared).await
        } else {
            None
        };
        let stream_open = async {
            if let Some(standalone) = &standalone {
                await_standalone(standalone, &inner.shared, &closed).await;
            }
        };
        let (listed, ()) = tokio::join!(list_tools(&peer), stream_open);
        let tools = match listed {
            Ok(tools) => tools,
            Err(err) => {
                session.abandon().await;
                let error = ConnectError::Handshake {
                    server,
                    reason: format!("tools/list failed: {err}"),
                };
                return Err(match request_challenge(&err) {
                    Some(challenge) => Attempt::Challenged { challenge, error },
                    None => Attempt::Failed(error),
                });
            }
        };
        let mut session = session;
        session.tasks.push(tokio::spawn(keep_deadlines(
            Arc::downgrade(inner),
            closed.clone(),
        )));
        session.listener = listen.map(|listen| {
            subscription::Listener::spawn(
                listen,
                peer.clone(),
                inner.shared.clone(),
                tools_changed.clone(),
                &closed,
            )
        });
        session.tasks.push(self.spawn_refresher(
            peer.clone(),
            tools_changed,
            closed.clone(),
            generation,
        ));
        let link = Link {
            peer,
            closed,
            generation,
            barrier,
        };
        Ok((session, link, tools))
    }

    /// Refreshes the tool list whenever the server says it changed: unscoped, or on the
    /// `subscriptions/listen` stream of a 2026-07-28 session.
    fn spawn_refresher(
        &self,
        peer: Peer<RoleClient>,
        changed: Arc<Notify>,
        closed: CancellationToken,
        generation: u64,
    ) -> JoinHandle<()> {
        let weak = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = changed.notified() => {}
                    () = closed.cancelled() => return,
                }
                // A notification can arrive during the handshake. Refresh only once `connect`
                // has linked this connection and published its first list, so the refresh is
                // neither dropped nor overwritten by that older list.
                if !wait_until_live(&weak, generation, &closed).await {
                    return;
                }
                let Some(inner) = weak.upgrade() else { return };
                match list_tools(&peer).await {
                    Ok(tools) => {
                        if current_generation(&inner) != Some(generation) {
                            return;
                        }
                        if inner
                            .shared
                            .transition(ConnectionState::Connected {
                                tools: tools.clone(),
                            })
                            .is_ok()
                        {
                            inner.shared.log(
                                LogLevel::Info,
                                LogSource::Protocol,
                                format!("tool list changed: {} tools", tools.len()),
                            );
                            inner.shared.events.send(McpEvent::ToolsChanged {
                                server: inner.spec.name.clone(),
                                tools,
                            });
                        }
                    }
                    Err(err) => inner.shared.log(
                        LogLevel::Warning,
                        LogSource::Protocol,
                        format!("refreshing tools after list_changed failed: {err}"),
                    ),
                }
            }
        })
    }

    /// Watches for the peer closing the stream; a loss of the current connection moves to
    /// failed, kills the process group and tells the coordinator.
    fn watch(&self, closed: CancellationToken, generation: u64) {
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        tokio::spawn(async move {
            closed.cancelled().await;
            if let Some(inner) = weak.upgrade() {
                lose(&inner, generation, "the server closed the connection").await;
            }
        });
    }

    /// Checks the server answers: `ping` on sessions that began with `initialize`,
    /// `server/discover` on 2026-07-28 sessions. A failure counts as a lost connection.
    pub async fn check_health(&self, timeout: Duration) -> Result<(), String> {
        let Some(link) = lock(&self.inner.link).clone() else {
            return Err(format!("not connected (it is {})", self.state().name()));
        };
        let modern = link
            .peer
            .peer_info()
            .is_some_and(|info| !info.protocol_version.has_initialize());
        let probe = async {
            if modern {
                link.peer
                    .discover(RequestMetaObject::default())
                    .await
                    .map(|_| ())
            } else {
                link.peer
                    .send_request(ClientRequest::PingRequest(PingRequest::default()))
                    .await
                    .map(|_| ())
            }
        };
        let outcome = match tokio::time::timeout(timeout, probe).await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(err)) => format!("health check failed: {err}"),
            Err(_) => format!("health check got no answer within {timeout:?}"),
        };
        lose(&self.inner, link.generation, &outcome).await;
        Err(outcome)
    }

    /// Closes the connection on purpose: cancels any attempt, closes stdin, waits, sends
    /// SIGTERM, then kills the process group. Ends in `disconnected`.
    pub async fn disconnect(&self) {
        self.cancel_connect();
        let mut slot = self.inner.session.lock().await;
        let link = lock(&self.inner.link).take();
        if let Some(session) = slot.take() {
            session.shut_down(self.inner.options.shutdown_grace).await;
        }
        if let Some(link) = link {
            link.closed.cancel();
        }
        *lock(&self.inner.pid) = None;
        // Disconnected is reachable from every state.
        let _ = self.inner.shared.transition(ConnectionState::Disconnected);
    }

    /// Cancels the call `call_id` if it is in flight (the server gets
    /// `notifications/cancelled`). Returns whether it was found.
    pub fn cancel_call(&self, call_id: &str) -> bool {
        let pending = lock(&self.inner.pending);
        let mut found = false;
        for entry in pending.values().filter(|entry| entry.call_id == call_id) {
            entry.cancel.cancel();
            found = true;
        }
        found
    }
}

/// What one opening wires an HTTP transport to: the close signal, the progress barrier and
/// the standalone stream's outcome.
struct Wiring {
    closed: CancellationToken,
    barrier: Arc<ProgressBarrier>,
    standalone: StandaloneStream,
}

/// Serves `handler` over Streamable HTTP to `http` on `client` (plain, or one that adds OAuth
/// tokens): the transport could not be built (`Err`), or the handshake's outcome.
async fn serve_http<C: StreamableHttpClient + Send + Sync + 'static>(
    handler: Handler,
    client: C,
    http: &HttpSpec,
    wiring: Wiring,
    lifecycle: ClientLifecycleMode,
) -> Result<Result<RunningService<RoleClient, Handler>, ClientInitializeError>, String> {
    let Wiring {
        closed,
        barrier,
        standalone,
    } = wiring;
    let transport = transport::http_with(client, http, closed, barrier, standalone)?;
    Ok(handler.serve_with_lifecycle(transport, lifecycle).await)
}

/// Why one opening of a session failed.
enum Attempt {
    /// For good.
    Failed(ConnectError),
    /// The server asked for authorization; `error` is what to report if it cannot be given.
    Challenged {
        challenge: Challenge,
        error: ConnectError,
    },
}

impl From<ConnectError> for Attempt {
    fn from(error: ConnectError) -> Self {
        Self::Failed(error)
    }
}

/// Expires calls whose deadline passed. Wakes every [`IDLE_TICK`] while no call is pending and
/// at the earliest deadline (at most [`BUSY_TICK`] ahead) while calls are, so a timeout fires
/// at most one idle tick late.
async fn keep_deadlines(weak: Weak<Inner>, closed: CancellationToken) {
    loop {
        let next = {
            let Some(inner) = weak.upgrade() else { return };
            let now = Instant::now();
            let mut pending = lock(&inner.pending);
            let mut earliest: Option<Instant> = None;
            for entry in pending.values_mut() {
                if entry.deadline <= now {
                    entry.timed_out = true;
                    entry.cancel.cancel();
                } else {
                    earliest = Some(earliest.map_or(entry.deadline, |e| e.min(entry.deadline)));
                }
            }
            match earliest {
                Some(deadline) => deadline.min(now + BUSY_TICK),
                None => now + IDLE_TICK,
            }
        };
        tokio::select! {
            () = tokio::time::sleep_until(next.into()) => {}
            () = closed.cancelled() => return,
        }
    }
}

fn current_generation(inner: &Inner) -> Option<u64> {
    lock(&inner.link).as_ref().map(|link| link.generation)
}

/// Waits until connection `generation` is linked and connected. False when it never will be:
/// a newer attempt started, its stream closed, or the connection is gone.
async fn wait_until_live(weak: &Weak<Inner>, generation: u64, closed: &CancellationToken) -> bool {
    loop {
        {
            let Some(inner) = weak.upgrade() else {
                return false;
            };
            if inner.generation.load(Ordering::SeqCst) != generation {
                return false;
            }
            if current_generation(&inner) == Some(generation) && inner.shared.state().is_connected()
            {
                return true;
            }
        }
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(5)) => {}
            () = closed.cancelled() => return false,
        }
    }
}

/// Handles the loss of connection `generation` if it is still the current one.
async fn lose(inner: &Inner, generation: u64, reason: &str) {
    let link = {
        let mut link = lock(&inner.link);
        if link.as_ref().map(|l| l.generation) != Some(generation) {
            return;
        }
        link.take()
    };
    if let Some(link) = link {
        link.closed.cancel();
    }
    inner.shared.log(
        LogLevel::Error,
        LogSource::Protocol,
        format!("connection lost: {reason}"),
    );
    let session = {
        let mut slot = inner.session.lock().await;
        match slot.as_ref() {
            Some(session) if session.generation == generation => slot.take(),
            _ => None,
        }
    };
    if let Some(session) = session {
        session.abandon().await;
    }
    *lock(&inner.pid) = None;
    let failed = inner.shared.transition(ConnectionState::Failed {
        message: reason.to_string(),
        retries: inner.retries.load(Ordering::SeqCst),
    });
    if failed.is_ok()
        && let Some(tx) = lock(&inner.lost).as_ref()
    {
        let _ = tx.send(inner.spec.name.clone());
    }
}

/// Waits until the standalone GET stream's first opening settled (at most
/// [`STANDALONE_STREAM_WAIT`], or until the transport closes) and logs how it ended.
async fn await_standalone(stream: &StandaloneStream, shared: &Shared, closed: &CancellationToken) {
    let outcome = tokio::select! {
        outcome = stream.settled(STANDALONE_STREAM_WAIT) => outcome,
        () = closed.cancelled() => return,
    };
    let (level, message) = match outcome {
        Some(Opening::Open) => (LogLevel::Debug, "standalone SSE stream open".to_string()),
        Some(Opening::NoSession) => (
            LogLevel::Debug,
            "no session id, so no standalone SSE stream".to_string(),
        ),
        Some(Opening::Unsupported) => (
            LogLevel::Info,
            "the server offers no standalone SSE stream (405)".to_string(),
        ),
        Some(Opening::Failed(reason)) => (
            LogLevel::Warning,
            format!("the standalone SSE stream failed to open: {reason}"),
        ),
        Some(Opening::Pending) | None => (
            LogLevel::Warning,
            format!(
                "the standalone SSE stream was not open after {STANDALONE_STREAM_WAIT:?}; \
                 server requests sent on it before it opens may be lost"
            ),
        ),
    };
    shared.log(level, LogSource::Protocol, message);
}

/// Every tool, following `nextCursor` through all pages.
async fn list_tools(peer: &Peer<RoleClient>) -> Result<Vec<ToolInfo>, ServiceError> {
    let tools = peer.list_all_tools().await?;
    Ok(tools.iter().map(tool_info).collect())
}

fn tool_info(tool: &rmcp::model::Tool) -> ToolInfo {
    let wire = serde_json::to_value(tool).unwrap_or(Value::Null);
    ToolInfo {
        name: tool.name.to_string(),
        description: wire
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        input_schema: wire
            .get("inputSchema")
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object"})),
        output_schema: wire.get("outputSchema").cloned(),
        annotations: wire.get("annotations").cloned(),
    }
}
