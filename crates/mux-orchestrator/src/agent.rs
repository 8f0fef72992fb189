//! The front door: an agent described once (model, instructions, tools, permissions, hooks,
//! MCP, limits, store) and prompted in one call, or handed to a face (web, editor, runtime),
//! which opens its own sessions of it. It is the [`Orchestrator`] underneath, not a second loop.

use std::path::Path;
use std::sync::Arc;

use mux_llm::LlmClient;
use mux_permission::Permissions;
use mux_tool::Registry;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::agent_spec::Spec;
use crate::hooks::Hooks;
use crate::session::SessionStore;
use crate::typed_output;
use crate::{
    AgentBuildError, ConversationBuilder, LoopError, Orchestrator, OrchestratorConfig, Run,
    RunSummary,
};

/// An agent: a model, instructions and tools, prompted with [`prompt`](Self::prompt), or
/// served on a face (`AguiRouter::new(agent)`, `AcpAgent::new(agent)`,
/// `AgentRuntime::builder(agent)`).
///
/// ```
/// use mux_llm::testing::ScriptedClient;
/// use mux_orchestrator::Agent;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let model = ScriptedClient::new().reply_text("Hello!");
/// let agent = Agent::builder(model, "any-model").instructions("Be brief.").build()?;
/// assert_eq!(agent.prompt("Hi").await?, "Hello!");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// The value is a description plus one conversation of its own (the one `prompt`, `run` and
/// `prompt_typed` continue). Cloning is cheap and shares both. A face opens a new
/// conversation per thread or editor session with [`conversation_at`](Self::conversation_at).
///
/// Defaults, the same on every face: read-only tools run; any other call asks where a face
/// can ask (the web page, the editor). Without a face nobody can approve a call, so it is
/// denied unless [`AgentBuilder::approval`](crate::AgentBuilder::approval) or a permission rule allows it, and every such
/// denial is listed in [`RunSummary::unapproved`] (see [`run`](Self::run)).
#[derive(Clone)]
pub struct Agent {
    spec: Arc<Spec>,
    conversation: Orchestrator,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.spec.config.model)
            .field("root", &self.spec.root)
            .field("session", &self.conversation.session().id)
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// The agent with its own conversation, built at its root; its first run reports the
    /// agent's MCP servers that failed to start.
    pub(crate) fn from_spec(spec: Spec) -> Result<Agent, AgentBuildError> {
        let spec = Arc::new(spec);
        #[allow(unused_mut)]
        let mut own = spec.own_builder()?;
        #[cfg(feature = "mcp")]
        if let Some(servers) = &spec.mcp_owned {
            own.mcp_failed = servers.report().failed.clone();
        }
        let conversation = own.build();
        Ok(Agent { spec, conversation })
    }

    /// Runs `prompt` to the end and returns the final answer's text. The session goes
    /// on: the next prompt sees this one.
    ///
    /// The text alone cannot say that something went wrong, so a run stopped by a limit is
    /// [`LoopError::LimitReached`] and one that had calls denied for want of an approver is
    /// [`LoopError::Unapproved`] (each with the run's summary, its partial text included);
    /// [`run`](Self::run) reports both in its summary instead.
    pub async fn prompt(&self, prompt: impl Into<String>) -> Result<String, LoopError> {
        let summary = self.run(prompt).await?;
        if let Some(limit) = summary.limit.clone() {
            return Err(LoopError::LimitReached {
                limit,
                summary: Box::new(summary),
            });
        }
        if !summary.unapproved.is_empty() {
            return Err(LoopError::Unapproved {
                calls: summary.unapproved.clone(),
                summary: Box::new(summary),
            });
        }
        Ok(summary.text)
    }

    /// Runs `prompt` to the end and returns everything the run produced: the text, each tool
    /// call, usage, and the calls denied for want of an approver.
    pub async fn run(&self, prompt: impl Into<String>) -> Result<RunSummary, LoopError> {
        self.conversation.run_to_completion(prompt).await
    }

    /// Starts `prompt` on the agent's own conversation and hands back the run as it goes:
    /// its events, where to send answers (approvals, `ask_user` replies, cancel), and its
    /// handle. The caller is then the face: a call that needs approval asks it with
    /// [`LoopEvent::ApprovalRequired`](crate::LoopEvent::ApprovalRequired) instead of being
    /// denied. Read the events (the channel is bounded; the loop waits while it is full).
    ///
    /// ```
    /// use mux_llm::testing::ScriptedClient;
    /// use mux_orchestrator::{Agent, LoopEvent, Run};
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let agent = Agent::builder(ScriptedClient::new().reply_text("Hi there."), "m").build()?;
    /// let Run { mut events, handle, .. } = agent.stream("Hello")?;
    /// let mut shown = String::new();
    /// while let Some(event) = events.recv().await {
    ///     if let LoopEvent::TextDelta { text } = event {
    ///         shown.push_str(&text);
    ///     }
    /// }
    /// assert_eq!(shown, handle.wait().await?.text);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stream(&self, prompt: impl Into<String>) -> Result<Run, LoopError> {
        self.conversation.run(prompt)
    }

    /// Runs `prompt` and reads the answer as a `T`: the model is asked for JSON matching
    /// `T`'s schema, through each provider's structured output (OpenAI `json_schema`, Gemini
    /// `responseJsonSchema`, Anthropic a forced output tool). A reply that does not validate
    /// goes back to the model once with what was wrong; a second miss is
    /// [`LoopError::InvalidOutput`].
    ///
    /// ```
    /// use mux_llm::testing::ScriptedClient;
    /// use mux_orchestrator::Agent;
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Capital {
    ///     country: String,
    ///     city: String,
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let model = ScriptedClient::new().reply_text(r#"{"country": "Peru", "city": "Lima"}"#);
    /// let agent = Agent::builder(model, "any-model").build()?;
    /// let capital: Capital = agent.prompt_typed("The capital of Peru?").await?;
    /// assert_eq!(capital.city, "Lima");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn prompt_typed<T: JsonSchema + DeserializeOwned>(
        &self,
        prompt: impl Into<String>,
    ) -> Result<T, LoopError> {
        let schema = typed_output::schema_of::<T>();
        let orchestrator = &self.conversation;
        let reply = orchestrator
            .run_unattended(prompt.into(), Some(schema.clone()))
            .await?
            .text;
        let problem = match typed_output::read(&schema, &reply) {
            Ok(value) => return Ok(value),
            Err(problem) => problem,
        };
        let correction = typed_output::correction(&schema, &problem);
        let reply = orchestrator
            .run_unattended(correction, Some(schema.clone()))
            .await?
            .text;
        typed_output::read(&schema, &reply).map_err(|problem| LoopError::InvalidOutput {
            schema: schema.name,
            problem,
            reply,
        })
    }

    /// The same agent on stored session `id`: its conversation goes on from the session
    /// store ([`AgentBuilder::session_store`](crate::AgentBuilder::session_store)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use mux_llm::testing::ScriptedClient;
    /// use mux_orchestrator::Agent;
    /// use mux_orchestrator::session::MemorySessionStore;
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
    /// let model = ScriptedClient::new().reply_text("Noted.").reply_text("You said 42.");
    /// let agent = Agent::builder(model, "m").session_store(Arc::new(MemorySessionStore::new())).build()?;
    /// agent.prompt("Remember 42.").await?;
    /// let id = agent.orchestrator().session().id;
    ///
    /// let resumed = agent.session(&id).await?;
    /// assert_eq!(resumed.prompt("What did I say?").await?, "You said 42.");
    /// assert_eq!(resumed.orchestrator().messages().len(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub async fn session(&self, id: &str) -> Result<Agent, LoopError> {
        let builder = self.spec.own_builder()?;
        Ok(Agent {
            spec: Arc::clone(&self.spec),
            conversation: builder.resume(id).await?,
        })
    }

    /// The same agent on a new, empty conversation.
    pub fn new_session(&self) -> Agent {
        Agent {
            spec: Arc::clone(&self.spec),
            conversation: self.conversation.new_session(),
        }
    }

    /// The same agent on a copy of its session in the session store.
    pub async fn fork(&self) -> Result<Agent, LoopError> {
        Ok(Agent {
            spec: Arc::clone(&self.spec),
            conversation: self.conversation.fork().await?,
        })
    }

    /// The orchestrator of this agent's own conversation: its session, messages and
    /// subscriptions (a streamed run is [`stream`](Self::stream)).
    pub fn orchestrator(&self) -> &Orchestrator {
        &self.conversation
    }

    /// A new conversation of this agent rooted at `root`, with every setting of the agent:
    /// its tools (those added with [`AgentBuilder::tools_at`](crate::AgentBuilder::tools_at)
    /// built for `root`), a fresh session scope of its permissions anchored at `root`, its
    /// hooks, context, MCP servers, store and limits. A face adds its own (frontend tools, a
    /// cancellation token) and builds or resumes it.
    pub fn conversation_at(&self, root: &Path) -> Result<ConversationBuilder, AgentBuildError> {
        self.spec.builder_at(root)
    }

    /// [`conversation_at`](Self::conversation_at) the agent's root with `tools` instead of
    /// the agent's: for a runtime that picks each agent's tools itself.
    pub fn conversation_with(&self, tools: Registry) -> ConversationBuilder {
        self.spec.builder_with(&self.spec.root, tools)
    }

    /// The tools this agent offers at `root`: the fixed ones and those built for `root`.
    pub fn tools_at(&self, root: &Path) -> Result<Registry, AgentBuildError> {
        self.spec.tools_at(root)
    }

    /// The root used without a face ([`AgentBuilder::root`](crate::AgentBuilder::root); default: the current directory
    /// when the agent was built).
    pub fn root(&self) -> &Path {
        &self.spec.root
    }

    /// The loop settings every conversation starts from (model, instructions, limits, …).
    pub fn config(&self) -> &OrchestratorConfig {
        &self.spec.config
    }

    /// The model client.
    pub fn client(&self) -> &Arc<dyn LlmClient> {
        &self.spec.client
    }

    /// The permission policy, if one was set.
    pub fn permissions(&self) -> Option<&Permissions> {
        self.spec.permissions.as_ref()
    }

    /// The session store, if one was set.
    pub fn session_store(&self) -> Option<&Arc<dyn SessionStore>> {
        self.spec.store.as_ref()
    }

    /// The run store, if one was set with [`AgentBuilder::store`](crate::AgentBuilder::store).
    pub fn run_store(&self) -> Option<&Arc<dyn crate::runs::RunStore>> {
        self.spec.runs.as_ref()
    }

    /// The hooks every conversation shares; hooks added here apply from the next call on.
    pub fn hooks(&self) -> &Hooks {
        &self.spec.hooks
    }

    /// Stops this agent: cancels the runs of its own conversation and, with the `mcp`
    /// feature, stops the MCP servers it owns ([`AgentBuilder::mcp_servers`](crate::AgentBuilder::mcp_servers)). Conversations a
    /// face opened are the face's to stop.
    pub async fn shutdown(&self) {
        self.conversation.shutdown().await;
        #[cfg(feature = "mcp")]
        if let Some(servers) = &self.spec.mcp_owned {
            servers.shutdown().await;
        }
    }
}
