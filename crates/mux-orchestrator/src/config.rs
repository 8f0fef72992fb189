//! How a loop runs: model, limits, concurrency, timeouts, compaction, titles.

use std::time::Duration;

use mux_tool::ApprovalPolicy;

use crate::compaction::CompactionConfig;
use crate::limits::RunLimits;

/// Which tool calls of one turn run at the same time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolParallelism {
    /// Consecutive read-only calls run together; every other call runs alone, in order.
    #[default]
    ReadOnly,
    /// Every call of a turn runs together (up to the concurrency limit).
    All,
    /// One call at a time.
    Sequential,
}

/// The loop's settings. Start from [`OrchestratorConfig::new`] and adjust.
#[derive(Clone, Debug, PartialEq)]
pub struct OrchestratorConfig {
    /// The model every turn uses.
    pub model: String,
    /// Output limit per model call.
    pub max_tokens: u32,
    /// The system prompt (context providers add to it every turn).
    pub system_prompt: Option<String>,
    /// Model calls allowed per run before it stops with an error. Default 50.
    pub max_iterations: u32,
    /// Tool calls running at once. Default [`mux_tool::DEFAULT_CONCURRENCY`] (16), the
    /// executor's own.
    pub tool_concurrency: usize,
    /// Which calls of a turn may run together.
    pub parallelism: ToolParallelism,
    /// Per-call tool timeout. Default 120 s.
    pub tool_timeout: Duration,
    /// Identical consecutive failures of one call that stop the run. Default 3.
    pub failure_threshold: u32,
    /// How long to wait for an approval before denying; `None` waits until cancelled.
    pub approval_timeout: Option<Duration>,
    /// How long a run that is otherwise over keeps trying to write what it held while the
    /// session store was unreachable, before it fails with
    /// [`LoopError::Unwritten`](crate::LoopError::Unwritten). Default 30 s.
    pub store_outage: Duration,
    /// Compaction, when enabled.
    pub compaction: Option<CompactionConfig>,
    /// Generate a title after the first reply, with this model (`None`: the run's model).
    pub title: Option<TitleConfig>,
    /// Capacity of the run's event channel; the loop waits when it is full.
    pub event_capacity: usize,
    /// Capacity of the broadcast channel for subscribers, made at the first
    /// [`subscribe`](crate::Orchestrator::subscribe): a conversation nobody subscribes to
    /// allocates none of it.
    pub broadcast_capacity: usize,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Thinking budget in tokens, for models that think.
    pub thinking_budget: Option<u32>,
    /// Register the `ask_user` tool in this conversation. An agent sets it per conversation
    /// from [`AgentBuilder::ask_user`](crate::AgentBuilder::ask_user) (faces on, its own
    /// conversation off, unless told); a value set with `configure` is replaced.
    pub ask_user: bool,
    /// A prompt the session store does not take ends its run before the model sees it, and
    /// leaves the conversation (it is not held for a later write). For faces that must not
    /// acknowledge a prompt the store has not taken (the web and A2A faces set it). Default
    /// false: an unreachable store does not stop a run, its records are held.
    pub prompts_need_store: bool,
    /// Without a permission policy: which calls need a face's approval. Default
    /// [`ApprovalPolicy::UnlessReadOnly`]. With a policy, its rules and mode decide.
    pub approval: ApprovalPolicy,
    /// Budgets for every run (tokens, calls, cost, wall time). Default: none.
    pub limits: RunLimits,
    /// The agent's name, for traces (`invoke_agent {name}`, `gen_ai.agent.name`).
    pub name: Option<String>,
    /// Record prompts, replies and tool arguments and results on the trace spans
    /// (`gen_ai.input.messages`, `gen_ai.output.messages`, `gen_ai.tool.call.arguments`,
    /// `gen_ai.tool.call.result`). Off by default: they may hold secrets and personal data.
    pub capture_content: bool,
}

/// Title generation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TitleConfig {
    /// A cheaper model for the title; `None` uses the run's model.
    pub model: Option<String>,
}

impl OrchestratorConfig {
    /// Defaults for `model`: 4096 output tokens, 50 iterations, 16 concurrent tools, 120 s tool
    /// timeout, failure threshold 3, no compaction, no title.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            max_tokens: 4_096,
            system_prompt: None,
            max_iterations: 50,
            tool_concurrency: mux_tool::DEFAULT_CONCURRENCY,
            parallelism: ToolParallelism::default(),
            tool_timeout: Duration::from_secs(120),
            failure_threshold: 3,
            approval_timeout: None,
            store_outage: Duration::from_secs(30),
            compaction: None,
            title: None,
            event_capacity: 256,
            broadcast_capacity: 1_024,
            temperature: None,
            thinking_budget: None,
            ask_user: true,
            prompts_need_store: false,
            approval: ApprovalPolicy::default(),
            limits: RunLimits::default(),
            name: None,
            capture_content: false,
        }
    }

    /// Sets which calls need a face's approval when no permission policy is set:
    /// [`ApprovalPolicy::Never`] runs every tool, which a run with no face to ask (such as
    /// [`Orchestrator::run_to_completion`](crate::Orchestrator::run_to_completion)) needs for
    /// tools that are not read-only.
    pub fn approval(mut self, approval: ApprovalPolicy) -> Self {
        self.approval = approval;
        self
    }

    /// Sets the budgets every run draws from: a run that reaches one stops cleanly, with
    /// [`RunSummary::limit`](crate::RunSummary::limit) saying which.
    pub fn limits(mut self, limits: RunLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Sets [`prompts_need_store`](Self::prompts_need_store).
    pub fn prompts_need_store(mut self, on: bool) -> Self {
        self.prompts_need_store = on;
        self
    }

    /// Names the agent in traces.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Records content on the trace spans (see [`capture_content`](Self::capture_content)).
    /// Sensitive: prompts, replies and tool data leave the process with the traces.
    pub fn capture_content(mut self, capture: bool) -> Self {
        self.capture_content = capture;
        self
    }

    /// Sets the system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Sets the output limit per call.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// Sets the iteration limit.
    pub fn max_iterations(mut self, max: u32) -> Self {
        self.max_iterations = max;
        self
    }

    /// Sets how long a finished run keeps trying an unreachable session store.
    pub fn store_outage(mut self, wait: Duration) -> Self {
        self.store_outage = wait;
        self
    }

    /// Sets the approval timeout.
    pub fn approval_timeout(mut self, timeout: Duration) -> Self {
        self.approval_timeout = Some(timeout);
        self
    }

    /// Enables compaction.
    pub fn compaction(mut self, compaction: CompactionConfig) -> Self {
        self.compaction = Some(compaction);
        self
    }

    /// Enables title generation.
    pub fn title(mut self, title: TitleConfig) -> Self {
        self.title = Some(title);
        self
    }

    /// Sets the tool parallelism.
    pub fn parallelism(mut self, parallelism: ToolParallelism) -> Self {
        self.parallelism = parallelism;
        self
    }

    /// Sets the failure threshold.
    pub fn failure_threshold(mut self, threshold: u32) -> Self {
        self.failure_threshold = threshold;
        self
    }

    /// Sets the per-call tool timeout.
    pub fn tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = timeout;
        self
    }
}
