//! Building an [`Orchestrator`]: its services, then a new or resumed session.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use mux_llm::LlmClient;
use mux_permission::Permissions;
use mux_tool::{ApprovalPolicy, Registry, Resources};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::context::ContextProvider;
use crate::core::Services;
use crate::emitter::Broadcast;
use crate::hooks::{Hook, Hooks};
use crate::needs_approval::NeedsApproval;
use crate::session::{Session, SessionMeta, SessionStore};
use crate::{LoopError, Orchestrator, OrchestratorConfig};

/// Builds an [`Orchestrator`].
pub struct OrchestratorBuilder {
    client: Arc<dyn LlmClient>,
    config: OrchestratorConfig,
    tools: Registry,
    permissions: Option<Permissions>,
    contexts: Vec<Arc<dyn ContextProvider>>,
    store: Option<Arc<dyn SessionStore>>,
    hooks: Hooks,
    resources: Resources,
    cancel: CancellationToken,
    needs_approval: HashMap<String, NeedsApproval>,
    #[cfg(feature = "mcp")]
    mcp: Option<(mux_mcp::Coordinator, Option<crate::mcp::McpServers>)>,
    #[cfg(feature = "mcp")]
    mcp_filter: mux_mcp::McpFilter,
}

impl std::fmt::Debug for OrchestratorBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OrchestratorBuilder")
            .field("config", &self.config)
            .field("tools", &self.tools.names())
            .finish_non_exhaustive()
    }
}

impl Orchestrator {
    /// A builder with `client` and `config`.
    pub fn builder(client: Arc<dyn LlmClient>, config: OrchestratorConfig) -> OrchestratorBuilder {
        OrchestratorBuilder::new(client, config)
    }
}

impl OrchestratorBuilder {
    pub(crate) fn new(client: Arc<dyn LlmClient>, config: OrchestratorConfig) -> Self {
        Self {
            client,
            config,
            tools: Registry::new(),
            permissions: None,
            contexts: Vec::new(),
            store: None,
            hooks: Hooks::new(),
            resources: Resources::new(),
            cancel: CancellationToken::new(),
            needs_approval: HashMap::new(),
            #[cfg(feature = "mcp")]
            mcp: None,
            #[cfg(feature = "mcp")]
            mcp_filter: mux_mcp::McpFilter::All,
        }
    }

    /// The tools the model may call. The orchestrator adds `ask_user` to this registry unless
    /// [`OrchestratorConfig::ask_user`] is off.
    pub fn tools(mut self, tools: Registry) -> Self {
        self.tools = tools;
        self
    }

    /// The permission policy. Without one (and with the default
    /// [`ApprovalPolicy::UnlessReadOnly`](mux_tool::ApprovalPolicy::UnlessReadOnly)), the
    /// conversation gets [`Permissions::unset`] at the current directory: read-only tools run,
    /// every other call asks, and "always" answers become its session rules.
    pub fn permissions(mut self, permissions: Permissions) -> Self {
        self.permissions = Some(permissions);
        self
    }

    /// Adds a context provider; its content joins the system prompt every turn.
    pub fn context(mut self, provider: impl ContextProvider) -> Self {
        self.contexts.push(Arc::new(provider));
        self
    }

    /// Adds a shared context provider.
    pub fn context_shared(mut self, provider: Arc<dyn ContextProvider>) -> Self {
        self.contexts.push(provider);
        self
    }

    /// Adds `tools` to the registry, each replacing a tool of the same name: how a face adds
    /// its own tools (the web page's frontend tools) to an agent's.
    pub fn add_tools(self, tools: &Registry) -> Self {
        for name in self.tools.replace_from(tools) {
            tracing::warn!(tool = %name, "a face's tool replaces the agent's tool of the same name");
        }
        self
    }

    /// The permission policy set so far, if any.
    pub fn current_permissions(&self) -> Option<&Permissions> {
        self.permissions.as_ref()
    }

    /// The MCP coordinator set so far ([`mcp`](Self::mcp) or [`mcp_servers`](Self::mcp_servers)), if any.
    #[cfg(feature = "mcp")]
    pub fn current_mcp(&self) -> Option<&mux_mcp::Coordinator> {
        self.mcp.as_ref().map(|(coordinator, _)| coordinator)
    }

    /// The resources set so far.
    pub fn current_resources(&self) -> &Resources {
        &self.resources
    }

    /// Persists the session in `store`.
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Adds a hook.
    pub fn hook(self, hook: impl Hook) -> Self {
        self.hooks.add(hook);
        self
    }

    /// Uses a shared hook list (hooks added to it later apply too).
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Resources every tool call can reach.
    pub fn resources(mut self, resources: Resources) -> Self {
        self.resources = resources;
        self
    }

    /// A parent token: cancelling it cancels every run of this orchestrator.
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Offers the tools of `coordinator`'s servers (as `mcp__<server>__<tool>` proxies),
    /// kept current before every model request. You run the coordinator: the orchestrator
    /// never starts or stops its servers. Replaces an earlier `mcp` or `mcp_servers`.
    #[cfg(feature = "mcp")]
    pub fn mcp(mut self, coordinator: mux_mcp::Coordinator) -> Self {
        self.mcp = Some((coordinator, None));
        self
    }

    /// Offers the tools of `servers` and takes ownership of them: they stop on
    /// [`Orchestrator::shutdown`] or when the last clone of the orchestrator is dropped.
    /// Servers that failed to start are reported once, as [`LoopEvent::McpServerFailed`](crate::LoopEvent::McpServerFailed) at
    /// the start of the first run. Replaces an earlier `mcp` or `mcp_servers`.
    #[cfg(feature = "mcp")]
    pub fn mcp_servers(mut self, servers: crate::mcp::McpServers) -> Self {
        self.mcp = Some((servers.coordinator().clone(), Some(servers)));
        self
    }

    /// Offers only the MCP tools `filter` accepts (all by default), for example
    /// `McpFilter::Spec(ToolFilter::ReadOnly)` or one of a [`mux_mcp::ToolModes`]' filters.
    #[cfg(feature = "mcp")]
    pub fn mcp_filter(mut self, filter: mux_mcp::McpFilter) -> Self {
        self.mcp_filter = filter;
        self
    }

    /// Changes the loop's configuration.
    pub fn configure(
        mut self,
        change: impl FnOnce(OrchestratorConfig) -> OrchestratorConfig,
    ) -> Self {
        self.config = change(self.config);
        self
    }

    /// The loop's configuration so far.
    pub fn config(&self) -> &OrchestratorConfig {
        &self.config
    }

    /// Decides per call whether `tool` needs approval, from its input: `true` asks the face
    /// (deny rules still hold), `false` runs it unasked, or with a permission policy leaves it
    /// to the policy. It replaces [`OrchestratorConfig::approval`] for that tool. A predicate
    /// that panics asks.
    pub fn needs_approval(
        mut self,
        tool: impl Into<String>,
        predicate: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.needs_approval
            .insert(tool.into(), Arc::new(predicate) as NeedsApproval);
        self
    }

    fn services(self) -> Services {
        if self.config.ask_user {
            // Replacing keeps an application's own `ask_user` from failing the build.
            self.tools.replace_from(crate::ask_user::registry());
        }
        let broadcast = Broadcast::new(self.config.broadcast_capacity);
        let permissions = self.permissions.or_else(|| {
            (self.config.approval == ApprovalPolicy::UnlessReadOnly)
                .then(|| Permissions::unset(current_dir()))
        });
        #[cfg(feature = "mcp")]
        let mcp = self.mcp.map(|(coordinator, owned)| {
            crate::mcp::McpLink::new(&coordinator, owned, self.mcp_filter, &self.tools)
        });
        Services {
            client: self.client,
            config: self.config,
            tools: self.tools,
            permissions,
            contexts: self.contexts,
            store: self.store,
            hooks: self.hooks,
            resources: self.resources,
            broadcast,
            // A child, so `Orchestrator::shutdown` never cancels the caller's token.
            cancel: self.cancel.child_token(),
            needs_approval: Arc::new(self.needs_approval),
            #[cfg(feature = "mcp")]
            mcp,
        }
    }

    /// Builds an orchestrator with a new, empty session.
    pub fn build(self) -> Orchestrator {
        Orchestrator::from_parts(self.services(), SessionMeta::new(), Vec::new(), false)
    }

    /// Builds an orchestrator that continues session `id` from the session store.
    pub async fn resume(self, id: &str) -> Result<Orchestrator, LoopError> {
        let Some(store) = self.store.clone() else {
            return Err(LoopError::NoSessionStore {
                operation: "resume a session",
            });
        };
        let session = store.load(id).await?;
        Ok(self.resume_session(session))
    }

    /// Builds an orchestrator that continues `session`, already loaded from the session store
    /// (what [`resume`](Self::resume) does after its load).
    pub fn resume_session(self, session: Session) -> Orchestrator {
        let orchestrator =
            Orchestrator::from_parts(self.services(), session.meta, session.messages, true);
        orchestrator.core.lock().calls = session.calls;
        orchestrator
    }

    /// Builds an orchestrator with a new, empty session of metadata `meta` (an id the caller
    /// chose, say). Its first write creates the session in the store, and fails with
    /// [`SessionError::AlreadyExists`](crate::session::SessionError::AlreadyExists) when
    /// another session of that id exists.
    pub fn build_session(self, meta: SessionMeta) -> Orchestrator {
        Orchestrator::from_parts(self.services(), meta, Vec::new(), false)
    }
}

/// The current directory, or `.` when it cannot be read.
pub(crate) fn current_dir() -> PathBuf {
    std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
}
