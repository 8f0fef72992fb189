//! What the loop tells its faces ([`LoopEvent`]) and what they answer ([`LoopInput`]).
//!
//! Both serialize with a stable `"type"` tag, so a server can forward events as SSE JSON and
//! read inputs from a request body.

use mux_llm::Usage;
use mux_permission::Answer;
use mux_tool::{Subject, ToolOutput, ToolUpdate};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::LoopState;
use crate::limits::LimitReached;

/// Something the loop did or needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LoopEvent {
    /// The run's state changed.
    StateChanged {
        /// The previous state.
        from: LoopState,
        /// The new state.
        to: LoopState,
    },
    /// Text streamed from the model.
    TextDelta {
        /// The new text.
        text: String,
    },
    /// Reasoning streamed from the model.
    ThinkingDelta {
        /// The new reasoning text.
        thinking: String,
    },
    /// The model began a tool call; its arguments are still streaming.
    ToolCallStarted {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
    },
    /// A tool call's arguments are complete.
    ToolCallArguments {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The arguments object.
        input: Value,
    },
    /// A call waits for the face to approve it; answer with [`LoopInput::ToolApproval`].
    ApprovalRequired {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The arguments.
        input: Value,
        /// What the call touches.
        subject: Subject,
        /// Why the policy asks.
        reason: String,
        /// What the call would do, from the tool ([`Tool::preview`](mux_tool::Tool::preview)):
        /// the diff of an edit, say, for the person to see before answering.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        preview: Option<mux_tool::Presentation>,
    },
    /// A call was approved.
    ToolApproved {
        /// The call id.
        call_id: String,
        /// Whether the answer was "always", which added a rule.
        always: bool,
    },
    /// A call was denied; the reason reaches the model.
    ToolDenied {
        /// The call id.
        call_id: String,
        /// Why.
        reason: String,
    },
    /// A call started running.
    ToolExecuting {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
    },
    /// A running call reported progress or partial output.
    ToolOutputDelta {
        /// The call id.
        call_id: String,
        /// The update.
        update: ToolUpdate,
    },
    /// A call finished (or was refused); this is what the model will read.
    ToolResult {
        /// The call id.
        call_id: String,
        /// The tool name.
        name: String,
        /// The output.
        output: ToolOutput,
    },
    /// The `ask_user` tool waits for [`LoopInput::UserResponse`].
    AwaitingInput {
        /// The call id of the `ask_user` call.
        call_id: String,
        /// The question.
        question: String,
    },
    /// A model request failed and will be tried again after `delay_ms`.
    Retrying {
        /// The attempt that failed (1 for the first).
        attempt: u32,
        /// The wait before the next attempt, in milliseconds.
        delay_ms: u64,
        /// Why the attempt failed.
        error: String,
    },
    /// The model call moved to the next client of a
    /// [`FallbackClient`](mux_llm::FallbackClient): the first failed retryably before any of
    /// its answer reached the loop.
    ModelFallback {
        /// The provider that failed.
        from: String,
        /// The provider answering instead.
        to: String,
        /// Why the failed one was left.
        error: String,
    },
    /// A model turn (and its tool calls) is done.
    TurnComplete {
        /// The 1-based iteration number within this run.
        iteration: u32,
        /// Whether the loop will call the model again.
        has_more: bool,
    },
    /// Token usage of the last model call and of the session so far.
    Usage {
        /// This call.
        turn: Usage,
        /// Every call of this session.
        total: Usage,
    },
    /// A title for the session, generated after the first reply.
    TitleGenerated {
        /// The title.
        title: String,
    },
    /// Older turns were summarized.
    Compacted {
        /// Estimated tokens before.
        tokens_before: u64,
        /// Estimated tokens after.
        tokens_after: u64,
    },
    /// A hook failed; the run goes on unless the hook asked to stop it.
    HookFailed {
        /// The hook.
        hook: String,
        /// The hook point (`pre_tool_use`, ...).
        point: String,
        /// What went wrong.
        message: String,
    },
    /// An input that nothing was waiting for (an approval for an unknown call, say).
    InputRejected {
        /// Why it was rejected.
        message: String,
    },
    /// The tools offered to the model changed before this turn: an MCP server connected,
    /// reconnected, was lost, or changed its tool list. The names are qualified
    /// (`mcp__server__tool`).
    ToolsChanged {
        /// Tools that appeared.
        added: Vec<String>,
        /// Tools that went away.
        removed: Vec<String>,
        /// Tools whose description, schema or annotations changed.
        updated: Vec<String>,
    },
    /// An MCP server the orchestrator started could not connect; the run goes on without
    /// its tools. Reported once, at the start of the first run.
    McpServerFailed {
        /// The server's name.
        server: String,
        /// Why it failed.
        reason: String,
    },
    /// A subscriber fell behind and missed this many events (subscriptions only).
    Lagged {
        /// How many events were missed.
        missed: u64,
    },
    /// The run ended normally.
    Finished {
        /// The final assistant text.
        text: String,
        /// Model calls made in this run.
        iterations: u32,
        /// Usage of this run.
        usage: Usage,
        /// The budget the run reached, when it stopped on one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        limit: Option<LimitReached>,
    },
    /// The run ended with an error (it was cancelled, or something failed).
    Error {
        /// A stable machine-readable kind (`cancelled`, `llm`, `max_iterations`, ...).
        kind: String,
        /// What went wrong.
        message: String,
    },
}

/// What a face sends into a running loop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LoopInput {
    /// The answer to [`LoopEvent::ApprovalRequired`].
    ToolApproval {
        /// The call id from the event.
        call_id: String,
        /// The person's answer (`"decision"`, its key in earlier releases, is still read).
        #[serde(alias = "decision")]
        answer: Answer,
    },
    /// The answer to [`LoopEvent::AwaitingInput`].
    UserResponse {
        /// The call id from the event.
        call_id: String,
        /// The user's answer.
        text: String,
    },
    /// A new user message, taken at the next turn boundary.
    UserMessage {
        /// The text.
        text: String,
    },
    /// Stop the run: the model stream is dropped and running tools are cancelled.
    Cancel,
}
