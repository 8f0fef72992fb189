#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("docs/crate.md")]
#![forbid(unsafe_code)]

mod agent;
mod agent_builder;
mod agent_settings;
mod agent_spec;
mod approval;
mod ask_user;
mod builder;
mod client_ext;
pub mod compaction;
mod config;
pub mod context;
mod convert;
mod core;
mod dangling;
mod emitter;
mod error;
mod event;
#[cfg(test)]
mod event_wire_tests;
mod failure;
mod handles;
pub mod hooks;
mod journal;
mod limits;
#[cfg(feature = "mcp")]
pub mod mcp;
mod needs_approval;
#[cfg(feature = "builtin")]
mod network_ask;
mod orchestrator;
mod parent;
mod run;
mod run_state;
mod state;
mod summary;
mod telemetry;
mod title;
mod tool_hooks;
mod typed_output;
mod unapproved;

/// Sessions and runs live in mux-store; these paths stay for the loop's callers.
pub use mux_store::{OpenError, Store, runs, session};

pub use agent::Agent;
pub use agent_builder::AgentBuilder;
pub use ask_user::{ASK_USER, AskUser, AskUserArgs};
pub use builder::ConversationBuilder;
pub use client_ext::LlmClientExt;
pub use compaction::CompactionConfig;
pub use config::{OrchestratorConfig, TitleConfig, ToolParallelism};
pub use context::ContextProvider;
pub use convert::tool_result_block;
pub use dangling::{cancelled_call_result, may_rerun, outcome_unknown, settle_open_turn};
pub use emitter::{EventReceiver, Subscription};
pub use error::LoopError;
pub use error::{AgentBuildError, ToolsetError};
pub use event::{LoopEvent, LoopInput};
pub use handles::{InputSender, Run, RunHandle};
pub use hooks::{Hook, HookError, Hooks};
pub use journal::{PendingApproval, PendingQuestion};
pub use limits::{Budget, LimitReached, ModelPrice, PriceTable, RunLimits, Spent};
#[cfg(feature = "mcp")]
pub use mcp::{McpServers, McpStartError};
pub use mux_permission::Answer;
pub use summary::{RunSummary, ToolCallRecord};
pub use unapproved::UnapprovedCall;
/// The name a walled command's network question carries on the face in place of a tool's
/// (input: `host`, `port` and the command's `call_id`). Defined whatever the features: a
/// face built without `builtin` may serve an agent whose `bash` asks.
pub const NETWORK_APPROVAL: &str = "network";
pub use orchestrator::Orchestrator;
pub use parent::ParentRun;
pub use state::{InvalidTransition, LoopState};
