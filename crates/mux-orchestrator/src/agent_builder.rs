//! [`AgentBuilder`]: how an application describes its agent once.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mux_llm::LlmClient;
use mux_permission::Permissions;
use mux_tool::{ApprovalPolicy, Registry, RegistryError, Resources, Tool, TypedTool};
use serde_json::Value;

use crate::agent_settings::Settings;
use crate::agent_spec::{ContextAt, Spec, ToolsAt};
use crate::context::ContextProvider;
use crate::error::{AgentBuildError, ToolsetError};
use crate::hooks::{Hook, Hooks};
use crate::needs_approval::NeedsApproval;
use crate::session::SessionStore;
use crate::{Agent, OrchestratorConfig, RunLimits};

impl Agent {
    /// A builder over `client` with `model` for every turn. `client.agent(model)`
    /// ([`LlmClientExt`](crate::LlmClientExt)) is the same builder.
    pub fn builder(client: impl LlmClient + 'static, model: impl Into<String>) -> AgentBuilder {
        Self::builder_shared(Arc::new(client), model)
    }

    /// A builder over a shared client with `model` for every turn.
    pub fn builder_shared(client: Arc<dyn LlmClient>, model: impl Into<String>) -> AgentBuilder {
        AgentBuilder::new(client, model.into())
    }
}

/// Describes an [`Agent`]: the model (given to [`Agent::builder`]), instructions, tools,
/// permissions, hooks, MCP servers, limits and session store.
///
/// Tools come in two shapes: fixed ones ([`tool`](Self::tool), [`tools`](Self::tools)), the
/// same in every conversation, and tools built for a root ([`tools_at`](Self::tools_at)),
/// such as mux's built-in file tools confined to the editor session's directory. Without a
/// face the root is [`root`](Self::root), by default the current directory.
pub struct AgentBuilder {
    client: Arc<dyn LlmClient>,
    config: OrchestratorConfig,
    tools: Vec<Arc<dyn Tool>>,
    tools_at: Vec<ToolsAt>,
    contexts: Vec<Arc<dyn ContextProvider>>,
    contexts_at: Vec<ContextAt>,
    permissions: Option<Permissions>,
    settings: Option<Settings>,
    hooks: Hooks,
    store: Option<Arc<dyn SessionStore>>,
    runs: Option<Arc<dyn crate::runs::RunStore>>,
    resources: Resources,
    needs_approval: HashMap<String, NeedsApproval>,
    /// `ask_user` everywhere (`Some(true)`), nowhere (`Some(false)`), or on faces only.
    ask_user: Option<bool>,
    root: Option<PathBuf>,
    problem: Option<RegistryError>,
    /// Where [`builtin_tools`](Self::builtin_tools) goes among `tools_at`, if it was asked
    /// for: its `bash` is built by [`build`](Self::build), from the permission policy.
    #[cfg(feature = "builtin")]
    builtin_at: Option<usize>,
    #[cfg(feature = "mcp")]
    mcp: Option<mux_mcp::Coordinator>,
    #[cfg(feature = "mcp")]
    mcp_owned: Option<Arc<crate::mcp::McpServers>>,
    #[cfg(feature = "mcp")]
    mcp_filter: mux_mcp::McpFilter,
}

impl std::fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("config", &self.config)
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl AgentBuilder {
    pub(crate) fn new(client: Arc<dyn LlmClient>, model: String) -> Self {
        Self {
            client,
            config: OrchestratorConfig::new(model),
            tools: Vec::new(),
            tools_at: Vec::new(),
            contexts: Vec::new(),
            contexts_at: Vec::new(),
            permissions: None,
            settings: None,
            hooks: Hooks::new(),
            store: None,
            runs: None,
            resources: Resources::new(),
            needs_approval: HashMap::new(),
            ask_user: None,
            root: None,
            problem: None,
            #[cfg(feature = "builtin")]
            builtin_at: None,
            #[cfg(feature = "mcp")]
            mcp: None,
            #[cfg(feature = "mcp")]
            mcp_owned: None,
            #[cfg(feature = "mcp")]
            mcp_filter: mux_mcp::McpFilter::All,
        }
    }

    /// The instructions (system prompt).
    pub fn instructions(self, instructions: impl Into<String>) -> Self {
        let instructions = instructions.into();
        self.configure(|config| config.system_prompt(instructions))
    }

    /// Offers a typed tool to the model. A tool that cannot be registered (a name taken
    /// twice) is reported by [`build`](Self::build).
    pub fn tool(mut self, tool: impl TypedTool) -> Self {
        match mux_tool::Typed::new(tool) {
            Ok(tool) => self.tools.push(Arc::new(tool)),
            Err(err) => {
                self.problem.get_or_insert(RegistryError::Spec(err));
            }
        }
        self
    }

    /// Offers tools already built (MCP proxies, a tool shared with another agent, …).
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Offers tools built for each conversation's root: the current directory (or
    /// [`root`](Self::root)) without a face, the session's directory in an editor. `build`
    /// is called for every conversation; an error fails that conversation (and
    /// [`build`](Self::build), for the agent's own root).
    ///
    /// ```
    /// use mux_llm::testing::ScriptedClient;
    /// use mux_orchestrator::Agent;
    /// use mux_tool::builtin::{self, Sandbox};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let agent = Agent::builder(ScriptedClient::new(), "m")
    ///     .tools_at(|root| Ok(builtin::tools(&Sandbox::new(root)?)?))
    ///     .root(dir.path())
    ///     .build()?;
    /// assert!(agent.orchestrator().tools().contains("edit_file"));
    /// # Ok(()) }
    /// ```
    pub fn tools_at(
        mut self,
        build: impl Fn(&Path) -> Result<Vec<Arc<dyn Tool>>, ToolsetError> + Send + Sync + 'static,
    ) -> Self {
        self.tools_at.push(Arc::new(build));
        self
    }

    /// Offers mux's built-in tools (files, search, shell, todo list; see
    /// [`mux_tool::builtin`]) confined to each conversation's root. With a
    /// [`permissions`](Self::permissions) policy, `bash` runs under the policy's
    /// [`bash_policy`](Permissions::bash_policy): the one value that also tells the policy
    /// whether the OS sandbox bounds its commands.
    #[cfg(feature = "builtin")]
    pub fn builtin_tools(mut self) -> Self {
        self.builtin_at.get_or_insert(self.tools_at.len());
        self
    }

    /// Adds a context provider; its content joins the instructions every turn.
    pub fn context(mut self, provider: impl ContextProvider) -> Self {
        self.contexts.push(Arc::new(provider));
        self
    }

    /// Adds a context provider built for each conversation's root.
    pub fn context_at<C: ContextProvider>(
        mut self,
        build: impl Fn(&Path) -> C + Send + Sync + 'static,
    ) -> Self {
        self.contexts_at.push(Arc::new(move |root| {
            Arc::new(build(root)) as Arc<dyn ContextProvider>
        }));
        self
    }

    /// Reads the project's instructions (`AGENTS.md`, `CLAUDE.md` or `.cursorrules`) from
    /// each conversation's root every turn ([`ProjectInstructions`](crate::context::ProjectInstructions)).
    pub fn project_instructions(self) -> Self {
        self.context_at(|root: &Path| crate::context::ProjectInstructions::new(root))
    }

    /// Which calls need approval when no permission policy is set (default: every tool not
    /// annotated read-only). `ApprovalPolicy::Never` runs every tool unasked. With
    /// [`permissions`](Self::permissions) the policy's rules and mode decide instead, and
    /// [`build`](Self::build) refuses any other value than the default rather than ignore it.
    pub fn approval(self, approval: ApprovalPolicy) -> Self {
        self.configure(|config| config.approval(approval))
    }

    /// Decides per call whether `tool` needs approval, from its input (as the OpenAI Agents
    /// SDK's `needs_approval`): `true` asks, and without a face is denied and listed in
    /// [`RunSummary::unapproved`](crate::RunSummary::unapproved); `false` runs it (with a
    /// permission policy, leaves it to the policy). Deny rules still hold, and it replaces
    /// [`approval`](Self::approval) for that tool. A predicate that panics asks.
    pub fn needs_approval(
        mut self,
        tool: impl Into<String>,
        predicate: impl Fn(&Value) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.needs_approval
            .insert(tool.into(), Arc::new(predicate) as NeedsApproval);
        self
    }

    /// A permission policy: its rules and mode decide every call. Each conversation gets a
    /// session scope of its own, anchored at its root.
    pub fn permissions(mut self, permissions: Permissions) -> Self {
        self.permissions = Some(permissions);
        self
    }

    /// The permission policy of a settings file (`{"permissions": {"allow": [..], "deny":
    /// [..], "defaultMode": ..}, "sandbox": {..}}`), read by [`build`](Self::build) once the
    /// agent knows its tools, so a rule may name any of them (`deploy(prod)`, an
    /// `mcp__server__tool`); a rule naming no tool of the agent is an error. The file is the
    /// policy's project scope, where "always" answers for the project are saved; a missing
    /// file is a policy without rules. Instead of [`permissions`](Self::permissions).
    ///
    /// ```
    /// use mux_llm::testing::ScriptedClient;
    /// use mux_orchestrator::{Agent, AgentBuildError};
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let dir = tempfile::tempdir()?;
    /// let settings = dir.path().join("settings.json");
    /// std::fs::write(&settings, r#"{"permissions": {"deny": ["depoly"]}}"#)?;
    /// let err = Agent::builder(ScriptedClient::new(), "m").settings(&settings).build().unwrap_err();
    /// assert!(matches!(err, AgentBuildError::Settings { .. }), "{err}");
    /// # Ok(()) }
    /// ```
    pub fn settings(mut self, file: impl Into<PathBuf>) -> Self {
        self.settings = Some(Settings::File(file.into()));
        self
    }

    /// As [`settings`](Self::settings), from settings already read (the JSON of a
    /// settings file); "always" answers for the project are not saved anywhere.
    pub fn settings_value(mut self, settings: Value) -> Self {
        self.settings = Some(Settings::Value(settings));
        self
    }

    /// Adds a hook to every conversation.
    pub fn hook(self, hook: impl Hook) -> Self {
        self.hooks.add(hook);
        self
    }

    /// Uses a shared hook list (hooks added to it later apply too).
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }

    /// Budgets for every run (tokens, calls, cost, wall time).
    pub fn limits(self, limits: RunLimits) -> Self {
        self.configure(|config| config.limits(limits))
    }

    /// Whether the model gets the `ask_user` tool, to ask the person a question mid-run.
    /// Default: only where someone can answer it, that is in the conversations a face opens
    /// (the web page, the editor, an A2A client: [`Agent::conversation_at`]), not in the
    /// agent's own conversation ([`Agent::prompt`], [`Agent::run`], [`Agent::stream`]), so the
    /// model sees only the tools you gave it. `true` offers it everywhere (a caller of
    /// `stream` answers [`LoopEvent::AwaitingInput`](crate::LoopEvent::AwaitingInput)), `false`
    /// nowhere.
    pub fn ask_user(mut self, offer: bool) -> Self {
        self.ask_user = Some(offer);
        self
    }

    /// Keeps conversations and runs in `store` (one database: [`Store::open`](crate::Store::open)),
    /// the faces' too: a paused approval then survives a restart, and every process on the
    /// store serves every thread.
    pub fn store(mut self, store: &crate::Store) -> Self {
        self.store = Some(store.sessions());
        self.runs = Some(store.runs());
        self
    }

    /// Persists conversations in `store`: the web face's threads and the editor's sessions
    /// too, and [`Agent::session`] resumes from it. Prefer [`store`](Self::store), which keeps
    /// the runs beside them.
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Resources every tool call can reach (each conversation reads them through a layer of
    /// its own).
    pub fn resources(mut self, resources: Resources) -> Self {
        self.resources = resources;
        self
    }

    /// The root without a face: where [`tools_at`](Self::tools_at) tools and project
    /// instructions look (default: the current directory at [`build`](Self::build)).
    pub fn root(mut self, root: impl Into<PathBuf>) -> Self {
        self.root = Some(root.into());
        self
    }

    /// Offers the tools of `coordinator`'s servers (as `mcp__<server>__<tool>` proxies) in
    /// every conversation. You run the coordinator. Replaces an earlier `mcp` or `mcp_servers`.
    #[cfg(feature = "mcp")]
    pub fn mcp(mut self, coordinator: mux_mcp::Coordinator) -> Self {
        self.mcp = Some(coordinator);
        self.mcp_owned = None;
        self
    }

    /// Offers the tools of `servers` in every conversation, and owns them: they stop on
    /// [`Agent::shutdown`] or when the agent and every face holding it are gone. Replaces an
    /// earlier `mcp` or `mcp_servers`.
    #[cfg(feature = "mcp")]
    pub fn mcp_servers(mut self, servers: crate::mcp::McpServers) -> Self {
        self.mcp = Some(servers.coordinator().clone());
        self.mcp_owned = Some(Arc::new(servers));
        self
    }

    /// Offers only the MCP tools `filter` accepts (all by default).
    #[cfg(feature = "mcp")]
    pub fn mcp_filter(mut self, filter: mux_mcp::McpFilter) -> Self {
        self.mcp_filter = filter;
        self
    }

    /// Changes any other loop setting (timeouts, compaction, titles, temperature, …).
    pub fn configure(
        mut self,
        change: impl FnOnce(OrchestratorConfig) -> OrchestratorConfig,
    ) -> Self {
        self.config = change(self.config);
        self
    }

    /// The agent, or why it cannot be built: a tool that could not be registered, tools
    /// that could not be built for the root, settings that cannot be used, or an approval
    /// policy beside a permission policy (which would ignore it).
    pub fn build(self) -> Result<Agent, AgentBuildError> {
        if let Some(err) = self.problem {
            return Err(AgentBuildError::Tool(err));
        }
        let has_policy = self.permissions.is_some() || self.settings.is_some();
        if has_policy && self.config.approval != ApprovalPolicy::UnlessReadOnly {
            return Err(AgentBuildError::ApprovalBesidePermissions(
                self.config.approval,
            ));
        }
        let tools = Registry::new();
        for tool in self.tools {
            tools.register_shared(tool)?;
        }
        let root = self.root.unwrap_or_else(crate::builder::current_dir);
        #[allow(unused_mut)]
        let mut tools_at = self.tools_at;
        let permissions = match (self.permissions, self.settings) {
            (permissions, None) => permissions,
            (Some(_), Some(_)) => return Err(AgentBuildError::SettingsBesidePermissions),
            (None, Some(settings)) => {
                let mut names = tools.names();
                #[cfg(feature = "builtin")]
                if self.builtin_at.is_some() {
                    let builtin: ToolsAt = Arc::new(|root: &Path| builtin_at(root, None));
                    names.extend(tool_names(&builtin, &root)?);
                }
                for build in &tools_at {
                    names.extend(tool_names(build, &root)?);
                }
                if self.ask_user != Some(false) {
                    names.push(crate::ASK_USER.to_owned());
                }
                Some(settings.load(&root, &names)?)
            }
        };
        #[cfg(feature = "builtin")]
        if let Some(at) = self.builtin_at {
            let permissions = permissions.clone();
            let build: ToolsAt =
                Arc::new(move |root: &Path| builtin_at(root, permissions.as_ref()));
            tools_at.insert(at.min(tools_at.len()), build);
        }
        Agent::from_spec(Spec {
            ask_user: self.ask_user,
            client: self.client,
            config: self.config,
            tools,
            tools_at,
            contexts: self.contexts,
            contexts_at: self.contexts_at,
            permissions,
            hooks: self.hooks,
            store: self.store,
            runs: self.runs,
            resources: self.resources,
            needs_approval: Arc::new(self.needs_approval),
            root,
            #[cfg(feature = "mcp")]
            mcp: self.mcp,
            #[cfg(feature = "mcp")]
            mcp_owned: self.mcp_owned,
            #[cfg(feature = "mcp")]
            mcp_filter: self.mcp_filter,
        })
    }
}

/// The names of the tools `build` makes for `root`.
fn tool_names(build: &ToolsAt, root: &Path) -> Result<Vec<String>, AgentBuildError> {
    let tools = build(root).map_err(|source| AgentBuildError::Toolset {
        root: root.to_path_buf(),
        source,
    })?;
    Ok(tools
        .iter()
        .map(|tool| tool.spec().name.to_string())
        .collect())
}

/// mux's built-in tools at `root`, their `bash` under `permissions`' OS sandbox.
#[cfg(feature = "builtin")]
fn builtin_at(
    root: &Path,
    permissions: Option<&Permissions>,
) -> Result<Vec<Arc<dyn Tool>>, ToolsetError> {
    use mux_tool::builtin::{Bash, Sandbox};
    let sandbox = Sandbox::new(root)?;
    let mut tools = mux_tool::builtin::tools(&sandbox)?;
    if let Some(permissions) = permissions {
        let bash: Arc<dyn Tool> = Arc::new(mux_tool::Typed::new(permissions.bash(sandbox)?)?);
        for tool in &mut tools {
            if tool.spec().name.as_str() == <Bash as TypedTool>::NAME {
                *tool = Arc::clone(&bash);
            }
        }
    }
    Ok(tools)
}
