//! Anthropic's stream events, translated to [`StreamEvent`]s.

use std::borrow::Cow;
use std::collections::HashSet;

use serde::Deserialize;
use serde_json::Value;

use crate::decode::{EventMapper, Flow};
use crate::error::LlmError;
use crate::event::{BlockStart, StreamEvent};
use crate::response::{StopReason, Usage};
use crate::sse::SseEventRef;

use super::wire::{stop_details, usage, usage_over};

/// One event, read flat: internally tagged enums buffer every field before dispatching,
/// which costs more than the whole parse; a flat struct with a borrowed tag does not.
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    index: usize,
    #[serde(default)]
    message: Option<MessageStart>,
    #[serde(default, borrow)]
    content_block: Option<Block<'a>>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<ErrorBody>,
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
struct Block<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    data: Option<String>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", default, borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    partial_json: Option<String>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    stop_sequence: Option<String>,
    #[serde(default)]
    stop_details: Option<Value>,
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
    /// The usage `message_start` reported, which `message_delta` counts override.
    start_usage: Usage,
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

    fn on_event(
        &mut self,
        event: SseEventRef<'_>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, LlmError> {
        let wire: Wire<'_> = serde_json::from_str(event.data).map_err(|err| {
            LlmError::decode("anthropic", format!("bad stream event: {err}"), event.data)
        })?;
        let index = wire.index;
        match wire.kind.as_ref() {
            "message_start" => {
                self.started = true;
                let message = wire.message.unwrap_or(MessageStart {
                    id: None,
                    model: None,
                    usage: None,
                });
                self.start_usage = message.usage.as_ref().map(usage).unwrap_or_default();
                out.push(StreamEvent::MessageStart {
                    id: message.id,
                    model: message.model,
                    usage: self.start_usage,
                });
            }
            "content_block_start" => {
                let Some(block) = wire.content_block else {
                    return Err(LlmError::decode(
                        "anthropic",
                        "content_block_start without a content_block",
                        event.data,
                    ));
                };
                let block = match block.kind.as_ref() {
                    "text" => BlockStart::Text,
                    "thinking" => BlockStart::Thinking,
                    "redacted_thinking" => BlockStart::RedactedThinking {
                        data: block.data.unwrap_or_default(),
                    },
                    "tool_use" => BlockStart::ToolUse {
                        id: block.id.unwrap_or_default(),
                        name: block.name.unwrap_or_default(),
                    },
                    _ => {
                        self.skipped.insert(index);
                        return Ok(Flow::Continue);
                    }
                };
                out.push(StreamEvent::BlockStart { index, block });
            }
            "content_block_delta" => {
                if self.skipped.contains(&index) {
                    return Ok(Flow::Continue);
                }
                let Some(mut delta) = wire.delta else {
                    return Err(LlmError::decode(
                        "anthropic",
                        "content_block_delta without a delta",
                        event.data,
                    ));
                };
                let kind = delta.kind.take().unwrap_or_default();
                let kind = kind.as_ref();
                out.push(match (kind, delta) {
                    (
                        "text_delta",
                        Delta {
                            text: Some(text), ..
                        },
                    ) => StreamEvent::TextDelta { index, text },
                    (
                        "thinking_delta",
                        Delta {
                            thinking: Some(thinking),
                            ..
                        },
                    ) => StreamEvent::ThinkingDelta { index, thinking },
                    (
                        "signature_delta",
                        Delta {
                            signature: Some(signature),
                            ..
                        },
                    ) => StreamEvent::SignatureDelta { index, signature },
                    ("input_json_delta", delta) => StreamEvent::ToolInputDelta {
                        index,
                        partial_json: delta.partial_json.unwrap_or_default(),
                    },
                    ("text_delta" | "thinking_delta" | "signature_delta", _) => {
                        return Err(LlmError::decode(
                            "anthropic",
                            format!("{kind} without its text"),
                            event.data,
                        ));
                    }
                    _ => return Ok(Flow::Continue),
                });
            }
            "content_block_stop" if !self.skipped.contains(&index) => {
                out.push(StreamEvent::BlockStop { index });
            }
            "message_delta" => {
                let (stop_reason, stop_sequence, details) = match wire.delta {
                    Some(delta) => (delta.stop_reason, delta.stop_sequence, delta.stop_details),
                    None => (None, None, None),
                };
                if let Some(details) = stop_details(details.as_ref()) {
                    out.push(StreamEvent::StopDetails(details));
                }
                out.push(StreamEvent::MessageDelta {
                    stop_reason: stop_reason.as_deref().map(StopReason::parse),
                    stop_sequence,
                    usage: wire
                        .usage
                        .as_ref()
                        .map(|delta| usage_over(self.start_usage, delta)),
                });
            }
            "message_stop" => {
                out.push(StreamEvent::MessageStop);
                return Ok(Flow::Done);
            }
            "error" => {
                let error = wire.error.unwrap_or(ErrorBody {
                    kind: "api_error".into(),
                    message: "error event without details".into(),
                });
                return Err(LlmError::in_stream("anthropic", &error.kind, error.message));
            }
            _ => {}
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::decode_chunks;

    fn decode(body: &str) -> Result<Vec<StreamEvent>, LlmError> {
        decode_chunks(AnthropicDecoder::new(), [body.as_bytes()])
    }

    #[test]
    fn redacted_thinking_and_unknown_blocks() {
        let body = concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":21,\"cache_creation_input_tokens\":188086,\"cache_read_input_tokens\":7,\"output_tokens\":1}}}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"EmwKAhgBEgy3va3pzix\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}}\n\n",
            "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n",
            "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"pause_turn\"},\"usage\":{\"output_tokens\":393}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        let events = decode(body).unwrap();
        let mut acc = crate::Accumulator::new("anthropic");
        for event in &events {
            acc.push(event).unwrap();
        }
        let response = acc.finish().unwrap();
        assert_eq!(
            response.content,
            vec![crate::ContentBlock::RedactedThinking {
                data: "EmwKAhgBEgy3va3pzix".into()
            }]
        );
        assert_eq!(response.stop_reason, StopReason::PauseTurn);
        assert_eq!(response.usage.cache_write_tokens, 188_086);
        assert_eq!(response.usage.cache_read_tokens, 7);
        assert_eq!(response.usage.input_tokens, 21);
        assert_eq!(response.usage.output_tokens, 393);
    }

    fn finish(body: &str) -> crate::Response {
        let mut acc = crate::Accumulator::new("anthropic");
        for event in &decode(body).unwrap() {
            acc.push(event).unwrap();
        }
        acc.finish().unwrap()
    }

    #[test]
    fn final_usage_is_authoritative_zero_included() {
        // The cache was written at message_start, but the final count says zero cache tokens
        // and fewer input tokens: the final count wins; fields it leaves out keep their start.
        let response = finish(concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":50,\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":9,\"output_tokens\":1}}}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"input_tokens\":40,\"cache_creation_input_tokens\":0,\"output_tokens\":0}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        ));
        assert_eq!(response.usage.input_tokens, 40);
        assert_eq!(response.usage.cache_write_tokens, 0);
        assert_eq!(response.usage.output_tokens, 0);
        assert_eq!(response.usage.cache_read_tokens, 9);
    }

    #[test]
    fn refusal_details_reach_the_response() {
        let response = finish(concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":5}}}\n\n",
            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"refusal\",\"stop_details\":{\"type\":\"refusal\",\"category\":\"cyber\",\"explanation\":\"This looks like malware.\"}},\"usage\":{\"output_tokens\":3}}\n\n",
            "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        ));
        assert_eq!(response.stop_reason, StopReason::Refusal);
        let details = response.stop_details.expect("stop details");
        assert_eq!(details.category.as_deref(), Some("cyber"));
        assert_eq!(
            details.explanation.as_deref(),
            Some("This looks like malware.")
        );
    }

    #[test]
    fn bad_json_is_a_decode_error_with_a_snippet() {
        let err =
            decode("event: message_start\ndata: {\"type\":\"message_start\",\n\n").unwrap_err();
        let crate::LlmFailure::Decode { snippet, .. } = &err.failure else {
            panic!("expected a decode error, got {err:?}");
        };
        assert!(snippet.contains("message_start"));
    }

    #[test]
    fn an_in_stream_error_is_typed() {
        let err = decode("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long\"}}\n\n").unwrap_err();
        assert_eq!(err.kind(), "context_length");
    }
}
