//! What can go wrong when running agents.

use std::time::Duration;

use mux_orchestrator::LoopError;

use crate::AgentId;

/// An agent runtime failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The agent has exited (shut down or cancelled) and takes no more input.
    #[error("agent {0} has exited")]
    Exited(AgentId),
    /// No agent with this id is running.
    #[error("no running agent {0}")]
    UnknownAgent(String),
    /// No definition with this name is registered.
    #[error("no agent definition named `{name}` (known: {known})")]
    UnknownDefinition {
        /// The requested name.
        name: String,
        /// The registered names, comma-separated.
        known: String,
    },
    /// Spawning would nest subagents deeper than the runtime allows.
    #[error("subagent depth limit reached: {depth} > {max}")]
    DepthLimit {
        /// The depth the new agent would have.
        depth: u32,
        /// The limit.
        max: u32,
    },
    /// The agent is not a subagent of the one that tried to resume it.
    #[error("agent {child} is not a subagent of {parent}")]
    NotAChild {
        /// The agent asked for.
        child: AgentId,
        /// The agent that asked.
        parent: AgentId,
    },
    /// The run was cancelled.
    #[error("the run was cancelled")]
    Cancelled,
    /// A wait ended before the run or the agent did; the run goes on.
    #[error("timed out after {0:?}")]
    Timeout(Duration),
    /// The run's result was already taken by an earlier wait.
    #[error("the run's result was already taken")]
    ResultTaken,
    /// A tool could not be set up (its argument schema did not build).
    #[error("tool setup failed: {0}")]
    ToolSetup(String),
    /// A worker task ended abnormally.
    #[error("an agent task crashed: {0}")]
    Crashed(String),
    /// The loop failed.
    #[error(transparent)]
    Loop(#[from] LoopError),
}
