//! [`AcpAgent`]: what an application gives the face (serving it is in `serve.rs`).

use std::path::PathBuf;
use std::sync::Arc;

use mux_mcp::CoordinatorConfig;
use mux_orchestrator::session::SessionStore;
use mux_orchestrator::{Agent, ConversationBuilder};
use mux_permission::{Remember, Scope};

/// What the editor asked for when it opened a session, handed to the [`SessionFactory`].
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SessionSetup {
    /// The session's working directory: the root of its sandbox and permissions. It is the
    /// client's `cwd` resolved (absolute, symbolic links followed), an existing directory, and
    /// neither `/`, a home directory nor a directory holding one unless the agent
    /// [allows broad roots](AcpAgent::allow_broad_roots).
    pub cwd: PathBuf,
}

/// Opens an editor session's conversation: an [`Agent`] does (the documented way), and so
/// does any `Fn(&SessionSetup) -> Result<ConversationBuilder, String>`; called for every
/// `session/new` and `session/load`.
///
/// The face adds the rest: the editor's MCP servers, the session store, a fresh session
/// scope on the permission policy (where modes and "always" answers go; a policy with no
/// rules at the session's root when there is none), the editor's files as a resource, and a
/// passive observer that notes why the model stopped.
pub trait SessionFactory: Send + Sync + 'static {
    /// The builder for a session rooted at `setup.cwd`; an error fails the request with its
    /// message.
    fn session(&self, setup: &SessionSetup) -> Result<ConversationBuilder, String>;

    /// Where sessions are kept when the face is given no store: the agent's session store,
    /// if it has one.
    fn session_store(&self) -> Option<Arc<dyn SessionStore>> {
        None
    }
}

impl SessionFactory for Agent {
    fn session(&self, setup: &SessionSetup) -> Result<ConversationBuilder, String> {
        self.conversation_at(&setup.cwd)
            .map_err(|err| err.to_string())
    }

    fn session_store(&self) -> Option<Arc<dyn SessionStore>> {
        Agent::session_store(self).cloned()
    }
}

impl<F> SessionFactory for F
where
    F: Fn(&SessionSetup) -> Result<ConversationBuilder, String> + Send + Sync + 'static,
{
    fn session(&self, setup: &SessionSetup) -> Result<ConversationBuilder, String> {
        self(setup)
    }
}

/// An authentication method that means "the key is in the agent's environment".
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EnvKey {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) variable: String,
}

/// A mux agent served to an editor over the Agent Client Protocol (v1).
///
/// The face is a thin adapter: each ACP session is one mux [`Orchestrator`] conversation,
/// loop events become `session/update` notifications, approvals become
/// `session/request_permission`, and `session/cancel` cancels the run. See the crate docs for
/// every method and update it supports.
///
/// [`Orchestrator`]: mux_orchestrator::Orchestrator
pub struct AcpAgent {
    pub(crate) factory: Arc<dyn SessionFactory>,
    pub(crate) store: Option<Arc<dyn SessionStore>>,
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) env_keys: Vec<EnvKey>,
    pub(crate) context_window: u64,
    pub(crate) mcp: CoordinatorConfig,
    pub(crate) commands: Vec<crate::commands::Command>,
    pub(crate) always: Remember,
    pub(crate) max_line: usize,
    pub(crate) allow_broad_roots: bool,
}

impl AcpAgent {
    /// `agent` served to editors (an [`Agent`], or any [`SessionFactory`]): each editor
    /// session is a conversation of it rooted at the session's directory, with the editor's
    /// MCP servers. Sessions are kept in the agent's session store, if it has one.
    pub fn new(agent: impl SessionFactory) -> Self {
        Self {
            store: agent.session_store(),
            factory: Arc::new(agent),
            name: "mux".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            env_keys: Vec::new(),
            context_window: 200_000,
            mcp: CoordinatorConfig::default(),
            commands: Vec::new(),
            always: Remember::exact(Scope::Session),
            max_line: crate::framing::DEFAULT_MAX_LINE,
            allow_broad_roots: false,
        }
    }

    /// The name and version the agent gives in `initialize`.
    pub fn info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.name = name.into();
        self.version = version.into();
        self
    }

    /// Keeps sessions in `store` rather than the agent's: `session/list` lists them and
    /// `session/load` replays them (and `initialize` advertises `loadSession`).
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Offers an authentication method `id` meaning "set `variable` in the agent's
    /// environment"; `authenticate` with it succeeds when the variable is set.
    pub fn env_key_auth(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        variable: impl Into<String>,
    ) -> Self {
        self.env_keys.push(EnvKey {
            id: id.into(),
            name: name.into(),
            variable: variable.into(),
        });
        self
    }

    /// The model's context window in tokens, reported as `size` in `usage_update`
    /// (200,000 by default).
    pub fn context_window(mut self, tokens: u64) -> Self {
        self.context_window = tokens;
        self
    }

    /// How the MCP servers an editor passes in `session/new` are run (timeouts, reconnects).
    pub fn mcp_config(mut self, config: CoordinatorConfig) -> Self {
        self.mcp = config;
        self
    }

    /// Where an `allow_always` answer records its rule (the narrowest rule covering the call):
    /// the session scope, in memory, by default. `Remember::exact(Scope::Project).persisted()`
    /// records it in the project's settings file, when the policy has one.
    pub fn always_allow_in(mut self, remember: Remember) -> Self {
        self.always = remember;
        self
    }

    /// Offers `prompt` as the slash command `/name` (sent to the editor with
    /// `available_commands_update` when a session opens). A prompt starting with `/name`
    /// becomes `prompt`, with `$ARGUMENTS` replaced by the rest of the line (or the rest
    /// appended when `prompt` has no `$ARGUMENTS`).
    pub fn command(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        prompt: impl Into<String>,
    ) -> Self {
        self.commands.push(crate::commands::Command {
            name: name.into(),
            description: description.into(),
            prompt: prompt.into(),
        });
        self
    }

    /// Lets sessions open in broad roots: a `cwd` of `/`, a home directory (`$HOME`, `/root`,
    /// any `/home/*`) or a directory holding one, after symbolic links are resolved. By
    /// default `session/new` and `session/load` refuse them with invalid params, since the
    /// session's tools could then read and write everything there. A `cwd` that is relative,
    /// missing or not a directory is refused either way.
    pub fn allow_broad_roots(mut self, allow: bool) -> Self {
        self.allow_broad_roots = allow;
        self
    }

    /// The longest input line [`serve_stdio`](Self::serve_stdio) and
    /// [`serve_io`](Self::serve_io) accept, in bytes (64 MiB by default). A longer line is
    /// answered with an invalid-request error and skipped as it is read, never held whole.
    pub fn max_line_bytes(mut self, bytes: usize) -> Self {
        self.max_line = bytes;
        self
    }
}
