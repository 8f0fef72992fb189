//! The runtime: builds agents over shared services, keeps the registry of running ones, and
//! links subagents to their parents.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::Duration;

use mux_orchestrator::{Agent, Hooks, LoopError, LoopInput, OrchestratorConfig, Run};
use mux_tool::{BoxFuture, Registry, Typed};
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::handle::{AgentShared, Job};
use crate::task::{Delegator, TASK, TaskTool};
use crate::{AgentDefinition, AgentError, AgentEvent, AgentHandle, AgentId, AgentState, RunStatus};

/// The session metadata key holding a subagent's parent link.
pub const PARENT_KEY: &str = "mux_agents.parent";
/// The session metadata key holding an agent's subagent links.
pub const SUBAGENTS_KEY: &str = "mux_agents.subagents";

/// Which conversation a new agent starts with.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum AgentSession {
    /// A new, empty session.
    #[default]
    New,
    /// Continue this session from the runtime's session store.
    Resume(String),
}

pub(crate) struct RuntimeShared {
    pub(crate) agent: Agent,
    tools: Registry,
    max_depth: u32,
    definitions: RwLock<BTreeMap<String, AgentDefinition>>,
    agents: Mutex<HashMap<AgentId, AgentHandle>>,
    next_id: AtomicU64,
    root: CancellationToken,
    configure: Option<Arc<dyn Fn(OrchestratorConfig) -> OrchestratorConfig + Send + Sync>>,
}

/// Runs agents described by one [`Agent`]: its client, tools, permission policy, hooks,
/// session store and loop settings, with each [`AgentDefinition`] picking a model, a prompt
/// and a subset of the tools.
///
/// Cheap to clone. Every agent gets the global, user and project permission rules of the
/// agent's policy (shared handles: a rule added there applies to every agent at once) and a
/// session scope of its own.
///
/// ```
/// use mux_agents::{AgentDefinition, AgentRuntime, AgentSession};
/// use mux_llm::testing::ScriptedClient;
/// use mux_orchestrator::Agent;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let agent = Agent::builder(ScriptedClient::new().reply_text("4"), "model").build().unwrap();
/// let runtime = AgentRuntime::builder(agent).build();
/// let math = runtime.spawn(AgentDefinition::new("math"), AgentSession::New).await?;
/// let mut run = math.prompt("2 + 2?")?;
/// assert_eq!(run.wait().await?.text, "4");
/// runtime.shutdown_all();
/// runtime.wait_all(std::time::Duration::from_secs(5)).await?;
/// assert_eq!(runtime.count(), 0);
/// # Ok::<(), mux_agents::AgentError>(()) }).unwrap();
/// ```
#[derive(Clone)]
pub struct AgentRuntime {
    pub(crate) shared: Arc<RuntimeShared>,
}

/// Builds an [`AgentRuntime`].
pub struct AgentRuntimeBuilder {
    agent: Agent,
    max_depth: u32,
    definitions: BTreeMap<String, AgentDefinition>,
    configure: Option<Arc<dyn Fn(OrchestratorConfig) -> OrchestratorConfig + Send + Sync>>,
}

impl AgentRuntimeBuilder {
    /// How deep subagents may nest (default 3).
    pub fn max_depth(mut self, depth: u32) -> Self {
        self.max_depth = depth;
        self
    }

    /// Registers a definition the `task` tool can delegate to.
    pub fn definition(mut self, definition: AgentDefinition) -> Self {
        self.definitions.insert(definition.name.clone(), definition);
        self
    }

    /// Adjusts every agent's loop configuration (timeouts, capacities) after the definition
    /// is applied.
    pub fn configure(
        mut self,
        configure: impl Fn(OrchestratorConfig) -> OrchestratorConfig + Send + Sync + 'static,
    ) -> Self {
        self.configure = Some(Arc::new(configure));
        self
    }

    /// The runtime.
    pub fn build(self) -> AgentRuntime {
        AgentRuntime {
            shared: Arc::new(RuntimeShared {
                // The agent's own conversation's registry: its tools at its root, and the
                // MCP tools as they come and go.
                tools: self.agent.orchestrator().tools().clone(),
                agent: self.agent,
                max_depth: self.max_depth,
                definitions: RwLock::new(self.definitions),
                agents: Mutex::new(HashMap::new()),
                next_id: AtomicU64::new(1),
                root: CancellationToken::new(),
                configure: self.configure,
            }),
        }
    }
}

impl AgentRuntime {
    /// A builder over `agent`: its model is the default of definitions that name none, and
    /// its instructions the prompt of definitions that have none.
    pub fn builder(agent: Agent) -> AgentRuntimeBuilder {
        AgentRuntimeBuilder {
            agent,
            max_depth: 3,
            definitions: BTreeMap::new(),
            configure: None,
        }
    }

    /// The subagent depth limit.
    pub fn max_depth(&self) -> u32 {
        self.shared.max_depth
    }

    /// The hooks every agent shares (the agent's).
    pub fn hooks(&self) -> &Hooks {
        self.shared.agent.hooks()
    }

    /// The agent the runtime's agents are described by.
    pub fn agent(&self) -> &Agent {
        &self.shared.agent
    }

    /// Registers (or replaces) a definition the `task` tool can delegate to.
    pub fn add_definition(&self, definition: AgentDefinition) {
        self.shared
            .definitions
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(definition.name.clone(), definition);
    }

    /// The registered definitions, by name.
    pub fn definitions(&self) -> Vec<AgentDefinition> {
        Delegator::definitions(&*self.shared)
    }

    /// The definition named `name`.
    pub fn definition(&self, name: &str) -> Result<AgentDefinition, AgentError> {
        Delegator::definition(&*self.shared, name)
    }

    /// Starts a top-level agent.
    pub async fn spawn(
        &self,
        definition: AgentDefinition,
        session: AgentSession,
    ) -> Result<AgentHandle, AgentError> {
        self.spawn_with_tools(definition, session, Registry::new())
            .await
    }

    /// Starts a top-level agent with `extra` tools on top of those its definition selects
    /// (a planner's `finish_plan`, say). An extra tool replaces a runtime tool of the same name.
    pub async fn spawn_with_tools(
        &self,
        definition: AgentDefinition,
        session: AgentSession,
        extra: Registry,
    ) -> Result<AgentHandle, AgentError> {
        let token = self.shared.root.child_token();
        self.start(definition, session, None, token, &self.shared.tools, extra)
            .await
    }

    /// Starts a subagent of `parent`: it uses a subset of the parent's tools, is cancelled with
    /// it, and the link is recorded in both sessions' metadata ([`PARENT_KEY`] in the child's,
    /// [`SUBAGENTS_KEY`] in the parent's).
    pub async fn spawn_subagent(
        &self,
        parent: &AgentHandle,
        definition: AgentDefinition,
        session: AgentSession,
    ) -> Result<AgentHandle, AgentError> {
        self.spawn_subagent_with_tools(parent, definition, session, Registry::new())
            .await
    }

    /// [`spawn_subagent`](Self::spawn_subagent) with `extra` tools on top of those the
    /// definition selects from the parent's.
    pub async fn spawn_subagent_with_tools(
        &self,
        parent: &AgentHandle,
        definition: AgentDefinition,
        session: AgentSession,
        extra: Registry,
    ) -> Result<AgentHandle, AgentError> {
        let depth = parent.depth() + 1;
        if depth > self.shared.max_depth {
            return Err(AgentError::DepthLimit {
                depth,
                max: self.shared.max_depth,
            });
        }
        if parent.state() == AgentState::Done {
            return Err(AgentError::Exited(parent.id().clone()));
        }
        let token = parent.cancellation().child_token();
        let child = self
            .start(
                definition,
                session,
                Some(parent),
                token,
                parent.orchestrator().tools(),
                extra,
            )
            .await?;
        if let Err(err) = link(parent, &child).await {
            child.shutdown();
            return Err(err);
        }
        Ok(child)
    }

    /// A subagent of `parent` when there is one, a top-level agent otherwise.
    pub(crate) async fn spawn_under(
        &self,
        parent: Option<&AgentHandle>,
        definition: AgentDefinition,
        extra: Registry,
    ) -> Result<AgentHandle, AgentError> {
        match parent {
            Some(parent) => {
                self.spawn_subagent_with_tools(parent, definition, AgentSession::New, extra)
                    .await
            }
            None => {
                self.spawn_with_tools(definition, AgentSession::New, extra)
                    .await
            }
        }
    }

    async fn start(
        &self,
        definition: AgentDefinition,
        session: AgentSession,
        parent: Option<&AgentHandle>,
        cancel: CancellationToken,
        available: &Registry,
        extra: Registry,
    ) -> Result<AgentHandle, AgentError> {
        let shared = &self.shared;
        let id = AgentId(format!(
            "agent-{}",
            shared.next_id.fetch_add(1, Ordering::Relaxed)
        ));
        let depth = parent.map_or(0, |p| p.depth() + 1);

        let tools = Registry::new();
        for tool in available.view(definition.tools.clone()).list() {
            let spec = tool.spec();
            let name = spec.name.as_str();
            if name != TASK && name != mux_orchestrator::ASK_USER {
                // Names are unique in `available`, so this cannot clash.
                let _ = tools.register_shared(tool);
            }
        }
        for tool in extra.list() {
            let _ = tools.replace(tool);
        }
        if definition.can_delegate && depth < shared.max_depth {
            let delegator: Arc<dyn Delegator> = Arc::clone(shared) as Arc<dyn Delegator>;
            let task = TaskTool::new(Arc::downgrade(&delegator), id.clone());
            if let Ok(task) = Typed::new(task) {
                let _ = tools.replace(Arc::new(task));
            }
        }

        let base = shared.agent.config();
        let mut config = OrchestratorConfig {
            model: definition
                .model
                .clone()
                .unwrap_or_else(|| base.model.clone()),
            ..base.clone()
        }
        .max_iterations(definition.max_iterations)
        .name(definition.name.clone());
        if let Some(prompt) = &definition.system_prompt {
            config = config.system_prompt(prompt.clone());
        }
        if let Some(configure) = &shared.configure {
            config = configure(config);
        }
        let builder = shared
            .agent
            .conversation_with(tools)
            .reconfigure(|_| config)
            .cancellation(cancel.clone());
        let orchestrator = match session {
            AgentSession::New => builder.build(),
            AgentSession::Resume(session_id) => builder.resume(&session_id).await?,
        };

        let (jobs, jobs_rx) = mpsc::unbounded_channel();
        let (events, _) = broadcast::channel(1_024);
        let (state, _) = watch::channel(AgentState::Idle);
        let handle = AgentHandle {
            shared: Arc::new(AgentShared {
                id: id.clone(),
                name: definition.name.clone(),
                depth,
                parent: parent.map(|p| p.id().clone()),
                orchestrator,
                jobs,
                events,
                state,
                cancel,
                current: Mutex::new(None),
                links: tokio::sync::Mutex::new(()),
            }),
        };
        shared.agents().insert(id, handle.clone());
        tokio::spawn(agent_loop(
            handle.clone(),
            jobs_rx,
            Arc::downgrade(&self.shared),
        ));
        Ok(handle)
    }

    /// The running agent `id`.
    pub fn get(&self, id: &str) -> Option<AgentHandle> {
        self.shared.get(id)
    }

    /// The running agents, in id order.
    pub fn list(&self) -> Vec<AgentHandle> {
        let mut agents: Vec<_> = self.shared.agents().values().cloned().collect();
        agents.sort_by_key(|a| {
            a.id()
                .as_str()
                .trim_start_matches("agent-")
                .parse::<u64>()
                .unwrap_or(u64::MAX)
        });
        agents
    }

    /// How many agents are running.
    pub fn count(&self) -> usize {
        self.shared.agents().len()
    }

    /// Sends `input` to agent `id`'s run in progress: how a face answers a subagent's approval
    /// request ([`AgentEvent::Subagent`] carries the id). Returns false when the agent is gone
    /// or idle.
    pub async fn send(&self, id: &str, input: LoopInput) -> bool {
        match self.get(id) {
            Some(agent) => agent.send(input).await,
            None => false,
        }
    }

    /// Shuts every agent down.
    pub fn shutdown_all(&self) {
        for agent in self.list() {
            agent.shutdown();
        }
    }

    /// Waits up to `timeout` for agent `id` to exit; an unknown id has already exited.
    pub async fn wait_for(&self, id: &str, timeout: Duration) -> Result<(), AgentError> {
        match self.get(id) {
            Some(agent) => agent.wait_timeout(timeout).await,
            None => Ok(()),
        }
    }

    /// Waits up to `timeout` for every agent to exit.
    pub async fn wait_all(&self, timeout: Duration) -> Result<(), AgentError> {
        let agents = self.list();
        tokio::time::timeout(timeout, async {
            for agent in agents {
                agent.wait().await;
            }
        })
        .await
        .map_err(|_| AgentError::Timeout(timeout))
    }
}

impl std::fmt::Debug for AgentRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRuntime")
            .field("model", &self.shared.agent.config().model)
            .field("agents", &self.count())
            .field("max_depth", &self.shared.max_depth)
            .finish_non_exhaustive()
    }
}

impl RuntimeShared {
    fn agents(&self) -> std::sync::MutexGuard<'_, HashMap<AgentId, AgentHandle>> {
        self.agents.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn read_definitions(
        &self,
    ) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, AgentDefinition>> {
        self.definitions
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn get(&self, id: &str) -> Option<AgentHandle> {
        self.agents().get(&AgentId(id.to_owned())).cloned()
    }

    pub(crate) fn runtime(self: &Arc<Self>) -> AgentRuntime {
        AgentRuntime {
            shared: Arc::clone(self),
        }
    }
}

impl Delegator for RuntimeShared {
    fn definitions(&self) -> Vec<AgentDefinition> {
        self.read_definitions().values().cloned().collect()
    }

    fn definition(&self, name: &str) -> Result<AgentDefinition, AgentError> {
        let definitions = self.read_definitions();
        definitions
            .get(name)
            .cloned()
            .ok_or_else(|| AgentError::UnknownDefinition {
                name: name.to_owned(),
                known: definitions.keys().cloned().collect::<Vec<_>>().join(", "),
            })
    }

    fn agent(&self, id: &str) -> Option<AgentHandle> {
        self.get(id)
    }

    fn spawn_child<'a>(
        self: Arc<Self>,
        parent: &'a AgentHandle,
        definition: AgentDefinition,
    ) -> BoxFuture<'a, Result<AgentHandle, AgentError>> {
        Box::pin(async move {
            self.runtime()
                .spawn_subagent(parent, definition, AgentSession::New)
                .await
        })
    }

    fn hooks(&self) -> &Hooks {
        self.agent.hooks()
    }
}

impl Drop for RuntimeShared {
    /// The last runtime handle is gone: shut every agent down.
    fn drop(&mut self) {
        self.root.cancel();
    }
}

/// Records the parent/child link in both sessions.
async fn link(parent: &AgentHandle, child: &AgentHandle) -> Result<(), AgentError> {
    let entry = json!({
        "agent_id": child.id(),
        "agent": child.name(),
        "session_id": child.session_id(),
    });
    child
        .orchestrator()
        .set_session_extra(
            PARENT_KEY,
            json!({
                "agent_id": parent.id(),
                "agent": parent.name(),
                "session_id": parent.session_id(),
            }),
        )
        .await?;
    let _guard = parent.shared.links.lock().await;
    let mut links = match parent.orchestrator().session().extra.get(SUBAGENTS_KEY) {
        Some(Value::Array(links)) => links.clone(),
        _ => Vec::new(),
    };
    if !links.contains(&entry) {
        links.push(entry);
    }
    parent
        .orchestrator()
        .set_session_extra(SUBAGENTS_KEY, Value::Array(links))
        .await?;
    Ok(())
}

/// The agent's task: runs queued prompts one at a time until shut down, then leaves the
/// registry.
async fn agent_loop(
    agent: AgentHandle,
    mut jobs: mpsc::UnboundedReceiver<Job>,
    runtime: Weak<RuntimeShared>,
) {
    let cancel = agent.shared.cancel.clone();
    loop {
        let job = tokio::select! {
            biased;
            () = cancel.cancelled() => break,
            job = jobs.recv() => match job {
                Some(job) => job,
                None => break,
            },
        };
        run_job(&agent, job).await;
    }
    jobs.close();
    while let Ok(job) = jobs.try_recv() {
        job.status.send_replace(RunStatus::Cancelled);
        let _ = job.reply.send(Err(AgentError::Cancelled));
    }
    // Leave the registry first, so whoever sees `Done` sees the agent gone.
    if let Some(runtime) = runtime.upgrade() {
        runtime.agents().remove(agent.id());
    }
    agent.shared.state.send_replace(AgentState::Done);
}

async fn run_job(agent: &AgentHandle, job: Job) {
    if job.cancel.is_cancelled() {
        job.status.send_replace(RunStatus::Cancelled);
        let _ = job.reply.send(Err(AgentError::Cancelled));
        return;
    }
    let Run {
        mut events,
        input,
        handle,
    } = match match job.parent {
        Some(parent) => agent.orchestrator().run_under(job.prompt, parent),
        None => agent.orchestrator().run(job.prompt),
    } {
        Ok(run) => run,
        Err(err) => {
            job.status.send_replace(RunStatus::Failed);
            let _ = job.reply.send(Err(err.into()));
            return;
        }
    };
    agent.shared.state.send_replace(AgentState::Running);
    job.status.send_replace(RunStatus::Running);
    *agent
        .shared
        .current
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Some((input, handle.cancellation().clone()));

    // The job's token and the run's are both children of the agent's; link them.
    let run_cancel = handle.cancellation().clone();
    let job_cancel = job.cancel.clone();
    let cancel_link = tokio::spawn(async move {
        tokio::select! {
            () = job_cancel.cancelled() => run_cancel.cancel(),
            () = run_cancel.cancelled() => {}
        }
    });
    while let Some(event) = events.recv().await {
        agent.emit(AgentEvent::Loop(event));
    }
    let outcome = handle.wait().await;
    cancel_link.abort();
    *agent
        .shared
        .current
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = None;
    let (status, outcome) = match outcome {
        Ok(summary) => (RunStatus::Finished, Ok(summary)),
        Err(LoopError::Cancelled) => (RunStatus::Cancelled, Err(AgentError::Cancelled)),
        Err(err) => (RunStatus::Failed, Err(err.into())),
    };
    if !agent.shared.cancel.is_cancelled() {
        agent.shared.state.send_replace(AgentState::Idle);
    }
    job.status.send_replace(status);
    let _ = job.reply.send(outcome);
}
