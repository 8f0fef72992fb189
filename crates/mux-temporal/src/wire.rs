//! The values that cross Temporal: workflow input and result, activity inputs and outputs,
//! approvals. Plain serde types, so any SDK (or the `temporal` CLI) can read them.

use std::collections::BTreeSet;

use mux_llm::{Message, Usage};
use mux_permission::Answer;
use mux_tool::ToolCall;
use serde::{Deserialize, Serialize};

use crate::retry::ActivityRetry;

/// What a run of the agent workflow starts from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunInput {
    /// The prompt.
    pub prompt: String,
    /// Earlier messages of the conversation the prompt continues (empty for a new one).
    #[serde(default)]
    pub history: Vec<Message>,
    /// Timeouts, retries and limits, fixed when the run starts so that every worker replays
    /// the same decisions.
    pub options: RunOptions,
}

/// The settings of one run, carried in its input (a workflow must not read its worker's
/// configuration: two workers could differ, and replay would diverge).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOptions {
    /// Model turns at most; the run ends with [`RunStatus::LimitReached`] past it.
    pub max_turns: u32,
    /// How long one model call may take (each attempt).
    pub model_timeout_ms: u64,
    /// How long one tool call may take (each attempt).
    pub tool_timeout_ms: u64,
    /// The heartbeat interval of a running tool call: a worker that stops heartbeating
    /// (killed) is declared dead after this long, and the call is handed to another worker.
    pub heartbeat_timeout_ms: u64,
    /// Retries of a model call (mux's retry policy, mapped onto Temporal's).
    pub model_retry: ActivityRetry,
    /// How long an approval waits before the call is denied; `None` waits until cancelled.
    #[serde(default)]
    pub approval_timeout_ms: Option<u64>,
}

/// The result of one model turn, as the model activity returns it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelTurn {
    /// The assistant message.
    pub message: Message,
    /// The calls it makes, in order.
    pub calls: Vec<ToolCall>,
    /// Token counts of this turn.
    pub usage: Usage,
}

/// The review activity's input: one turn's calls, and the tools the person allowed for the
/// rest of the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReviewInput {
    /// The calls, in order.
    pub calls: Vec<ToolCall>,
    /// Tools an "always" answer allowed in this run.
    pub allowed: BTreeSet<String>,
}

/// The policy's verdict on one call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Review {
    /// Run it.
    Allow,
    /// Ask a person first.
    Ask {
        /// Why the policy asks.
        reason: String,
    },
    /// Refuse it; the reason reaches the model.
    Deny {
        /// Why.
        reason: String,
    },
}

/// The tool activity's input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCallInput {
    /// The call.
    pub call: ToolCall,
    /// The stable part of its effect key: `{workflow id}:{turn}:{call id}`.
    pub effect_key: String,
}

/// A call waiting for a person's answer, as the `pending` query lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// The call.
    pub call: ToolCall,
    /// Why the policy asks.
    pub reason: String,
}

/// A person's answer to a pending call, sent with the `approve` update.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Approval {
    /// The call answered.
    pub call_id: String,
    /// The answer (allow once, allow always, deny with a reason).
    pub answer: Answer,
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum RunStatus {
    /// The model gave its final answer.
    Complete,
    /// The run used its [`RunOptions::max_turns`].
    LimitReached,
}

/// What a finished run returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunOutcome {
    /// How it ended.
    pub status: RunStatus,
    /// The last assistant message's text.
    pub text: String,
    /// The whole conversation, the prompt and every tool result included.
    pub messages: Vec<Message>,
    /// Tokens over every turn.
    pub usage: Usage,
    /// Model turns taken.
    pub turns: u32,
}
