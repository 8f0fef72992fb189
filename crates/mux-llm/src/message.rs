//! The one message format: a role and a list of content blocks. Providers convert it at their edge.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote a message. System prompts live on [`Request::system`](crate::Request::system).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The person or program driving the model; also carries tool results.
    User,
    /// The model.
    Assistant,
}

/// A prompt-cache hint: cache everything up to and including the block that carries it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheHint {
    /// The provider's default (short-lived) cache.
    #[default]
    Ephemeral,
    /// A longer-lived cache (Anthropic's one-hour TTL).
    Long,
}

/// Where an image comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ImageSource {
    /// Base64-encoded bytes with their media type (`image/png`, ...).
    Base64 {
        /// The MIME type.
        media_type: String,
        /// The base64 text.
        data: String,
    },
    /// An image the provider fetches itself.
    Url {
        /// The address.
        url: String,
    },
}

/// One piece of a message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// Where the image comes from.
        source: ImageSource,
    },
    /// The model asks for a tool call.
    ToolUse {
        /// The call id, echoed by the matching [`ContentBlock::ToolResult`].
        id: String,
        /// The tool name.
        name: String,
        /// The arguments object.
        input: Value,
    },
    /// The result of a tool call, sent back in a user message.
    ToolResult {
        /// The id of the [`ContentBlock::ToolUse`] this answers.
        tool_use_id: String,
        /// The result content (text and images).
        content: Vec<ContentBlock>,
        /// Whether the tool failed.
        #[serde(default)]
        is_error: bool,
    },
    /// The model's visible reasoning, with the signature that must be sent back untouched.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// The provider's opaque signature.
        #[serde(default)]
        signature: String,
    },
    /// Reasoning the provider returned encrypted; sent back untouched.
    RedactedThinking {
        /// The opaque payload.
        data: String,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// A tool call block.
    pub fn tool_use(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self::ToolUse {
            id: id.into(),
            name: name.into(),
            input,
        }
    }

    /// A tool result block holding text.
    pub fn tool_result(
        tool_use_id: impl Into<String>,
        text: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Self::ToolResult {
            tool_use_id: tool_use_id.into(),
            content: vec![Self::text(text)],
            is_error,
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
            _ => None,
        }
    }
}

/// A message: a role and its content blocks, with an optional cache hint on its last block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// The blocks, in order.
    pub content: Vec<ContentBlock>,
    /// Cache everything up to the end of this message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<CacheHint>,
}

impl Message {
    /// A message from blocks.
    pub fn new(role: Role, content: Vec<ContentBlock>) -> Self {
        Self {
            role,
            content,
            cache: None,
        }
    }

    /// A user message with one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![ContentBlock::text(text)])
    }

    /// An assistant message with one text block.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, vec![ContentBlock::text(text)])
    }

    /// Marks this message as the end of a cached prefix.
    pub fn with_cache(mut self, hint: CacheHint) -> Self {
        self.cache = Some(hint);
        self
    }

    /// The concatenated text blocks.
    pub fn text(&self) -> String {
        text_of(&self.content)
    }
}

/// The `type` a thinking block's signature names when it carries an OpenAI Responses reasoning
/// item (`{"type":"openai.reasoning","id":…,"encrypted_content":…}`).
pub(crate) const RESPONSES_REASONING: &str = "openai.reasoning";

/// Whether a thinking block's signature carries a Responses reasoning item: only that API can
/// take it back, so the other providers leave such blocks out (a conversation stays portable
/// across providers, as after a fallback).
#[cfg_attr(not(any(feature = "anthropic", feature = "gemini")), allow(dead_code))]
pub(crate) fn is_responses_reasoning(signature: &str) -> bool {
    signature.starts_with('{')
        && serde_json::from_str::<Value>(signature)
            .is_ok_and(|value| value["type"] == RESPONSES_REASONING)
}

/// The text blocks of `content`, concatenated.
pub(crate) fn text_of(content: &[ContentBlock]) -> String {
    content.iter().filter_map(ContentBlock::as_text).collect()
}
