//! Normalized stream events: every provider's stream is translated into these.

use crate::error::LlmError;
use crate::response::{StopDetails, StopReason, Usage};

/// The kind of a content block that starts in a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BlockStart {
    /// A text block; text arrives in [`StreamEvent::TextDelta`].
    Text,
    /// A thinking block; text arrives in [`StreamEvent::ThinkingDelta`], the signature in
    /// [`StreamEvent::SignatureDelta`].
    Thinking,
    /// A redacted thinking block, complete at its start.
    RedactedThinking {
        /// The opaque payload.
        data: String,
    },
    /// A tool call; its arguments arrive as JSON fragments in [`StreamEvent::ToolInputDelta`].
    ToolUse {
        /// The call id.
        id: String,
        /// The tool name.
        name: String,
    },
}

/// One event of a model's response stream.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// The response began.
    MessageStart {
        /// The provider's message id.
        id: Option<String>,
        /// The model answering.
        model: Option<String>,
        /// Usage known at the start (input tokens, cache tokens).
        usage: Usage,
    },
    /// A content block began at `index`.
    BlockStart {
        /// The block's position in the final content.
        index: usize,
        /// What kind of block.
        block: BlockStart,
    },
    /// Text for the text block at `index`.
    TextDelta {
        /// The block.
        index: usize,
        /// The new text.
        text: String,
    },
    /// Reasoning text for the thinking block at `index`.
    ThinkingDelta {
        /// The block.
        index: usize,
        /// The new reasoning text.
        thinking: String,
    },
    /// Signature bytes for the thinking block at `index`.
    SignatureDelta {
        /// The block.
        index: usize,
        /// The signature fragment.
        signature: String,
    },
    /// A fragment of the JSON arguments of the tool call at `index`.
    ToolInputDelta {
        /// The block.
        index: usize,
        /// The JSON fragment; fragments concatenate to the arguments object.
        partial_json: String,
    },
    /// The block at `index` is complete.
    BlockStop {
        /// The block.
        index: usize,
    },
    /// Message-level changes: the stop reason and cumulative usage.
    MessageDelta {
        /// Why the model stopped, when known.
        stop_reason: Option<StopReason>,
        /// The stop sequence that matched.
        stop_sequence: Option<String>,
        /// The message's usage so far, whole: it replaces what earlier events reported, zero
        /// counts included.
        usage: Option<Usage>,
    },
    /// The provider explained a refusal (sent before the [`StreamEvent::MessageDelta`] that
    /// carries [`StopReason::Refusal`]).
    StopDetails(StopDetails),
    /// The response is complete.
    MessageStop,
    /// A [`FallbackClient`](crate::FallbackClient) gave up on one client and the rest of the
    /// stream comes from the next. Sent first, before the next client's
    /// [`StreamEvent::MessageStart`]; nothing from the failed client reached the stream.
    Fallback {
        /// The provider that failed.
        from: String,
        /// The provider answering instead.
        to: String,
        /// Why the failed one was left (retryable: overloaded, rate limited after its own
        /// retries, a server error, a timeout or a broken connection).
        error: LlmError,
    },
}
