//! The description of an agent ([`Spec`]) that every face opens its conversations from.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mux_llm::LlmClient;
use mux_permission::Permissions;
use mux_tool::{ApprovalPolicy, Registry, Resources, Tool};
use tokio_util::sync::CancellationToken;

use crate::context::ContextProvider;
use crate::error::{AgentBuildError, ToolsetError};
use crate::hooks::Hooks;
use crate::needs_approval::NeedsApprovalMap;
use crate::session::SessionStore;
use crate::{ConversationBuilder, OrchestratorConfig};

/// Tools built for a root.
pub(crate) type ToolsAt =
    Arc<dyn Fn(&Path) -> Result<Vec<Arc<dyn Tool>>, ToolsetError> + Send + Sync>;

/// A context provider built for a root.
pub(crate) type ContextAt = Arc<dyn Fn(&Path) -> Arc<dyn ContextProvider> + Send + Sync>;

/// The description of an agent, shared by its conversations and every face's.
pub(crate) struct Spec {
    pub(crate) client: Arc<dyn LlmClient>,
    pub(crate) config: OrchestratorConfig,
    /// The fixed tools, registered once: every conversation shares their entries.
    pub(crate) tools: Registry,
    pub(crate) tools_at: Vec<ToolsAt>,
    pub(crate) contexts: Vec<Arc<dyn ContextProvider>>,
    pub(crate) contexts_at: Vec<ContextAt>,
    pub(crate) permissions: Option<Permissions>,
    pub(crate) hooks: Hooks,
    pub(crate) store: Option<Arc<dyn SessionStore>>,
    /// The run store beside `store` (from [`AgentBuilder::store`](crate::AgentBuilder::store)),
    /// for the faces.
    pub(crate) runs: Option<Arc<dyn crate::runs::RunStore>>,
    pub(crate) resources: Resources,
    pub(crate) needs_approval: NeedsApprovalMap,
    /// [`AgentBuilder::ask_user`](crate::AgentBuilder::ask_user): `None` offers it on faces only.
    pub(crate) ask_user: Option<bool>,
    pub(crate) root: PathBuf,
    #[cfg(feature = "mcp")]
    pub(crate) mcp: Option<mux_mcp::Coordinator>,
    #[cfg(feature = "mcp")]
    pub(crate) mcp_owned: Option<Arc<crate::mcp::McpServers>>,
    #[cfg(feature = "mcp")]
    pub(crate) mcp_filter: mux_mcp::McpFilter,
}

impl Spec {
    /// The fixed tools and those built for `root`. A name offered twice is an error.
    pub(crate) fn tools_at(&self, root: &Path) -> Result<Registry, AgentBuildError> {
        let registry = Registry::new();
        registry.register_from(&self.tools)?;
        for build in &self.tools_at {
            let tools = build(root).map_err(|source| AgentBuildError::Toolset {
                root: root.to_path_buf(),
                source,
            })?;
            for tool in tools {
                registry.register_shared(tool)?;
            }
        }
        Ok(registry)
    }

    /// A conversation's builder at `root` with the agent's tools for it, for a face.
    pub(crate) fn builder_at(&self, root: &Path) -> Result<ConversationBuilder, AgentBuildError> {
        Ok(self.builder_with(root, self.tools_at(root)?))
    }

    /// The builder of one of the agent's own conversations (no face: `ask_user` only when
    /// asked for).
    pub(crate) fn own_builder(&self) -> Result<ConversationBuilder, AgentBuildError> {
        let mut builder = self.builder_at(&self.root)?;
        builder.config.ask_user = self.ask_user.unwrap_or(false);
        Ok(builder)
    }

    /// A conversation's builder at `root` with `tools`.
    pub(crate) fn builder_with(&self, root: &Path, tools: Registry) -> ConversationBuilder {
        let permissions = match &self.permissions {
            Some(permissions) => Some(permissions.new_session_at(root)),
            // No policy: the shared default, anchored at this conversation's root.
            None if self.config.approval == ApprovalPolicy::UnlessReadOnly => {
                Some(Permissions::unset(root))
            }
            None => None,
        };
        let contexts = self.contexts.iter().cloned();
        ConversationBuilder {
            client: Arc::clone(&self.client),
            config: OrchestratorConfig {
                ask_user: self.ask_user.unwrap_or(true),
                ..self.config.clone()
            },
            root: root.to_path_buf(),
            tools,
            permissions,
            contexts: contexts
                .chain(self.contexts_at.iter().map(|context| context(root)))
                .collect(),
            store: self.store.clone(),
            hooks: self.hooks.clone(),
            // A layer per conversation: what a face adds stays in its conversation.
            resources: self.resources.child(),
            cancel: CancellationToken::new(),
            needs_approval: Arc::clone(&self.needs_approval),
            #[cfg(feature = "mcp")]
            mcp: self.mcp.clone().map(|coordinator| (coordinator, None)),
            #[cfg(feature = "mcp")]
            mcp_filter: self.mcp_filter.clone(),
            #[cfg(feature = "mcp")]
            mcp_failed: Vec::new(),
        }
    }
}
