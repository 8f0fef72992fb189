//! Gemini stream chunks, translated to [`StreamEvent`]s.

use serde_json::Value;

use crate::blocks::{Blocks, end_message};
use crate::decode::{EventMapper, Flow};
use crate::error::LlmError;
use crate::event::{BlockStart, StreamEvent};
use crate::response::{Response, StopReason, Usage};
use crate::sse::SseEventRef;

use super::wire::{stop_reason, usage};

/// Translates a `streamGenerateContent?alt=sse` stream. Each chunk is a whole
/// `GenerateContentResponse`; function calls arrive whole. The stream has no terminal event:
/// it ends with the body, after a chunk with a `finishReason`.
#[derive(Debug, Default)]
pub struct GeminiDecoder {
    started: bool,
    blocks: Blocks,
    text: Option<usize>,
    thought: Option<usize>,
    calls: usize,
    finish: Option<String>,
    usage: Option<Usage>,
}

impl GeminiDecoder {
    /// A decoder for one stream.
    pub fn new() -> Self {
        Self::default()
    }

    fn close_text(&mut self, out: &mut Vec<StreamEvent>) {
        for slot in [self.text.take(), self.thought.take()]
            .into_iter()
            .flatten()
        {
            self.blocks.close(slot, out);
        }
    }

    /// Handles one `GenerateContentResponse`.
    pub(crate) fn on_chunk(
        &mut self,
        chunk: &Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), LlmError> {
        if let Some(error) = chunk.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("error")
                .to_owned();
            let status = error.get("code").and_then(Value::as_u64).unwrap_or(500);
            let kind = error.get("status").and_then(Value::as_str);
            let status = u16::try_from(status).unwrap_or(500);
            return Err(LlmError::from_status("gemini", status, kind, message, None));
        }
        if !self.started {
            self.started = true;
            out.push(StreamEvent::MessageStart {
                id: chunk
                    .get("responseId")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                model: chunk
                    .get("modelVersion")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                usage: Usage::default(),
            });
        }
        if let Some(u) = chunk.get("usageMetadata").and_then(usage) {
            self.usage = Some(u);
        }
        if let Some(reason) = chunk
            .pointer("/promptFeedback/blockReason")
            .and_then(Value::as_str)
        {
            self.finish = Some(if reason == "BLOCK_REASON_UNSPECIFIED" {
                "OTHER".into()
            } else {
                "SAFETY".into()
            });
        }
        let Some(candidate) = chunk.pointer("/candidates/0") else {
            return Ok(());
        };
        for part in candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let signature = part.get("thoughtSignature").and_then(Value::as_str);
            if let Some(call) = part.get("functionCall") {
                self.close_text(out);
                if let Some(signature) = signature {
                    let index = self.blocks.open(BlockStart::Thinking, out);
                    out.push(StreamEvent::SignatureDelta {
                        index,
                        signature: signature.to_owned(),
                    });
                    self.blocks.close(index, out);
                }
                self.calls += 1;
                let name = call
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                let id = call
                    .get("id")
                    .and_then(Value::as_str)
                    .map_or_else(|| format!("call_{}", self.calls), str::to_owned);
                let args = call
                    .get("args")
                    .cloned()
                    .unwrap_or_else(|| serde_json::json!({}));
                let index = self.blocks.open(BlockStart::ToolUse { id, name }, out);
                out.push(StreamEvent::ToolInputDelta {
                    index,
                    partial_json: args.to_string(),
                });
                self.blocks.close(index, out);
                continue;
            }
            let Some(text) = part.get("text").and_then(Value::as_str) else {
                continue;
            };
            let thought = part
                .get("thought")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if thought {
                let index = match self.thought {
                    Some(index) => index,
                    None => {
                        let index = self.blocks.open(BlockStart::Thinking, out);
                        self.thought = Some(index);
                        index
                    }
                };
                out.push(StreamEvent::ThinkingDelta {
                    index,
                    thinking: text.to_owned(),
                });
                if let Some(signature) = signature {
                    out.push(StreamEvent::SignatureDelta {
                        index,
                        signature: signature.to_owned(),
                    });
                }
            } else if !text.is_empty() {
                let index = match self.text {
                    Some(index) => index,
                    None => {
                        let index = self.blocks.open(BlockStart::Text, out);
                        self.text = Some(index);
                        index
                    }
                };
                out.push(StreamEvent::TextDelta {
                    index,
                    text: text.to_owned(),
                });
            }
        }
        if let Some(finish) = candidate.get("finishReason").and_then(Value::as_str) {
            self.finish = Some(finish.to_owned());
        }
        Ok(())
    }

    /// Closes the message after the last chunk.
    pub(crate) fn finish_into(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        let Some(finish) = self.finish.take() else {
            return Err(LlmError::transport(
                "gemini",
                "the stream ended before a finishReason",
            ));
        };
        self.blocks.close_all(out);
        let reason: StopReason = stop_reason(&finish, self.calls > 0);
        end_message(out, reason, self.usage.take());
        Ok(())
    }
}

impl EventMapper for GeminiDecoder {
    fn provider(&self) -> &str {
        "gemini"
    }

    fn on_event(
        &mut self,
        event: SseEventRef<'_>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, LlmError> {
        let chunk: Value = serde_json::from_str(event.data).map_err(|err| {
            LlmError::decode("gemini", format!("bad stream chunk: {err}"), event.data)
        })?;
        self.on_chunk(&chunk, out)?;
        Ok(Flow::Continue)
    }

    fn on_end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        self.finish_into(out)
    }
}

/// Converts a `generateContent` reply to a [`Response`] (through the stream decoder, since a
/// reply is one chunk of a stream).
pub fn response_from_json(value: &Value) -> Result<Response, LlmError> {
    let mut decoder = GeminiDecoder::new();
    let mut events: Vec<StreamEvent> = Vec::new();
    decoder.on_chunk(value, &mut events)?;
    decoder.finish_into(&mut events)?;
    let mut acc = crate::accumulate::Accumulator::new("gemini");
    for event in &events {
        acc.push(event)?;
    }
    acc.finish()
}
