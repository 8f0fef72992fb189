//! The coordinator: every server connection, reconnect policy, health checks, timeouts,
//! snapshots and one event stream.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, Weak};
use std::time::{Duration, SystemTime};

use futures::future::join_all;
use mux_tool::ToolContext;
use rmcp::model::CallToolResult;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::client::ClientHandlers;
use crate::event::EventSender;
use crate::{
    CallError, ConnectError, ConnectionOptions, ConnectionState, Events, PendingCall,
    ReconnectPolicy, ServerConnection, ServerSpec, ToolInfo,
};

/// The default tool-call timeout.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(60);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// How a coordinator runs its servers.
#[derive(Clone, Debug, PartialEq)]
pub struct CoordinatorConfig {
    /// Tool-call timeout unless a server's spec overrides it. Default 60 s.
    pub tool_timeout: Duration,
    /// Connect timeout and shutdown grace for each connection.
    pub connection: ConnectionOptions,
    /// What to do when a connection fails or is lost.
    pub reconnect: ReconnectPolicy,
    /// How often connected servers are checked; `None` disables health checks.
    pub health_interval: Option<Duration>,
    /// How long a health check may take.
    pub health_timeout: Duration,
}

impl Default for CoordinatorConfig {
    fn default() -> Self {
        Self {
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            connection: ConnectionOptions::default(),
            reconnect: ReconnectPolicy::default(),
            health_interval: Some(Duration::from_secs(30)),
            health_timeout: Duration::from_secs(10),
        }
    }
}

/// A server the coordinator could not add.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AddServerError {
    /// Another server already has the name.
    #[error("an MCP server named `{0}` is already configured")]
    Duplicate(String),
    /// The name is empty.
    #[error("an MCP server name must not be empty")]
    EmptyName,
    /// The coordinator was stopped.
    #[error("the MCP coordinator has been stopped")]
    Stopped,
}

/// The outcome of [`Coordinator::start_all_and_wait`], each list sorted by server name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StartReport {
    /// Servers that connected, by name.
    pub connected: Vec<String>,
    /// Servers that failed, with the reason.
    pub failed: Vec<(String, String)>,
}

/// One server in a [`Snapshot`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ServerSnapshot {
    /// The name.
    pub name: String,
    /// The state (with the tools when connected).
    pub state: ConnectionState,
    /// Calls in flight.
    pub pending_calls: Vec<PendingCall>,
    /// The stdio server's process id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The negotiated protocol version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
}

/// The state of every server at one moment, sorted by name.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Snapshot {
    /// The servers.
    pub servers: Vec<ServerSnapshot>,
}

struct Entry {
    connection: ServerConnection,
    /// Held for a whole reconnect sequence; a second request waits for it instead of starting
    /// another (requests coalesce).
    gate: tokio::sync::Mutex<()>,
    tool_timeout: Duration,
}

pub(crate) struct CoordInner {
    config: CoordinatorConfig,
    servers: RwLock<BTreeMap<String, Arc<Entry>>>,
    events: EventSender,
    lost: mpsc::UnboundedSender<String>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    stopped: CancellationToken,
    client: Mutex<Option<Arc<dyn ClientHandlers>>>,
}

/// Runs a set of MCP servers: parallel start, reconnects, health checks, timeouts, and tool
/// proxies that route every call through it. Cloning gives another handle.
///
/// Must be created inside a tokio runtime.
#[derive(Clone)]
pub struct Coordinator {
    inner: Arc<CoordInner>,
}

impl std::fmt::Debug for Coordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Coordinator")
            .field("servers", &self.names())
            .finish_non_exhaustive()
    }
}

impl Coordinator {
    /// A coordinator with no servers. Starts its reconnect supervisor and, when configured,
    /// health checks.
    pub fn new(config: CoordinatorConfig) -> Self {
        let (lost_tx, lost_rx) = mpsc::unbounded_channel();
        let inner = Arc::new(CoordInner {
            config,
            servers: RwLock::new(BTreeMap::new()),
            events: EventSender::new(),
            lost: lost_tx,
            tasks: Mutex::new(Vec::new()),
            stopped: CancellationToken::new(),
            client: Mutex::new(None),
        });
        let supervisor = tokio::spawn(supervise(Arc::downgrade(&inner), lost_rx));
        let mut tasks = vec![supervisor];
        if let Some(interval) = inner.config.health_interval {
            tasks.push(tokio::spawn(check_health(Arc::downgrade(&inner), interval)));
        }
        *lock(&inner.tasks) = tasks;
        Self { inner }
    }

    /// Answers server requests for roots, sampling and elicitation with `handlers`, for every
    /// server added from now on.
    pub fn with_client_handlers(self, handlers: Arc<dyn ClientHandlers>) -> Self {
        *lock(&self.inner.client) = Some(handlers);
        self
    }

    pub(crate) fn from_inner(inner: Arc<CoordInner>) -> Self {
        Self { inner }
    }

    pub(crate) fn downgrade(&self) -> Weak<CoordInner> {
        Arc::downgrade(&self.inner)
    }

    fn servers(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<Entry>>> {
        self.inner
            .servers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn entry(&self, name: &str) -> Option<Arc<Entry>> {
        self.servers().get(name).cloned()
    }

    /// The configured server names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.servers().keys().cloned().collect()
    }

    /// The connection of server `name`.
    pub fn connection(&self, name: &str) -> Option<ServerConnection> {
        self.entry(name).map(|entry| entry.connection.clone())
    }

    /// Subscribes to the events of every server.
    pub fn subscribe(&self) -> Events {
        self.inner.events.subscribe()
    }

    /// Adds a server in the idle state.
    pub fn add(&self, spec: ServerSpec) -> Result<ServerConnection, AddServerError> {
        if self.inner.stopped.is_cancelled() {
            return Err(AddServerError::Stopped);
        }
        if spec.name.trim().is_empty() {
            return Err(AddServerError::EmptyName);
        }
        let mut servers = self
            .inner
            .servers
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if servers.contains_key(&spec.name) {
            return Err(AddServerError::Duplicate(spec.name));
        }
        let tool_timeout = spec.tool_timeout.unwrap_or(self.inner.config.tool_timeout);
        let name = spec.name.clone();
        let connection = ServerConnection::with_events(
            spec,
            self.inner.config.connection,
            self.inner.events.clone(),
        );
        connection.on_lost(self.inner.lost.clone());
        if let Some(handlers) = lock(&self.inner.client).clone() {
            connection.set_client_handlers(handlers);
        }
        servers.insert(
            name,
            Arc::new(Entry {
                connection: connection.clone(),
                gate: tokio::sync::Mutex::new(()),
                tool_timeout,
            }),
        );
        Ok(connection)
    }

    /// Adds every spec and starts connecting them all in parallel, without waiting.
    pub fn start_all(&self, specs: Vec<ServerSpec>) -> Result<(), AddServerError> {
        for spec in specs {
            let connection = self.add(spec)?;
            let this = self.clone();
            let task = tokio::spawn(async move {
                let _ = this.connect_with_policy(connection.name()).await;
            });
            let mut tasks = lock(&self.inner.tasks);
            tasks.retain(|task| !task.is_finished());
            tasks.push(task);
        }
        Ok(())
    }

    /// Adds every spec, connects them all in parallel, and waits until each has connected
    /// or failed its first attempt (each attempt is bounded by its connect timeout).
    pub async fn start_all_and_wait(
        &self,
        specs: Vec<ServerSpec>,
    ) -> Result<StartReport, AddServerError> {
        let mut connections = Vec::with_capacity(specs.len());
        for spec in specs {
            connections.push(self.add(spec)?);
        }
        let results = join_all(connections.iter().map(ServerConnection::connect)).await;
        let mut report = StartReport::default();
        for (connection, result) in connections.iter().zip(results) {
            match result {
                Ok(_) => report.connected.push(connection.name().to_string()),
                Err(err) => report
                    .failed
                    .push((connection.name().to_string(), err.to_string())),
            }
        }
        report.connected.sort();
        report.failed.sort();
        Ok(report)
    }

    /// Connects server `name` once.
    pub async fn connect(&self, name: &str) -> Result<Vec<ToolInfo>, ConnectError> {
        self.known(name)?.connection.connect().await
    }

    /// Cancels server `name`'s connection attempt, if one is running.
    pub fn cancel_connect(&self, name: &str) -> bool {
        self.entry(name)
            .is_some_and(|entry| entry.connection.cancel_connect())
    }

    /// Disconnects server `name` (graceful for stdio; see [`ServerConnection::disconnect`]).
    pub async fn disconnect(&self, name: &str) -> Result<(), ConnectError> {
        self.known(name)?.connection.disconnect().await;
        Ok(())
    }

    /// Reconnects server `name` following the reconnect policy (at least one attempt).
    /// A connected server is disconnected first. Concurrent requests coalesce: a request
    /// made while a reconnect runs waits for it and reports its outcome.
    pub async fn reconnect(&self, name: &str) -> Result<Vec<ToolInfo>, ConnectError> {
        let entry = self.known(name)?;
        let guard = match entry.gate.try_lock() {
            Ok(guard) => guard,
            Err(_) => {
                let _wait = entry.gate.lock().await;
                return outcome(&entry.connection);
            }
        };
        if entry.connection.state().is_connected() {
            entry.connection.disconnect().await;
        }
        let result = self.attempts(&entry, true).await;
        drop(guard);
        result
    }

    /// First connection with the policy's retries (used by `start_all`).
    async fn connect_with_policy(&self, name: &str) -> Result<Vec<ToolInfo>, ConnectError> {
        let entry = self.known(name)?;
        let _guard = entry.gate.lock().await;
        match entry.connection.connect().await {
            Ok(tools) => Ok(tools),
            Err(ConnectError::Cancelled { server }) => Err(ConnectError::Cancelled { server }),
            Err(_) => self.attempts(&entry, false).await,
        }
    }

    /// Runs the policy's attempts. With `at_least_one`, `ReconnectPolicy::None` still makes
    /// one attempt (an explicit request).
    async fn attempts(
        &self,
        entry: &Entry,
        at_least_one: bool,
    ) -> Result<Vec<ToolInfo>, ConnectError> {
        let policy = &self.inner.config.reconnect;
        let connection = &entry.connection;
        let mut max = policy.max_attempts();
        if at_least_one {
            max = max.max(1);
        }
        let mut last = outcome(connection);
        for attempt in 1..=max {
            if self.inner.stopped.is_cancelled() {
                break;
            }
            let state = connection.state();
            if state.is_connected() {
                return Ok(state.tools().to_vec());
            }
            let delay = if at_least_one && attempt == 1 {
                std::time::Duration::ZERO
            } else {
                policy.delay(attempt)
            };
            if matches!(state, ConnectionState::Failed { .. }) {
                let next_at = (!delay.is_zero()).then(|| SystemTime::now() + delay);
                let _ = connection.mark_reconnecting(attempt, max, next_at);
            }
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = self.inner.stopped.cancelled() => break,
            }
            last = connection.connect().await;
            if last.is_ok() || matches!(last, Err(ConnectError::Cancelled { .. })) {
                return last;
            }
        }
        last
    }

    fn known(&self, name: &str) -> Result<Arc<Entry>, ConnectError> {
        self.entry(name).ok_or_else(|| ConnectError::UnknownServer {
            server: name.to_string(),
        })
    }

    /// Calls `tool` on `server` with the server's timeout. Cancelling `cx` cancels the call.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
        cx: &ToolContext,
    ) -> Result<CallToolResult, CallError> {
        let entry = self
            .entry(server)
            .ok_or_else(|| CallError::new(server, tool, crate::CallFailure::UnknownServer))?;
        entry
            .connection
            .call_tool(tool, arguments, cx, entry.tool_timeout)
            .await
    }

    /// Cancels call `call_id` on whichever server runs it. Returns whether it was found.
    pub fn cancel_call(&self, call_id: &str) -> bool {
        self.servers()
            .values()
            .any(|entry| entry.connection.cancel_call(call_id))
    }

    /// Every server's name and current state, by name.
    pub(crate) fn states(&self) -> Vec<(String, ConnectionState)> {
        self.servers()
            .iter()
            .map(|(server, entry)| (server.clone(), entry.connection.state()))
            .collect()
    }

    /// The state of every server.
    pub fn snapshot(&self) -> Snapshot {
        let servers = self
            .servers()
            .values()
            .map(|entry| {
                let connection = &entry.connection;
                ServerSnapshot {
                    name: connection.name().to_string(),
                    state: connection.state(),
                    pending_calls: connection.pending_calls(),
                    pid: connection.pid(),
                    protocol_version: connection.protocol_version(),
                }
            })
            .collect();
        Snapshot { servers }
    }

    /// Stops everything: reconnects and health checks end, and every server is disconnected
    /// (stdio children and their process groups are gone when this returns).
    pub async fn stop_all(&self) {
        self.inner.stopped.cancel();
        let tasks: Vec<_> = lock(&self.inner.tasks).drain(..).collect();
        for task in &tasks {
            task.abort();
        }
        let entries: Vec<_> = self.servers().values().cloned().collect();
        join_all(entries.iter().map(|entry| entry.connection.disconnect())).await;
    }
}

/// The result a coalesced reconnect reports: the current state.
fn outcome(connection: &ServerConnection) -> Result<Vec<ToolInfo>, ConnectError> {
    match connection.state() {
        ConnectionState::Connected { tools } => Ok(tools),
        state => Err(ConnectError::Handshake {
            server: connection.name().to_string(),
            reason: format!("not connected: {state}"),
        }),
    }
}

/// Reconnects servers whose connection was lost, following the policy.
async fn supervise(weak: Weak<CoordInner>, mut lost: mpsc::UnboundedReceiver<String>) {
    while let Some(name) = lost.recv().await {
        let Some(inner) = weak.upgrade() else { return };
        if inner.stopped.is_cancelled() || inner.config.reconnect.max_attempts() == 0 {
            continue;
        }
        let coordinator = Coordinator::from_inner(inner.clone());
        let task = tokio::spawn(async move {
            let Ok(entry) = coordinator.known(&name) else {
                return;
            };
            // A reconnect already running (an explicit request) covers this loss.
            let Ok(_guard) = entry.gate.try_lock() else {
                return;
            };
            let _ = coordinator.attempts(&entry, false).await;
        });
        let mut tasks = lock(&inner.tasks);
        tasks.retain(|task| !task.is_finished());
        tasks.push(task);
    }
}

/// Checks every connected server on an interval; a failed check is a lost connection, which
/// the supervisor reconnects.
async fn check_health(weak: Weak<CoordInner>, interval: Duration) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let Some(inner) = weak.upgrade() else { return };
        if inner.stopped.is_cancelled() {
            return;
        }
        let timeout = inner.config.health_timeout;
        let connections: Vec<ServerConnection> = inner
            .servers
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter(|entry| entry.connection.state().is_connected())
            .map(|entry| entry.connection.clone())
            .collect();
        drop(inner);
        join_all(connections.iter().map(|c| c.check_health(timeout))).await;
    }
}
