//! AG-UI 1.0 wire types, written by hand: events tagged on `type`, fields in camelCase.
//!
//! Only what this face sends or reads is modelled. Unknown input fields are ignored, as the
//! protocol's loose objects allow; optional output fields are omitted rather than `null`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The AG-UI protocol version this crate speaks.
pub const PROTOCOL_VERSION: &str = "1.0";

/// One AG-UI event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
#[non_exhaustive]
pub enum Event {
    /// Opens a run.
    #[serde(rename_all = "camelCase")]
    RunStarted {
        /// The thread (a mux session id).
        thread_id: String,
        /// The run.
        run_id: String,
        /// The protocol version.
        #[serde(skip_serializing_if = "Option::is_none")]
        protocol_version: Option<String>,
    },
    /// Closes a run that did not fail.
    #[serde(rename_all = "camelCase")]
    RunFinished {
        /// The thread.
        thread_id: String,
        /// The run.
        run_id: String,
        /// The final assistant text, when the run completed.
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        /// Why the run ended.
        outcome: Outcome,
        /// Token usage of the run.
        #[serde(skip_serializing_if = "Vec::is_empty", default)]
        usage: Vec<TokenUsage>,
    },
    /// Ends a run that failed.
    RunError {
        /// What went wrong.
        message: String,
        /// A stable machine-readable code (see [`crate::ErrorCode`]).
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<String>,
    },
    /// Opens a step (one model turn and its tool calls).
    #[serde(rename_all = "camelCase")]
    StepStarted {
        /// The step's name.
        step_name: String,
    },
    /// Closes a step.
    #[serde(rename_all = "camelCase")]
    StepFinished {
        /// The step's name.
        step_name: String,
    },
    /// Opens a streamed text message.
    #[serde(rename_all = "camelCase")]
    TextMessageStart {
        /// The message.
        message_id: String,
        /// Always `assistant` here.
        role: String,
    },
    /// A fragment of a text message.
    #[serde(rename_all = "camelCase")]
    TextMessageContent {
        /// The message.
        message_id: String,
        /// The new text (never empty).
        delta: String,
    },
    /// Closes a text message.
    #[serde(rename_all = "camelCase")]
    TextMessageEnd {
        /// The message.
        message_id: String,
    },
    /// Opens a span of reasoning.
    #[serde(rename_all = "camelCase")]
    ReasoningStart {
        /// The reasoning span.
        message_id: String,
    },
    /// Opens a streamed reasoning message.
    #[serde(rename_all = "camelCase")]
    ReasoningMessageStart {
        /// The reasoning message.
        message_id: String,
        /// Always `reasoning`.
        role: String,
    },
    /// A fragment of reasoning.
    #[serde(rename_all = "camelCase")]
    ReasoningMessageContent {
        /// The reasoning message.
        message_id: String,
        /// The new text.
        delta: String,
    },
    /// Closes a reasoning message.
    #[serde(rename_all = "camelCase")]
    ReasoningMessageEnd {
        /// The reasoning message.
        message_id: String,
    },
    /// Closes a span of reasoning.
    #[serde(rename_all = "camelCase")]
    ReasoningEnd {
        /// The reasoning span.
        message_id: String,
    },
    /// Opens a tool call.
    #[serde(rename_all = "camelCase")]
    ToolCallStart {
        /// The call.
        tool_call_id: String,
        /// The tool.
        tool_call_name: String,
        /// The assistant message that carries the call.
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_message_id: Option<String>,
    },
    /// A fragment of a call's arguments (JSON text).
    #[serde(rename_all = "camelCase")]
    ToolCallArgs {
        /// The call.
        tool_call_id: String,
        /// The arguments text.
        delta: String,
    },
    /// A call's arguments are complete.
    #[serde(rename_all = "camelCase")]
    ToolCallEnd {
        /// The call.
        tool_call_id: String,
    },
    /// What a tool returned.
    #[serde(rename_all = "camelCase")]
    ToolCallResult {
        /// The tool message this mints.
        message_id: String,
        /// The call.
        tool_call_id: String,
        /// The result text.
        content: String,
        /// Always `tool`.
        #[serde(skip_serializing_if = "Option::is_none")]
        role: Option<String>,
    },
    /// The whole shared state.
    StateSnapshot {
        /// The state.
        snapshot: Value,
    },
    /// A JSON Patch (RFC 6902) on the shared state.
    StateDelta {
        /// The operations.
        delta: Vec<Value>,
    },
    /// The thread's messages, in order.
    MessagesSnapshot {
        /// The messages.
        messages: Vec<Message>,
    },
    /// An event with no AG-UI kind: the mux event's own JSON under `value`.
    Custom {
        /// `mux.` plus the mux event's type (`mux.tool_executing`, ...).
        name: String,
        /// The payload.
        value: Value,
    },
}

impl Event {
    /// The wire name of the event's type (`RUN_STARTED`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::RunStarted { .. } => "RUN_STARTED",
            Self::RunFinished { .. } => "RUN_FINISHED",
            Self::RunError { .. } => "RUN_ERROR",
            Self::StepStarted { .. } => "STEP_STARTED",
            Self::StepFinished { .. } => "STEP_FINISHED",
            Self::TextMessageStart { .. } => "TEXT_MESSAGE_START",
            Self::TextMessageContent { .. } => "TEXT_MESSAGE_CONTENT",
            Self::TextMessageEnd { .. } => "TEXT_MESSAGE_END",
            Self::ReasoningStart { .. } => "REASONING_START",
            Self::ReasoningMessageStart { .. } => "REASONING_MESSAGE_START",
            Self::ReasoningMessageContent { .. } => "REASONING_MESSAGE_CONTENT",
            Self::ReasoningMessageEnd { .. } => "REASONING_MESSAGE_END",
            Self::ReasoningEnd { .. } => "REASONING_END",
            Self::ToolCallStart { .. } => "TOOL_CALL_START",
            Self::ToolCallArgs { .. } => "TOOL_CALL_ARGS",
            Self::ToolCallEnd { .. } => "TOOL_CALL_END",
            Self::ToolCallResult { .. } => "TOOL_CALL_RESULT",
            Self::StateSnapshot { .. } => "STATE_SNAPSHOT",
            Self::StateDelta { .. } => "STATE_DELTA",
            Self::MessagesSnapshot { .. } => "MESSAGES_SNAPSHOT",
            Self::Custom { .. } => "CUSTOM",
        }
    }

    /// Whether the event ends a run (`RUN_FINISHED` or `RUN_ERROR`).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::RunFinished { .. } | Self::RunError { .. })
    }
}

/// Why a run ended (`RUN_FINISHED.outcome`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Outcome {
    /// The run completed; frontend tool calls may wait for the application's results.
    #[serde(rename_all = "camelCase")]
    Success {
        /// Frontend tool calls whose results the next run's tool messages carry.
        #[serde(skip_serializing_if = "Vec::is_empty", default)]
        pending_tool_call_ids: Vec<String>,
    },
    /// The run is paused on approvals; the next run's `resume` answers them.
    Interrupt {
        /// What the run waits for (at least one).
        interrupts: Vec<Interrupt>,
    },
    /// The run was stopped.
    Cancelled,
}

/// Something a paused run needs from outside: here, an approval of a tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interrupt {
    /// The interrupt id, answered by [`ResumeEntry::interrupt_id`].
    pub id: String,
    /// Always `tool_call`.
    pub reason: String,
    /// What to show the person.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The call waiting for approval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// The shape of the answer: `{approved, reason?, editedArgs?}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_schema: Option<Value>,
    /// When the approval expires (RFC 3339, UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

/// Token counts for one provider and model.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// The provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Input tokens, cached ones included.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input plus output.
    pub total_tokens: u64,
    /// Input tokens read from the prompt cache (part of `inputTokens`).
    pub cached_input_tokens: u64,
    /// Input tokens written to the prompt cache (part of `inputTokens`).
    pub cache_write_input_tokens: u64,
}

/// A message of the conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Message {
    /// From the person.
    User {
        /// The message id.
        id: String,
        /// Text, or content parts.
        content: UserContent,
    },
    /// From the agent.
    #[serde(rename_all = "camelCase")]
    Assistant {
        /// The message id.
        id: String,
        /// The text, if any.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        content: Option<String>,
        /// Tool calls the message made.
        #[serde(skip_serializing_if = "Vec::is_empty", default)]
        tool_calls: Vec<ToolCall>,
    },
    /// A tool's result.
    #[serde(rename_all = "camelCase")]
    Tool {
        /// The message id.
        id: String,
        /// The result (text, or content parts).
        content: UserContent,
        /// The call it answers.
        tool_call_id: String,
        /// Set when the tool failed.
        #[serde(skip_serializing_if = "Option::is_none", default)]
        error: Option<String>,
    },
    /// Instructions from the system.
    System {
        /// The message id.
        id: String,
        /// The text.
        content: String,
    },
    /// Instructions from the developer.
    Developer {
        /// The message id.
        id: String,
        /// The text.
        content: String,
    },
    /// Reasoning, materialised as a message.
    Reasoning {
        /// The message id.
        id: String,
        /// The text.
        content: String,
    },
    /// Structured progress (read and ignored: this face sends none).
    #[serde(rename_all = "camelCase")]
    Activity {
        /// The message id.
        id: String,
        /// The activity type.
        activity_type: String,
        /// The content.
        content: Value,
    },
}

impl Message {
    /// The message id.
    pub fn id(&self) -> &str {
        match self {
            Self::User { id, .. }
            | Self::Assistant { id, .. }
            | Self::Tool { id, .. }
            | Self::System { id, .. }
            | Self::Developer { id, .. }
            | Self::Reasoning { id, .. }
            | Self::Activity { id, .. } => id,
        }
    }
}

/// A user or tool message's content: a string, or parts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UserContent {
    /// Plain text.
    Text(String),
    /// Content parts; only the text parts are read.
    Parts(Vec<Value>),
}

impl UserContent {
    /// The text: the string, or the text parts joined by newlines.
    pub fn text(&self) -> String {
        match self {
            Self::Text(text) => text.clone(),
            Self::Parts(parts) => parts
                .iter()
                .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// A call an assistant message made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The name and arguments.
    pub function: FunctionCall,
}

/// A tool call's name and arguments.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The tool.
    pub name: String,
    /// The arguments as JSON text.
    pub arguments: String,
}

/// A tool the application offers (a frontend tool).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its arguments' JSON Schema.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub parameters: Option<Value>,
}

/// Ambient information for the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Context {
    /// What it is.
    pub description: String,
    /// The value.
    pub value: String,
}

/// An answer to one interrupt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    /// The interrupt answered.
    pub interrupt_id: String,
    /// `resolved` or `cancelled`.
    pub status: ResumeStatus,
    /// The answer: `{approved, reason?, editedArgs?}` for an approval.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub payload: Option<Value>,
}

/// Whether an interrupt was answered or withdrawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ResumeStatus {
    /// Answered: the payload says how.
    Resolved,
    /// Withdrawn: for an approval, a denial.
    Cancelled,
}

/// A request to run the agent (`POST /agui`'s body).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    /// The thread (a mux session id).
    pub thread_id: String,
    /// The run.
    pub run_id: String,
    /// The conversation as the client has it.
    pub messages: Vec<Message>,
    /// Frontend tools the model may call.
    #[serde(default)]
    pub tools: Vec<Tool>,
    /// Ambient information.
    #[serde(default)]
    pub context: Vec<Context>,
    /// The client's state (read, not used by the loop).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub state: Option<Value>,
    /// Anything else the client forwards.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub forwarded_props: Option<Value>,
    /// Answers to the interrupts of the run this one continues.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub resume: Option<Vec<ResumeEntry>>,
}

/// The schema an approval interrupt's answer follows.
pub fn approval_response_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "approved": {"type": "boolean"},
            "reason": {"type": "string"},
            "editedArgs": {"type": "object"}
        },
        "required": ["approved"]
    })
}

/// The schema a network destination's approval follows: an approval's, plus `always`
/// (`true` with `approved` allows the destination for the rest of the conversation). Only
/// these interrupts take `always`: a tool's "always" would become a rule of the agent's
/// policy, which every thread of the server shares.
pub(crate) fn network_approval_response_schema() -> Value {
    let mut schema = approval_response_schema();
    schema["properties"]["always"] = serde_json::json!({"type": "boolean"});
    schema
}

/// Whether `interrupt` offered `always` (see [`network_approval_response_schema`]).
pub(crate) fn offers_always(interrupt: &Interrupt) -> bool {
    interrupt
        .response_schema
        .as_ref()
        .is_some_and(|schema| schema["properties"].get("always").is_some())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn events_are_tagged_on_type_with_camel_case_fields() {
        let event = Event::ToolCallStart {
            tool_call_id: "c1".into(),
            tool_call_name: "bash".into(),
            parent_message_id: None,
        };
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            json!({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "bash"})
        );
        assert_eq!(event.kind(), "TOOL_CALL_START");
    }

    #[test]
    fn outcomes_serialize_as_the_spec_has_them() {
        let finished = Event::RunFinished {
            thread_id: "t".into(),
            run_id: "r".into(),
            result: None,
            outcome: Outcome::Success {
                pending_tool_call_ids: vec!["c".into()],
            },
            usage: Vec::new(),
        };
        assert_eq!(
            serde_json::to_value(&finished).unwrap(),
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r",
                   "outcome": {"type": "success", "pendingToolCallIds": ["c"]}})
        );
        let cancelled = serde_json::to_value(Outcome::Cancelled).unwrap();
        assert_eq!(cancelled, json!({"type": "cancelled"}));
    }

    #[test]
    fn run_agent_input_reads_what_http_agent_sends() {
        let input: RunAgentInput = serde_json::from_value(json!({
            "threadId": "t", "runId": "r", "protocolVersion": "1.0",
            "messages": [
                {"id": "u1", "role": "user", "content": "hi"},
                {"id": "a1", "role": "assistant", "toolCalls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"id": "t1", "role": "tool", "toolCallId": "c1", "content": [{"type": "text", "text": "ok"}]}
            ],
            "tools": [], "context": [], "forwardedProps": {}, "state": {},
            "resume": [{"interruptId": "i", "status": "resolved", "payload": {"approved": true}}]
        }))
        .unwrap();
        assert_eq!(input.messages.len(), 3);
        let Message::Tool { content, .. } = &input.messages[2] else {
            panic!("not a tool message")
        };
        assert_eq!(content.text(), "ok");
        assert_eq!(input.resume.unwrap()[0].status, ResumeStatus::Resolved);
    }
}
