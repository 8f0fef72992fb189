//! Anthropic's stream events, translated to [`StreamEvent`]s.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::Value;

use crate::decode::{EventMapper, Flow};
use crate::error::LlmError;
use crate::event::{BlockStart, StreamEvent};
use crate::response::StopReason;
use crate::sse::SseEvent;

use super::wire::usage;

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Wire {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: usize,
        content_block: Block,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageDelta,
        #[serde(default)]
        usage: Option<Value>,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorBody,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct MessageStart {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text,
    Thinking,
    RedactedThinking { data: String },
    ToolUse { id: String, name: String },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Delta {
    TextDelta { text: String },
    ThinkingDelta { thinking: String },
    SignatureDelta { signature: String },
    InputJsonDelta {
        #[serde(default)]
        partial_json: String,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct MessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    stop_sequence: Option<String>,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
}

/// Translates the Messages API event stream. Block kinds this crate does not model (server
/// tool use, web search results) are skipped with their deltas; `ping` is ignored; an `error`
/// event becomes a typed error.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    skipped: HashSet<usize>,
    started: bool,
}

impl AnthropicDecoder {
    /// A decoder for one stream.
    pub fn new() -> Self {
        Self::default()
    }
}

impl EventMapper for AnthropicDecoder {
    fn provider(&self) -> &str {
        "anthropic"
    }

    fn on_event(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<Flow, LlmError> {
        let wire: Wire = serde_json::from_str(&event.data).map_err(|err| {
            LlmError::decode("anthropic", format!("bad stream event: {err}"), &event.data)
        })?;
        match wire {
            Wire::MessageStart { message } => {
                self.started = true;
                out.push(StreamEvent::MessageStart {
                    id: message.id,
                    model: message.model,
                    usage: message.usage.as_ref().map(usage).unwrap_or_default(),
                });
            }
            Wire::ContentBlockStart {
                index,
                content_block,
            } => {
                let block = match content_block {
                    Block::Text => BlockStart::Text,
                    Block::Thinking => BlockStart::Thinking,
                    Block::RedactedThinking { data } => BlockStart::RedactedThinking { data },
                    Block::ToolUse { id, name } => BlockStart::ToolUse { id, name },
                    Block::Unknown => {
                        self.skipped.insert(index);
                        return Ok(Flow::Continue);
                    }
                };
                out.push(StreamEvent::BlockStart { index, block });
            }
            Wire::ContentBlockDelta { index, delta } => {
                if self.skipped.contains(&index) {
                    return Ok(Flow::Continue);
                }
                out.push(match delta {
                    Delta::TextDelta { text } => StreamEvent::TextDelta { index, text },
                    Delta::ThinkingDelta { thinking } => StreamEvent::ThinkingDelta { index, thinking },
                    Delta::SignatureDelta { signature } => StreamEvent::SignatureDelta { index, signature },
                    Delta::InputJsonDelta { partial_json } => StreamEvent::ToolInputDelta {
                        index,
                        partial_json,
                    },
                    Delta::Unknown => return Ok(Flow::Continue),
                });
            }
            Wire::ContentBlockStop { index } => {
                if !self.skipped.contains(&index) {
                    out.push(StreamEvent::BlockStop { index });
                }
            }
            Wire::MessageDelta { delta, usage: u } => out.push(StreamEvent::MessageDelta {
                stop_reason: delta.stop_reason.as_deref().map(StopReason::parse),
                stop_sequence: delta.stop_sequence,
                usage: u.as_ref().map(usage),
            }),
            Wire::MessageStop => {
                out.push(StreamEvent::MessageStop);
                return Ok(Flow::Done);
            }
            Wire::Ping | Wire::Unknown => {}
            Wire::Error { error } => {
                return Err(LlmError::in_stream("anthropic", &error.kind, error.message));
            }
        }
        Ok(Flow::Continue)
    }

    fn on_end(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        Err(LlmError::transport(
            "anthropic",
            if self.started {
                "the stream ended before message_stop"
            } else {
                "the stream ended before message_start"
            },
        ))
    }
}
