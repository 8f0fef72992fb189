//! What a model returns: content blocks, a normalized stop reason and usage.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::message::{ContentBlock, Message, Role};

/// Why the model stopped, normalized across providers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// The model finished its turn.
    EndTurn,
    /// The model wants tool results.
    ToolUse,
    /// The output hit `max_tokens`.
    MaxTokens,
    /// A stop sequence matched.
    StopSequence,
    /// The model declined to answer.
    Refusal,
    /// A long-running turn paused; send the response back to continue.
    PauseTurn,
    /// A reason this crate does not know, as the provider spelled it.
    Other(String),
}

impl StopReason {
    /// The snake_case name (`end_turn`, ...), or the raw text of [`StopReason::Other`].
    pub fn as_str(&self) -> &str {
        match self {
            Self::EndTurn => "end_turn",
            Self::ToolUse => "tool_use",
            Self::MaxTokens => "max_tokens",
            Self::StopSequence => "stop_sequence",
            Self::Refusal => "refusal",
            Self::PauseTurn => "pause_turn",
            Self::Other(raw) => raw,
        }
    }

    /// Parses a snake_case name; unknown names become [`StopReason::Other`].
    pub fn parse(raw: &str) -> Self {
        match raw {
            "end_turn" => Self::EndTurn,
            "tool_use" => Self::ToolUse,
            "max_tokens" => Self::MaxTokens,
            "stop_sequence" => Self::StopSequence,
            "refusal" => Self::Refusal,
            "pause_turn" => Self::PauseTurn,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl Serialize for StopReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StopReason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        Ok(Self::parse(&raw))
    }
}

/// Token counts of one response.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    /// Input tokens not read from or written to the cache.
    pub input_tokens: u64,
    /// Output tokens, reasoning included.
    pub output_tokens: u64,
    /// Input tokens read from the prompt cache.
    pub cache_read_tokens: u64,
    /// Input tokens written to the prompt cache.
    pub cache_write_tokens: u64,
    /// Output tokens spent on reasoning, when the provider reports them.
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Merges cumulative counts: each field keeps the larger value. Providers report running
    /// totals (Anthropic's `message_start` then `message_delta`), so the larger one is the latest.
    pub fn merge(&mut self, other: &Usage) {
        self.input_tokens = self.input_tokens.max(other.input_tokens);
        self.output_tokens = self.output_tokens.max(other.output_tokens);
        self.cache_read_tokens = self.cache_read_tokens.max(other.cache_read_tokens);
        self.cache_write_tokens = self.cache_write_tokens.max(other.cache_write_tokens);
        self.reasoning_tokens = self.reasoning_tokens.max(other.reasoning_tokens);
    }
}

/// A complete model response.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The provider's message id, when it sent one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The model that answered, when the provider said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The content blocks, in order.
    pub content: Vec<ContentBlock>,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// The stop sequence that matched, for [`StopReason::StopSequence`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequence: Option<String>,
    /// Token counts.
    pub usage: Usage,
    /// What the provider said about a refusal ([`StopReason::Refusal`]), when it said more
    /// than the stop reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_details: Option<StopDetails>,
}

/// Why the model refused, as the provider explained it (Anthropic's `stop_details`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopDetails {
    /// The policy category that triggered the refusal, when named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// A human-readable explanation, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
}

impl Response {
    /// A response with these blocks and stop reason, and no id, model or usage.
    pub fn new(content: Vec<ContentBlock>, stop_reason: StopReason) -> Self {
        Self {
            id: None,
            model: None,
            content,
            stop_reason,
            stop_sequence: None,
            usage: Usage::default(),
            stop_details: None,
        }
    }

    /// A text reply that ends the turn.
    ///
    /// ```
    /// use mux_llm::{Response, StopReason};
    ///
    /// let reply = Response::from_text("Hello");
    /// assert_eq!(reply.text(), "Hello");
    /// assert_eq!(reply.stop_reason, StopReason::EndTurn);
    /// ```
    pub fn from_text(text: impl Into<String>) -> Self {
        Self::new(vec![ContentBlock::text(text)], StopReason::EndTurn)
    }

    /// A reply that calls one tool, ending the turn with [`StopReason::ToolUse`].
    ///
    /// ```
    /// use mux_llm::Response;
    /// use serde_json::json;
    ///
    /// let reply = Response::from_tool_use("call_1", "add", json!({"a": 2, "b": 3}));
    /// assert_eq!(reply.tool_calls().next().map(|(_, name, _)| name), Some("add"));
    /// ```
    pub fn from_tool_use(
        id: impl Into<String>,
        name: impl Into<String>,
        input: serde_json::Value,
    ) -> Self {
        Self::new(
            vec![ContentBlock::tool_use(id, name, input)],
            StopReason::ToolUse,
        )
    }

    /// The same response with this usage.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }

    /// The concatenated text blocks.
    pub fn text(&self) -> String {
        crate::message::text_of(&self.content)
    }

    /// The tool calls, in order, as `(id, name, input)`.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &serde_json::Value)> {
        self.content.iter().filter_map(|block| match block {
            ContentBlock::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }

    /// The assistant message to append to the conversation for the next turn. Thinking blocks
    /// and their signatures are kept untouched, as providers require.
    pub fn to_message(&self) -> Message {
        Message::new(Role::Assistant, self.content.clone())
    }
}
