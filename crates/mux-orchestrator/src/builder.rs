//! [`ConversationBuilder`]: a new conversation of an [`Agent`](crate::Agent), opened by a face
//! with only what the face adds, then started new or resumed.

use std::path::PathBuf;
use std::sync::Arc;

use mux_llm::LlmClient;
use mux_permission::Permissions;
use mux_tool::{Registry, Resources};
use tokio_util::sync::CancellationToken;

use crate::context::ContextProvider;
use crate::core::Services;
use crate::emitter::Broadcast;
use crate::hooks::Hooks;
use crate::needs_approval::NeedsApprovalMap;
use crate::session::{Session, SessionMeta, SessionStore};
use crate::{LoopError, Orchestrator, OrchestratorConfig};

/// A new conversation of an agent, from [`Agent::conversation_at`](crate::Agent::conversation_at)
/// or [`Agent::conversation_with`](crate::Agent::conversation_with): every setting of the agent,
/// plus what a face adds (its own tools, a cancellation token, context, a store, a loop
/// setting), then [`build`](Self::build) a new session or [`resume`](Self::resume) a stored one.
///
/// What the agent is (model, instructions, tools, permissions, hooks, MCP) is set on
/// [`AgentBuilder`](crate::AgentBuilder), never here.
pub struct ConversationBuilder {
    pub(crate) client: Arc<dyn LlmClient>,
    pub(crate) config: OrchestratorConfig,
    pub(crate) root: PathBuf,
    pub(crate) tools: Registry,
    pub(crate) permissions: Option<Permissions>,
    pub(crate) contexts: Vec<Arc<dyn ContextProvider>>,
    pub(crate) store: Option<Arc<dyn SessionStore>>,
    pub(crate) hooks: Hooks,
    pub(crate) resources: Resources,
    pub(crate) cancel: CancellationToken,
    pub(crate) needs_approval: NeedsApprovalMap,
    /// The coordinator whose tools are offered, and the servers this conversation owns.
    #[cfg(feature = "mcp")]
    pub(crate) mcp: Option<(mux_mcp::Coordinator, Option<crate::mcp::McpServers>)>,
    /// MCP servers that failed to start, reported by this conversation's first run.
    #[cfg(feature = "mcp")]
    pub(crate) mcp_failed: Vec<(String, String)>,
    #[cfg(feature = "mcp")]
    pub(crate) mcp_filter: mux_mcp::McpFilter,
}

impl std::fmt::Debug for ConversationBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConversationBuilder")
            .field("config", &self.config)
            .field("root", &self.root)
            .field("tools", &self.tools.names())
            .finish_non_exhaustive()
    }
}

impl ConversationBuilder {
    /// Adds a face's own `tools` (the web page's frontend tools) to the agent's, each
    /// replacing a tool of the same name.
    pub fn add_tools(self, tools: &Registry) -> Self {
        for name in self.tools.replace_from(tools) {
            tracing::warn!(tool = %name, "a face's tool replaces the agent's tool of the same name");
        }
        self
    }

    /// Adds context of the face's own; its content joins the instructions every turn.
    pub fn add_context(mut self, provider: impl ContextProvider) -> Self {
        self.contexts.push(Arc::new(provider));
        self
    }

    /// A parent token: cancelling it cancels every run of this conversation.
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// Keeps this conversation in the face's session store rather than the agent's.
    pub fn stored_in(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Changes this conversation's loop settings, which start as the agent's: a face's own
    /// rule (`prompts_need_store`), or a runtime's model and name for one of its agents.
    pub fn reconfigure(
        mut self,
        change: impl FnOnce(OrchestratorConfig) -> OrchestratorConfig,
    ) -> Self {
        self.config = change(self.config);
        self
    }

    /// Offers the tools of MCP servers the face brought (an editor's), owned by this
    /// conversation: they stop on [`Orchestrator::shutdown`]. Replaces the agent's MCP
    /// servers in this conversation (see [`current_mcp`](Self::current_mcp)).
    #[cfg(feature = "mcp")]
    pub fn face_mcp_servers(mut self, servers: crate::mcp::McpServers) -> Self {
        self.mcp_failed = servers.report().failed.clone();
        self.mcp = Some((servers.coordinator().clone(), Some(servers)));
        self
    }

    /// This conversation's permission policy, a session scope of its own at its root; a face
    /// whose modes need a policy gets the default every face shares
    /// ([`Permissions::unset`] at the root) when the agent runs without one.
    pub fn policy_for_face(&mut self) -> Permissions {
        self.permissions
            .get_or_insert_with(|| Permissions::unset(&self.root))
            .clone()
    }

    /// The agent's MCP coordinator, if it has one.
    #[cfg(feature = "mcp")]
    pub fn current_mcp(&self) -> Option<&mux_mcp::Coordinator> {
        self.mcp.as_ref().map(|(coordinator, _)| coordinator)
    }

    /// This conversation's resources: a layer of its own over the agent's, where a face puts
    /// what only this conversation reaches.
    pub fn current_resources(&self) -> &Resources {
        &self.resources
    }

    fn services(self) -> Services {
        if self.config.ask_user {
            // Replacing keeps an application's own `ask_user` from failing the build.
            self.tools.replace_from(crate::ask_user::registry());
        }
        let broadcast = Broadcast::new(self.config.broadcast_capacity);
        #[cfg(feature = "mcp")]
        let mcp = self.mcp.map(|(coordinator, owned)| {
            let failed = self.mcp_failed;
            crate::mcp::McpLink::new(&coordinator, owned, failed, self.mcp_filter, &self.tools)
        });
        Services {
            client: self.client,
            config: self.config,
            tools: self.tools,
            permissions: self.permissions.map(Arc::new),
            contexts: self.contexts,
            store: self.store,
            hooks: self.hooks,
            resources: self.resources,
            broadcast,
            // A child, so `Orchestrator::shutdown` never cancels the caller's token.
            cancel: self.cancel.child_token(),
            needs_approval: self.needs_approval,
            #[cfg(feature = "mcp")]
            mcp,
        }
    }

    /// The conversation on a new, empty session.
    pub fn build(self) -> Orchestrator {
        Orchestrator::from_parts(self.services(), SessionMeta::new(), Vec::new(), false)
    }

    /// The conversation that continues session `id` from the session store.
    pub async fn resume(self, id: &str) -> Result<Orchestrator, LoopError> {
        let Some(store) = self.store.clone() else {
            return Err(LoopError::NoSessionStore {
                operation: "resume a session",
            });
        };
        let session = store.load(id).await?;
        Ok(self.resume_session(session))
    }

    /// The conversation that continues `session`, already loaded from the session store
    /// (what [`resume`](Self::resume) does after its load).
    pub fn resume_session(self, session: Session) -> Orchestrator {
        let orchestrator =
            Orchestrator::from_parts(self.services(), session.meta, session.messages, true);
        orchestrator.core.lock().calls = session.calls;
        orchestrator
    }

    /// The conversation on a new, empty session of metadata `meta` (an id the caller chose,
    /// say). Its first write creates the session in the store, and fails with
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
