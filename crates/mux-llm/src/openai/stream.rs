//! Chat Completions chunks, translated to [`StreamEvent`]s.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::blocks::{Blocks, end_message};
use crate::decode::{EventMapper, Flow};
use crate::error::LlmError;
use crate::event::{BlockStart, StreamEvent};
use crate::response::{StopReason, Usage};
use crate::sse::SseEventRef;

use super::wire::{stop_reason, usage};

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u32,
    #[serde(default)]
    delta: Delta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Default, Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default, alias = "reasoning")]
    reasoning_content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

#[derive(Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

/// Translates a Chat Completions stream. Tolerates the compatible servers' quirks: missing
/// tool-call ids (one is made up), `usage: null` on every chunk, a whole tool call in one
/// chunk, extra fields, and no `[DONE]` after the finish chunk.
#[derive(Debug)]
pub struct OpenAiDecoder {
    provider: String,
    started: bool,
    blocks: Blocks,
    text: Option<usize>,
    reasoning: Option<usize>,
    tools: BTreeMap<usize, usize>,
    refused: bool,
    finish: Option<StopReason>,
    usage: Option<Usage>,
}

impl OpenAiDecoder {
    /// A decoder for one stream; `provider` names the server in errors.
    pub fn new(provider: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            started: false,
            blocks: Blocks::default(),
            text: None,
            reasoning: None,
            tools: BTreeMap::new(),
            refused: false,
            finish: None,
            usage: None,
        }
    }

    fn text_block(&mut self, out: &mut Vec<StreamEvent>) -> usize {
        match self.text {
            Some(index) => index,
            None => {
                let index = self.blocks.open(BlockStart::Text, out);
                self.text = Some(index);
                index
            }
        }
    }

    fn finish_message(&mut self, out: &mut Vec<StreamEvent>) {
        self.blocks.close_all(out);
        let mut reason = self
            .finish
            .take()
            .unwrap_or_else(|| StopReason::Other("unknown".into()));
        if self.refused && reason == StopReason::EndTurn {
            reason = StopReason::Refusal;
        }
        end_message(out, reason, self.usage.take());
    }
}

impl EventMapper for OpenAiDecoder {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn on_event(
        &mut self,
        event: SseEventRef<'_>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, LlmError> {
        if event.is_done() {
            if self.finish.is_none() {
                return Err(LlmError::transport(
                    &self.provider,
                    "the stream ended ([DONE]) without a finish_reason",
                ));
            }
            self.finish_message(out);
            return Ok(Flow::Done);
        }
        let chunk: Chunk = serde_json::from_str(event.data).map_err(|err| {
            LlmError::decode(
                &self.provider,
                format!("bad stream chunk: {err}"),
                event.data,
            )
        })?;
        if let Some(error) = chunk.error {
            let (kind, message) =
                crate::http::error_body(&serde_json::json!({"error": error}).to_string());
            let kind = kind.unwrap_or_else(|| "server_error".into());
            return Err(LlmError::in_stream(
                &self.provider,
                &kind,
                message.unwrap_or_else(|| error.to_string()),
            ));
        }
        if !self.started {
            self.started = true;
            out.push(StreamEvent::MessageStart {
                id: chunk.id.filter(|id| !id.is_empty()),
                model: chunk.model.filter(|m| !m.is_empty()),
                usage: Usage::default(),
            });
        }
        if let Some(u) = chunk.usage.as_ref().and_then(usage) {
            self.usage = Some(u);
        }
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            let delta = choice.delta;
            if let Some(thinking) = delta.reasoning_content.filter(|t| !t.is_empty()) {
                let index = match self.reasoning {
                    Some(index) => index,
                    None => {
                        let index = self.blocks.open(BlockStart::Thinking, out);
                        self.reasoning = Some(index);
                        index
                    }
                };
                out.push(StreamEvent::ThinkingDelta { index, thinking });
            }
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                let index = self.text_block(out);
                out.push(StreamEvent::TextDelta { index, text });
            }
            if let Some(text) = delta.refusal.filter(|t| !t.is_empty()) {
                self.refused = true;
                let index = self.text_block(out);
                out.push(StreamEvent::TextDelta { index, text });
            }
            for call in delta.tool_calls.into_iter().flatten() {
                let position = call.index.unwrap_or(self.tools.len());
                let function = call.function;
                let index = match self.tools.get(&position) {
                    Some(index) => *index,
                    None => {
                        let id = call
                            .id
                            .filter(|id| !id.is_empty())
                            .unwrap_or_else(|| format!("call_{position}"));
                        let name = function
                            .as_ref()
                            .and_then(|f| f.name.clone())
                            .unwrap_or_default();
                        let index = self.blocks.open(BlockStart::ToolUse { id, name }, out);
                        self.tools.insert(position, index);
                        index
                    }
                };
                if let Some(arguments) =
                    function.and_then(|f| f.arguments).filter(|a| !a.is_empty())
                {
                    out.push(StreamEvent::ToolInputDelta {
                        index,
                        partial_json: arguments,
                    });
                }
            }
            if let Some(finish) = choice.finish_reason.filter(|f| !f.is_empty()) {
                self.finish = Some(stop_reason(&finish));
            }
        }
        Ok(Flow::Continue)
    }

    fn on_end(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.finish.is_none() {
            return Err(LlmError::transport(
                &self.provider,
                "the stream ended before a finish_reason",
            ));
        }
        self.finish_message(out);
        Ok(())
    }
}
