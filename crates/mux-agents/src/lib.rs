//! Agents on the mux loop.
//!
//! An [`AgentRuntime`] spawns agents from [`AgentDefinition`]s over one
//! [`Agent`](mux_orchestrator::Agent): its model client, tools, permission policy, hooks and
//! store. Each agent is an
//! [`Orchestrator`](mux_orchestrator::Orchestrator) driven by its own task; an [`AgentHandle`]
//! queues prompts ([`AgentRun`]: status, wait with timeout, cancel), answers approvals,
//! subscribes to [`AgentEvent`]s, interrupts, shuts down and waits.
//!
//! Subagents ([`AgentRuntime::spawn_subagent`], or the model's `task` tool) use a subset of
//! their parent's tools, are linked to it in both sessions' metadata, and are cancelled with
//! it: each agent's token is a child of its parent's. Their events, approval requests
//! included, reach the parent's subscribers tagged with their id.
//!
//! Composition: [`Voting`] (majority over normalized answers, first-k agreement or a judge;
//! stragglers cancelled once decided) and [`Decomposition`] (a planner's [`Plan`] through the
//! [`FinishPlan`] tool, run in dependency waves). [`presets`] has ready-made definitions, and
//! [`console`] a terminal face ([`Console`], [`ConsoleRenderer`]) testable without a TTY.
//!
//! Events reach subscribers through broadcast channels (1024 events deep per agent); a
//! subscriber that falls behind gets [`AgentEvent::Lagged`]. A face that must not miss approval
//! requests should keep up, or set an approval timeout with
//! [`AgentRuntimeBuilder::configure`].
//!
//! ```
//! use std::time::Duration;
//! use mux_agents::{AgentDefinition, AgentRuntime, AgentSession, RunStatus};
//! use mux_llm::testing::ScriptedClient;
//! use mux_orchestrator::Agent;
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let client = ScriptedClient::new().reply_text("Paris");
//! let runtime = AgentRuntime::builder(Agent::builder(client, "model").build().unwrap()).build();
//! let agent = runtime
//!     .spawn(AgentDefinition::new("geo").system_prompt("Answer briefly."), AgentSession::New)
//!     .await?;
//! let mut run = agent.prompt("Capital of France?")?;
//! let summary = run.wait_timeout(Duration::from_secs(5)).await?;
//! assert_eq!(summary.text, "Paris");
//! assert_eq!(run.status(), RunStatus::Finished);
//! agent.shutdown();
//! agent.wait_timeout(Duration::from_secs(5)).await?;
//! assert_eq!(runtime.count(), 0);
//! # Ok::<(), mux_agents::AgentError>(()) }).unwrap();
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]

/// The crate's README.md (its crates.io page), compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub mod console;
mod decomposition;
mod definition;
mod error;
mod event;
mod handle;
mod id;
mod plan;
pub mod presets;
mod runtime;
mod task;
mod voting;
mod workflow;

pub use console::{
    Console, ConsoleExit, ConsoleInput, ConsoleRenderer, Keys, LineInput, ScriptedInput,
};
pub use decomposition::{
    Decomposition, DecompositionError, DecompositionOutcome, StepOutcome, StepResult,
};
pub use definition::AgentDefinition;
pub use error::AgentError;
pub use event::{AgentEvent, AgentEvents};
pub use handle::{AgentHandle, AgentRun, AgentState, RunStatus};
pub use id::AgentId;
pub use plan::{FINISH_PLAN, FinishPlan, Plan, PlanError, PlanStep};
pub use runtime::{AgentRuntime, AgentRuntimeBuilder, AgentSession, PARENT_KEY, SUBAGENTS_KEY};
pub use task::{TASK, TaskArgs};
pub use voting::{Aggregator, Ballot, VoteOutcome, Voting, VotingError, normalize};
