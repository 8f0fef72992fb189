//! The front door: an agent built in one expression and prompted in one call. It is the
//! [`Orchestrator`] underneath, not a second loop.

use std::sync::Arc;

use mux_llm::LlmClient;
use mux_permission::Permissions;
use mux_tool::{ApprovalPolicy, Registry, RegistryError, Tool, TypedTool};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::session::SessionStore;
use crate::typed_output;
use crate::{LoopError, Orchestrator, OrchestratorBuilder, OrchestratorConfig, RunSummary};

/// An agent: a model, instructions and tools, prompted with [`prompt`](Self::prompt).
///
/// ```
/// use mux_llm::testing::ScriptedClient;
/// use mux_orchestrator::Agent;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let model = ScriptedClient::new().reply_text("Hello!");
/// let agent = Agent::builder(model).model("any-model").instructions("Be brief.").build()?;
/// assert_eq!(agent.prompt("Hi").await?, "Hello!");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Without a face, nobody can approve a call: tools that are not read-only are denied unless
/// [`AgentBuilder::approval`] says otherwise or a permission policy allows them, and every such
/// denial is listed in [`RunSummary::unapproved`] (see [`run`](Self::run)).
#[derive(Clone, Debug)]
pub struct Agent {
    orchestrator: Orchestrator,
}

/// Builds an [`Agent`]: an [`OrchestratorBuilder`] with the few settings a first agent
/// needs, and typed tools registered as they are added.
pub struct AgentBuilder {
    inner: OrchestratorBuilder,
    tools: Registry,
    problem: Option<RegistryError>,
}

impl std::fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("config", self.inner.config())
            .finish_non_exhaustive()
    }
}

impl Agent {
    /// A builder over `client`.
    pub fn builder(client: impl LlmClient + 'static) -> AgentBuilder {
        Self::builder_shared(Arc::new(client))
    }

    /// A builder over a shared client.
    pub fn builder_shared(client: Arc<dyn LlmClient>) -> AgentBuilder {
        AgentBuilder {
            inner: Orchestrator::builder(client, OrchestratorConfig::new("")),
            tools: Registry::new(),
            problem: None,
        }
    }

    /// Runs `prompt` to the end and returns the final answer's text. The session goes
    /// on: the next prompt sees this one.
    pub async fn prompt(&self, prompt: impl Into<String>) -> Result<String, LoopError> {
        Ok(self.run(prompt).await?.text)
    }

    /// Runs `prompt` to the end and returns everything the run produced: the text, each tool
    /// call, usage, and the calls denied for want of an approver.
    pub async fn run(&self, prompt: impl Into<String>) -> Result<RunSummary, LoopError> {
        self.orchestrator.run_to_completion(prompt).await
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
    /// let agent = Agent::builder(model).model("any-model").build()?;
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
        let orchestrator = &self.orchestrator;
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

    /// The same agent on a copy of its session in the session store.
    pub async fn fork(&self) -> Result<Agent, LoopError> {
        Ok(Agent {
            orchestrator: self.orchestrator.fork().await?,
        })
    }

    /// The orchestrator underneath, for streamed runs ([`Orchestrator::run`]), events and
    /// approvals through a face.
    pub fn orchestrator(&self) -> &Orchestrator {
        &self.orchestrator
    }
}

impl AgentBuilder {
    /// The model every turn uses.
    pub fn model(self, model: impl Into<String>) -> Self {
        let model = model.into();
        self.configure(|config| OrchestratorConfig { model, ..config })
    }

    /// The instructions (system prompt).
    pub fn instructions(self, instructions: impl Into<String>) -> Self {
        let instructions = instructions.into();
        self.configure(|config| config.system_prompt(instructions))
    }

    /// Offers a typed tool to the model. A tool that cannot be registered (a name taken
    /// twice) is reported by [`build`](Self::build).
    pub fn tool(mut self, tool: impl TypedTool) -> Self {
        if let Err(err) = self.tools.register_typed(tool) {
            self.problem.get_or_insert(err);
        }
        self
    }

    /// Offers tools already built (mux's built-in tools, MCP proxies, …).
    pub fn tools(mut self, tools: impl IntoIterator<Item = Arc<dyn Tool>>) -> Self {
        for tool in tools {
            if let Err(err) = self.tools.register_shared(tool) {
                self.problem.get_or_insert(err);
            }
        }
        self
    }

    /// Which calls need approval when no permission policy is set (default: every tool not
    /// annotated read-only). `ApprovalPolicy::Never` runs every tool unasked.
    pub fn approval(self, approval: ApprovalPolicy) -> Self {
        self.configure(|config| config.approval(approval))
    }

    /// Decides per call whether `tool` needs approval, from its input (as the OpenAI Agents
    /// SDK's `needs_approval`): `true` asks, and without a face is denied and listed in
    /// [`RunSummary::unapproved`]; `false` runs it. See
    /// [`OrchestratorBuilder::needs_approval`](crate::OrchestratorBuilder::needs_approval).
    pub fn needs_approval(
        mut self,
        tool: impl Into<String>,
        predicate: impl Fn(&serde_json::Value) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.inner = self.inner.needs_approval(tool, predicate);
        self
    }

    /// A permission policy: its rules and mode decide every call.
    pub fn permissions(mut self, permissions: Permissions) -> Self {
        self.inner = self.inner.permissions(permissions);
        self
    }

    /// Persists the session in `store`.
    pub fn session_store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.inner = self.inner.session_store(store);
        self
    }

    /// Changes any other setting of the loop.
    pub fn configure(
        mut self,
        change: impl FnOnce(OrchestratorConfig) -> OrchestratorConfig,
    ) -> Self {
        self.inner = self.inner.configure(change);
        self
    }

    /// Anything else the orchestrator's builder offers (hooks, context providers, MCP
    /// servers, a cancellation token, …).
    pub fn orchestrator(
        mut self,
        change: impl FnOnce(OrchestratorBuilder) -> OrchestratorBuilder,
    ) -> Self {
        self.inner = change(self.inner);
        self
    }

    /// The agent, or why it cannot be built: no model named, or a tool that could not be
    /// registered.
    pub fn build(self) -> Result<Agent, AgentBuildError> {
        if let Some(err) = self.problem {
            return Err(AgentBuildError::Tool(err));
        }
        if self.inner.config().model.trim().is_empty() {
            return Err(AgentBuildError::NoModel);
        }
        Ok(Agent {
            orchestrator: self.inner.tools(self.tools).build(),
        })
    }
}

/// Why an [`AgentBuilder`] could not build its agent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentBuildError {
    /// No model was named: call [`AgentBuilder::model`].
    #[error("the agent has no model: call AgentBuilder::model(\"...\")")]
    NoModel,
    /// A tool could not be registered.
    #[error("cannot offer a tool to the agent: {0}")]
    Tool(#[from] RegistryError),
}
