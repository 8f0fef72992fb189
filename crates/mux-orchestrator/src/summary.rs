//! What a finished run produced ([`RunSummary`]) and its tool calls ([`ToolCallRecord`]): a
//! leaf the run's handles and its errors both name.

use mux_llm::{StopReason, Usage};
use mux_tool::ToolOutput;
use serde_json::Value;

use crate::limits::LimitReached;
use crate::unapproved::UnapprovedCall;

/// A tool call made during a run, with what the model read back.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallRecord {
    /// The call id.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments as run (after any rewrite).
    pub input: Value,
    /// The output the model read.
    pub output: ToolOutput,
}

/// What a finished run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct RunSummary {
    /// The final assistant text.
    pub text: String,
    /// Why the model's last reply ended: `EndTurn`, or `MaxTokens` when the answer was cut
    /// off, `Refusal` when the model declined (a face reports these as such).
    pub stop_reason: StopReason,
    /// Every tool call, in order.
    pub tool_calls: Vec<ToolCallRecord>,
    /// Model calls made.
    pub iterations: u32,
    /// Usage of this run.
    pub usage: Usage,
    /// Calls denied because no one could approve them (see [`UnapprovedCall`]).
    pub unapproved: Vec<UnapprovedCall>,
    /// The budget the run reached, when it stopped on one ([`RunLimits`](crate::RunLimits)).
    pub limit: Option<LimitReached>,
}
