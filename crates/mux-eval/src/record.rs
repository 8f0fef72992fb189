//! What one attempt of a case produced: the answer, the tool calls, the approvals asked, a
//! transcript, usage and time, and how it failed if it did.

use mux_llm::Usage;
use mux_orchestrator::LoopEvent;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool call the agent made, with what it read back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments.
    pub input: Value,
    /// The output's text.
    pub output: String,
    /// Whether the call failed (or was refused).
    pub is_error: bool,
}

/// An approval the agent's run asked for, and the scripted answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApprovalAsked {
    /// The call id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The call's arguments.
    pub input: Value,
    /// Whether the case's script allowed it.
    pub allowed: bool,
}

/// One line of a transcript.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "entry", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Entry {
    /// A user message.
    User {
        /// The text.
        text: String,
    },
    /// The assistant's text of one turn.
    Assistant {
        /// The text.
        text: String,
    },
    /// A tool call.
    ToolCall {
        /// The tool's name.
        name: String,
        /// The arguments.
        input: Value,
    },
    /// A tool's result.
    ToolResult {
        /// The tool's name.
        name: String,
        /// The output's text.
        output: String,
        /// Whether it failed.
        is_error: bool,
    },
    /// An approval asked and answered.
    Approval {
        /// The tool's name.
        tool: String,
        /// The answer.
        allowed: bool,
    },
    /// The run failed.
    Error {
        /// The kind of failure.
        kind: String,
        /// What went wrong.
        message: String,
    },
}

/// Why an attempt did not finish normally.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// `timeout`, `budget`, `limit`, `cassette`, `target`, `unapproved`, or the loop's
    /// error kind (`llm`, `cancelled`, ...).
    pub kind: String,
    /// What went wrong (for a cassette miss, the diff against the closest recording).
    pub message: String,
}

/// Everything one attempt produced.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The final answer's text.
    pub output: String,
    /// The answer as JSON, when it is JSON (structured output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_json: Option<Value>,
    /// Every tool call, in order.
    #[serde(default)]
    pub tool_calls: Vec<ToolCall>,
    /// Every approval asked, in order.
    #[serde(default)]
    pub approvals: Vec<ApprovalAsked>,
    /// The conversation as it happened.
    #[serde(default)]
    pub transcript: Vec<Entry>,
    /// Every event of the run (kept in memory for evaluators; not in reports).
    #[serde(skip)]
    pub events: Vec<LoopEvent>,
    /// Tokens used.
    #[serde(default)]
    pub usage: Usage,
    /// Model calls made.
    #[serde(default)]
    pub model_calls: u32,
    /// Wall-clock time of the attempt, in milliseconds.
    #[serde(default)]
    pub duration_ms: u64,
    /// How the attempt failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

impl RunRecord {
    /// The output read as JSON: the structured output, or the text parsed (a fenced
    /// ```` ```json ```` block is unwrapped).
    pub fn json(&self) -> Option<Value> {
        if let Some(value) = &self.output_json {
            return Some(value.clone());
        }
        let text = self.output.trim();
        let text = text
            .strip_prefix("```json")
            .or_else(|| text.strip_prefix("```"))
            .and_then(|rest| rest.strip_suffix("```"))
            .unwrap_or(text);
        serde_json::from_str(text.trim()).ok()
    }

    /// Input plus output tokens, cached ones included.
    pub fn total_tokens(&self) -> u64 {
        let u = &self.usage;
        u.input_tokens + u.cache_read_tokens + u.cache_write_tokens + u.output_tokens
    }
}
