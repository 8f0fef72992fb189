//! Why a run ended without finishing, and why an agent could not be built.

use std::path::PathBuf;

use mux_llm::LlmError;
use mux_tool::RegistryError;

use crate::session::SessionError;
use crate::state::InvalidTransition;

/// Why a run stopped early.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoopError {
    /// The run was cancelled (a cancel input, [`RunHandle::cancel`](crate::RunHandle::cancel), or the
    /// orchestrator's token).
    #[error("the run was cancelled")]
    Cancelled,
    /// The model call failed.
    #[error("model call failed: {0}")]
    Llm(#[from] LlmError),
    /// The loop called the model more times than allowed.
    #[error("the run stopped after {0} model calls without finishing (max_iterations)")]
    MaxIterations(u32),
    /// The same tool failed the same way too many times in a row.
    #[error(
        "tool `{tool}` failed {count} times in a row with the same arguments and error; stopping: {error}"
    )]
    FailureLoop {
        /// The tool.
        tool: String,
        /// How many identical failures.
        count: u32,
        /// The repeated error.
        error: String,
    },
    /// A hook asked to stop the run.
    #[error("hook `{hook}` stopped the run: {reason}")]
    StoppedByHook {
        /// The hook.
        hook: String,
        /// Its reason.
        reason: String,
    },
    /// The user prompt was blocked by a hook.
    #[error("hook `{hook}` blocked the prompt: {reason}")]
    PromptBlocked {
        /// The hook.
        hook: String,
        /// Its reason.
        reason: String,
    },
    /// Saving or loading the session failed.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// A session operation was asked of an orchestrator built without a session store.
    #[error("cannot {operation}: no session store is set (AgentBuilder::store or session_store)")]
    NoSessionStore {
        /// What was asked.
        operation: &'static str,
    },
    /// The loop tried an impossible state change (a bug, reported rather than panicking).
    #[error(transparent)]
    State(#[from] InvalidTransition),
    /// A run is already in progress on this session.
    #[error("a run is already in progress on this session")]
    AlreadyRunning,
    /// The loop task ended without reporting (it panicked).
    #[error("the loop task ended unexpectedly: {0}")]
    Crashed(String),
    /// The session store did not take the run's records (it is unreachable, say). They are
    /// still held in memory, in order, and go out with the conversation's next write.
    #[error("the session store has not taken {records} record(s): {reason}")]
    Unwritten {
        /// How many records are held.
        records: usize,
        /// The store's last error.
        reason: String,
    },
    /// A paused run was resumed, but the session has no open tool call to continue from.
    #[error("nothing to resume: the session's last turn has no tool call without a result")]
    NothingToResume,
    /// The run has a cost limit and no price for its model.
    #[error("the run has a cost limit but no price for model `{model}` (RunLimits::cost_usd)")]
    Unpriced {
        /// The model.
        model: String,
    },
    /// A typed answer ([`Agent::prompt_typed`](crate::Agent::prompt_typed)) still did not
    /// match its schema after the model was shown what was wrong once.
    #[error("the answer does not match the schema `{schema}` (after one correction): {problem}")]
    InvalidOutput {
        /// The schema's name (the Rust type's).
        schema: String,
        /// What is wrong with the last reply.
        problem: String,
        /// The last reply.
        reply: String,
    },
    /// [`Agent::prompt`](crate::Agent::prompt) stopped at a limit of
    /// [`RunLimits`](crate::RunLimits): its text alone would hide that the answer is cut
    /// short. [`Agent::run`](crate::Agent::run) reports it in
    /// [`RunSummary::limit`](crate::RunSummary::limit).
    #[error("the run stopped at its limit: {limit}")]
    LimitReached {
        /// The limit.
        limit: crate::LimitReached,
        /// The whole run: what the model had said when it stopped (`summary.text`), its tool
        /// calls and usage.
        summary: Box<crate::RunSummary>,
    },
    /// [`Agent::prompt`](crate::Agent::prompt), which has no one to ask, had calls denied
    /// because they needed approval. [`Agent::run`](crate::Agent::run) lists them in
    /// [`RunSummary::unapproved`](crate::RunSummary::unapproved).
    #[error(
        "{} call(s) needed approval and no one could give it ({}); allow them with a permission \
         rule or `.approval(ApprovalPolicy::Never)`, or run the agent behind a face",
        calls.len(),
        calls.iter().map(|c| format!("`{}`", c.tool)).collect::<Vec<_>>().join(", ")
    )]
    Unapproved {
        /// The calls denied.
        calls: Vec<crate::unapproved::UnapprovedCall>,
        /// The whole run: the answer the model gave without them (`summary.text`), its other
        /// tool calls and usage.
        summary: Box<crate::RunSummary>,
    },
    /// The agent could not open a conversation: its tools could not be built for the root
    /// ([`AgentBuilder::tools_at`](crate::AgentBuilder::tools_at)).
    #[error(transparent)]
    Agent(#[from] AgentBuildError),
}

impl LoopError {
    /// A stable, machine-readable name of the variant.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Cancelled => "cancelled",
            Self::Llm(_) => "llm",
            Self::MaxIterations(_) => "max_iterations",
            Self::FailureLoop { .. } => "failure_loop",
            Self::StoppedByHook { .. } => "stopped_by_hook",
            Self::PromptBlocked { .. } => "prompt_blocked",
            Self::Session(_) => "session",
            Self::NoSessionStore { .. } => "no_session_store",
            Self::State(_) => "invalid_state",
            Self::AlreadyRunning => "already_running",
            Self::Crashed(_) => "crashed",
            Self::InvalidOutput { .. } => "invalid_output",
            Self::Unpriced { .. } => "unpriced",
            Self::Unwritten { .. } => "unwritten",
            Self::NothingToResume => "nothing_to_resume",
            Self::Agent(_) => "agent",
            Self::LimitReached { .. } => "limit_reached",
            Self::Unapproved { .. } => "unapproved",
        }
    }
}

/// Why a tool set could not be built for a root (the error a [`AgentBuilder::tools_at`](crate::AgentBuilder::tools_at)
/// function returns).
pub type ToolsetError = Box<dyn std::error::Error + Send + Sync>;

/// Why an agent, or one of its conversations, could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentBuildError {
    /// A tool could not be registered (a name offered twice, an invalid spec).
    #[error("cannot offer a tool to the agent: {0}")]
    Tool(#[from] RegistryError),
    /// [`AgentBuilder::approval`](crate::AgentBuilder::approval) was given beside
    /// [`AgentBuilder::permissions`](crate::AgentBuilder::permissions), whose rules and mode
    /// decide every call: the approval policy would have no effect.
    #[error(
        "`approval({0:?})` has no effect beside a permission policy, whose rules and mode decide \
         every call: drop one (for no prompts under a policy, use its mode \
         `bypassPermissions`; deny rules still hold)"
    )]
    ApprovalBesidePermissions(mux_tool::ApprovalPolicy),
    /// The settings given to [`AgentBuilder::settings`](crate::AgentBuilder::settings) (or
    /// `settings_value`) cannot be used: unreadable, not JSON, or a rule that does not parse
    /// or names a tool the agent does not offer.
    #[error("cannot load the agent's settings: {source}")]
    Settings {
        /// The settings file (`<settings value>` for a value).
        file: PathBuf,
        /// What is wrong with it, naming the file and the rule.
        source: Box<mux_permission::LoadError>,
    },
    /// Both [`AgentBuilder::settings`](crate::AgentBuilder::settings) and
    /// [`AgentBuilder::permissions`](crate::AgentBuilder::permissions) were given: two
    /// policies, of which only one could decide.
    #[error(
        "the agent was given both settings and a permission policy: give one (settings become \
         the policy's project scope)"
    )]
    SettingsBesidePermissions,
    /// A [`AgentBuilder::tools_at`](crate::AgentBuilder::tools_at) function failed for `root`.
    #[error("cannot build the agent's tools for `{}`: {source}", root.display())]
    Toolset {
        /// The root the tools were built for.
        root: PathBuf,
        /// What the function said.
        source: ToolsetError,
    },
}
