//! MCP servers' tools in the loop (feature `mcp`).
//!
//! Two ways in, with explicit ownership:
//!
//! - [`AgentBuilder::mcp`](crate::AgentBuilder::mcp) with a [`Coordinator`] you run: the
//!   agent offers its tools and never starts or stops its servers.
//! - [`AgentBuilder::mcp_servers`](crate::AgentBuilder::mcp_servers) with [`McpServers`]: the
//!   agent owns them and stops them on [`Agent::shutdown`](crate::Agent::shutdown) or when
//!   the agent and every face holding it are gone.
//!
//! Either way, before every model request the loop brings the tool registry up to date with
//! mux-mcp's [`RegistrySync`]: tools of servers that connected, reconnected or sent
//! `tools/list_changed` are offered from that turn on, tools of lost servers disappear, and a
//! [`LoopEvent::ToolsChanged`](crate::LoopEvent::ToolsChanged) tells the face.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use mux_mcp::{
    AddServerError, ConfigError, Coordinator, CoordinatorConfig, RegistrySync, ServerSpec,
    StartReport, SyncReport,
};

/// Why MCP servers could not be started at all. A server that merely fails to connect is not
/// an error: it is listed in [`McpServers::report`] and reported as
/// [`LoopEvent::McpServerFailed`](crate::LoopEvent::McpServerFailed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum McpStartError {
    /// The config file cannot be read or used.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A server spec was refused (an empty or duplicate name).
    #[error(transparent)]
    Server(#[from] AddServerError),
}

/// MCP servers an orchestrator owns: started together, stopped together.
///
/// [`McpServers::start`] connects every server in parallel and waits until each has connected
/// or failed its first attempt, each attempt bounded by
/// [`CoordinatorConfig::connection`]'s connect timeout (30 s by default; a server's own
/// `connectTimeoutMs` overrides it). Failed servers do not fail the start.
///
/// Stopping: [`McpServers::shutdown`] (or
/// [`Agent::shutdown`](crate::Agent::shutdown)) closes each server gracefully
/// and kills its process group if it lingers; dropping `McpServers` without shutting down
/// starts the same stop on the current tokio runtime, and a child whose handle is dropped has
/// its process group killed, so no server outlives its owner.
///
/// ```no_run
/// use mux_llm::testing::ScriptedClient;
/// use mux_mcp::CoordinatorConfig;
/// use mux_orchestrator::{Agent, McpServers};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let servers = McpServers::load(".mcp.json", CoordinatorConfig::default()).await?;
/// for (server, reason) in &servers.report().failed {
///     eprintln!("MCP server {server} did not start: {reason}");
/// }
/// let agent = Agent::builder(ScriptedClient::new(), "m").mcp_servers(servers).build()?;
/// println!("tools: {:?}", agent.orchestrator().tools().names());
/// agent.shutdown().await; // stops the servers; their processes are gone on return
/// # Ok(()) }
/// ```
pub struct McpServers {
    coordinator: Coordinator,
    report: StartReport,
    stopped: AtomicBool,
}

impl std::fmt::Debug for McpServers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServers")
            .field("coordinator", &self.coordinator)
            .field("report", &self.report)
            .finish_non_exhaustive()
    }
}

impl McpServers {
    /// Starts `specs` on a new coordinator and waits for each to connect or fail.
    pub async fn start(
        specs: Vec<ServerSpec>,
        config: CoordinatorConfig,
    ) -> Result<Self, McpStartError> {
        let coordinator = Coordinator::new(config);
        let report = match coordinator.start_all_and_wait(specs).await {
            Ok(report) => report,
            Err(err) => {
                coordinator.stop_all().await;
                return Err(err.into());
            }
        };
        Ok(Self {
            coordinator,
            report,
            stopped: AtomicBool::new(false),
        })
    }

    /// Starts the servers of an `mcpServers` JSON config file (Claude Desktop, Cursor and
    /// VS Code format; see [`mux_mcp::load_config`]).
    pub async fn load(
        path: impl AsRef<Path>,
        config: CoordinatorConfig,
    ) -> Result<Self, McpStartError> {
        let specs = mux_mcp::load_config(path)?;
        Self::start(specs, config).await
    }

    /// The coordinator running the servers.
    pub fn coordinator(&self) -> &Coordinator {
        &self.coordinator
    }

    /// Which servers connected at start and which failed, with the reason.
    pub fn report(&self) -> &StartReport {
        &self.report
    }

    /// Stops every server and waits until their processes are gone. Idempotent.
    pub async fn shutdown(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.coordinator.stop_all().await;
    }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        if self.stopped.load(Ordering::SeqCst) {
            return;
        }
        // Without a runtime, the coordinator's child handles still kill their process groups
        // when they are dropped.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let coordinator = self.coordinator.clone();
            runtime.spawn(async move { coordinator.stop_all().await });
        }
    }
}

/// The orchestrator's link to its MCP servers.
pub(crate) struct McpLink {
    sync: RegistrySync,
    owned: Option<McpServers>,
    /// Servers that failed to start, reported by the first run.
    failed: Vec<(String, String)>,
    failures_reported: AtomicBool,
}

impl McpLink {
    /// Links `coordinator`'s tools (those `filter` accepts) into `tools` and registers them;
    /// `failed` are servers that did not start, for the first run to report.
    pub(crate) fn new(
        coordinator: &Coordinator,
        owned: Option<McpServers>,
        failed: Vec<(String, String)>,
        filter: mux_mcp::McpFilter,
        tools: &mux_tool::Registry,
    ) -> Self {
        let sync = RegistrySync::new(coordinator, tools.clone()).with_filter(filter);
        warn_conflicts(&sync.sync());
        Self {
            sync,
            owned,
            failed,
            failures_reported: AtomicBool::new(false),
        }
    }

    pub(crate) fn coordinator(&self) -> &Coordinator {
        self.sync.coordinator()
    }

    pub(crate) fn owned(&self) -> Option<&McpServers> {
        self.owned.as_ref()
    }

    /// Brings the registry up to date.
    pub(crate) fn sync(&self) -> SyncReport {
        let report = self.sync.sync();
        warn_conflicts(&report);
        report
    }

    /// The servers that failed to start, the first time it is asked.
    pub(crate) fn take_start_failures(&self) -> Vec<(String, String)> {
        if self.failures_reported.swap(true, Ordering::SeqCst) {
            return Vec::new();
        }
        self.failed.clone()
    }

    /// Stops owned servers and removes their tools.
    pub(crate) async fn shutdown(&self) {
        if let Some(servers) = &self.owned {
            servers.shutdown().await;
            self.sync.clear();
        }
    }
}

fn warn_conflicts(report: &SyncReport) {
    for name in &report.conflicts {
        tracing::warn!(
            tool = name,
            "an MCP tool is shadowed by a registered tool of the same name"
        );
    }
}
