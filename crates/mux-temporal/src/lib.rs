//! A mux [`Agent`](mux_orchestrator::Agent) as a Temporal workflow, on the official Rust SDK.
//!
//! - The loop is the workflow ([`AgentWorkflow`], type `mux.agent`): deterministic, it keeps
//!   the conversation and decides what comes next.
//! - Each model call and each tool call is an activity ([`AgentActivities`]), run by
//!   [`AgentWorker`]s that hold the agent (client, tools, permission policy). mux's model
//!   retry policy becomes the model activity's retry policy ([`ActivityRetry`]).
//! - The agent's permission policy reviews each turn's calls (an activity); an "ask" parks
//!   the run until someone answers with the `approve` update ([`AgentRun::approve`]) from
//!   any process, so any face can answer.
//! - Cancel is workflow cancellation ([`AgentRun::cancel`]); the history and the pending
//!   approvals are queries ([`AgentRun::history`], [`AgentRun::pending`]).
//! - No tool runs twice: a tool call carries an effect key (`{workflow id}:{turn}:{call id}`
//!   and its attempt), and a call whose worker died mid-call runs again on another worker
//!   only when the tool is read-only or idempotent; otherwise the model reads a typed
//!   "outcome unknown" result ([`effect`]).
//!
//! ```no_run
//! use mux_llm::testing::ScriptedClient;
//! use mux_orchestrator::Agent;
//! use mux_temporal::{AgentWorker, TemporalAgent, connect};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let agent = Agent::builder(ScriptedClient::new().reply_text("Hi!"), "m").build()?;
//! let client = connect("localhost:7233", "default").await?;
//! let _worker = AgentWorker::spawn(agent.clone(), client.clone(), "agents", Default::default())?;
//!
//! let run = TemporalAgent::new(client, "agents", &agent).start("run-1", "Hello").await?;
//! assert_eq!(run.outcome().await?.text, "Hi!");
//! # Ok(())
//! # }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]

/// The code in README.md, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDocs;

mod activities;
mod client;
pub mod effect;
mod error;
mod retry;
mod wire;
mod worker;
mod workflow;

pub use activities::AgentActivities;
pub use client::{
    AgentRun, DEFAULT_HEARTBEAT_TIMEOUT, DEFAULT_MODEL_TIMEOUT, TemporalAgent, connect,
};
pub use error::TemporalError;
pub use retry::{ActivityRetry, MODEL_ERROR, model_failure};
pub use wire::{
    Approval, ModelTurn, PendingApproval, Review, ReviewInput, RunInput, RunOptions, RunOutcome,
    RunStatus, ToolCallInput,
};
pub use worker::{AgentWorker, WorkerSettings, WorkerThread};
pub use workflow::{AgentWorkflow, WORKFLOW_TYPE};
