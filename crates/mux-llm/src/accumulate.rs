//! Builds a [`Response`] from stream events. Each content block (and so each parallel tool
//! call) is kept separately by its index.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::error::LlmError;
use crate::event::{BlockStart, StreamEvent};
use crate::message::ContentBlock;
use crate::response::{Response, StopDetails, StopReason, Usage};

#[derive(Debug)]
enum Partial {
    Text(String),
    Thinking {
        thinking: String,
        signature: String,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
}

/// Accumulates [`StreamEvent`]s into a [`Response`].
///
/// ```
/// use mux_llm::{Accumulator, BlockStart, StreamEvent, StopReason};
///
/// let mut acc = Accumulator::new("example");
/// acc.push(&StreamEvent::BlockStart { index: 0, block: BlockStart::Text })?;
/// acc.push(&StreamEvent::TextDelta { index: 0, text: "Hi".into() })?;
/// acc.push(&StreamEvent::MessageDelta { stop_reason: Some(StopReason::EndTurn), stop_sequence: None, usage: None })?;
/// let response = acc.finish()?;
/// assert_eq!(response.text(), "Hi");
/// # Ok::<(), mux_llm::LlmError>(())
/// ```
#[derive(Debug)]
pub struct Accumulator {
    provider: String,
    id: Option<String>,
    model: Option<String>,
    blocks: BTreeMap<usize, Partial>,
    stop_reason: Option<StopReason>,
    stop_sequence: Option<String>,
    usage: Usage,
    stop_details: Option<StopDetails>,
}

impl Accumulator {
    /// An empty accumulator; `provider` names the source in errors.
    pub fn new(provider: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            id: None,
            model: None,
            blocks: BTreeMap::new(),
            stop_reason: None,
            stop_sequence: None,
            usage: Usage::default(),
            stop_details: None,
        }
    }

    /// Applies one event. A delta for a block that never started, or of the wrong kind, is a
    /// decode error.
    pub fn push(&mut self, event: &StreamEvent) -> Result<(), LlmError> {
        match event {
            StreamEvent::MessageStart { id, model, usage } => {
                self.id.clone_from(id);
                self.model.clone_from(model);
                self.usage.merge(usage);
            }
            StreamEvent::BlockStart { index, block } => {
                let partial = match block {
                    BlockStart::Text => Partial::Text(String::new()),
                    BlockStart::Thinking => Partial::Thinking {
                        thinking: String::new(),
                        signature: String::new(),
                    },
                    BlockStart::RedactedThinking { data } => Partial::Redacted(data.clone()),
                    BlockStart::ToolUse { id, name } => Partial::ToolUse {
                        id: id.clone(),
                        name: name.clone(),
                        json: String::new(),
                    },
                };
                self.blocks.insert(*index, partial);
            }
            StreamEvent::TextDelta { index, text } => match self.blocks.get_mut(index) {
                Some(Partial::Text(buf)) => buf.push_str(text),
                _ => return Err(self.mismatch(*index, "text delta")),
            },
            StreamEvent::ThinkingDelta { index, thinking } => match self.blocks.get_mut(index) {
                Some(Partial::Thinking { thinking: buf, .. }) => buf.push_str(thinking),
                _ => return Err(self.mismatch(*index, "thinking delta")),
            },
            StreamEvent::SignatureDelta { index, signature } => match self.blocks.get_mut(index) {
                Some(Partial::Thinking { signature: buf, .. }) => buf.push_str(signature),
                _ => return Err(self.mismatch(*index, "signature delta")),
            },
            StreamEvent::ToolInputDelta {
                index,
                partial_json,
            } => match self.blocks.get_mut(index) {
                Some(Partial::ToolUse { json, .. }) => json.push_str(partial_json),
                _ => return Err(self.mismatch(*index, "tool input delta")),
            },
            StreamEvent::BlockStop { .. }
            | StreamEvent::MessageStop
            | StreamEvent::Fallback { .. } => {}
            StreamEvent::MessageDelta {
                stop_reason,
                stop_sequence,
                usage,
            } => {
                if stop_reason.is_some() {
                    self.stop_reason.clone_from(stop_reason);
                }
                if stop_sequence.is_some() {
                    self.stop_sequence.clone_from(stop_sequence);
                }
                if let Some(usage) = usage {
                    self.usage = *usage;
                }
            }
            StreamEvent::StopDetails(details) => self.stop_details = Some(details.clone()),
        }
        Ok(())
    }

    fn mismatch(&self, index: usize, what: &str) -> LlmError {
        LlmError::decode(
            &self.provider,
            format!("{what} for content block {index}, which is not open or of another kind"),
            "",
        )
    }

    /// The usage seen so far.
    pub fn usage(&self) -> Usage {
        self.usage
    }

    /// Builds the response. Tool arguments are parsed here; arguments cut off by
    /// `max_tokens` are kept as the raw string, any other invalid JSON is a decode error.
    pub fn finish(self) -> Result<Response, LlmError> {
        let stop_reason = self
            .stop_reason
            .clone()
            .unwrap_or_else(|| StopReason::Other("unknown".to_owned()));
        let truncated = stop_reason == StopReason::MaxTokens;
        let mut content = Vec::with_capacity(self.blocks.len());
        for (_, partial) in self.blocks {
            content.push(match partial {
                Partial::Text(text) => ContentBlock::Text { text },
                Partial::Thinking {
                    thinking,
                    signature,
                } => ContentBlock::Thinking {
                    thinking,
                    signature,
                },
                Partial::Redacted(data) => ContentBlock::RedactedThinking { data },
                Partial::ToolUse { id, name, json } => {
                    let input = if json.trim().is_empty() {
                        Value::Object(Default::default())
                    } else {
                        match serde_json::from_str(&json) {
                            Ok(value) => value,
                            Err(_) if truncated => Value::String(json),
                            Err(err) => {
                                return Err(LlmError::decode(
                                    &self.provider,
                                    format!("arguments of tool call `{name}` ({id}) are not valid JSON: {err}"),
                                    &json,
                                ));
                            }
                        }
                    };
                    ContentBlock::ToolUse { id, name, input }
                }
            });
        }
        Ok(Response {
            id: self.id,
            model: self.model,
            content,
            stop_reason,
            stop_sequence: self.stop_sequence,
            usage: self.usage,
            stop_details: self.stop_details,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn interleaved_parallel_tool_calls_stay_apart() {
        let mut acc = Accumulator::new("t");
        let events = [
            StreamEvent::BlockStart {
                index: 0,
                block: BlockStart::ToolUse {
                    id: "a".into(),
                    name: "x".into(),
                },
            },
            StreamEvent::BlockStart {
                index: 1,
                block: BlockStart::ToolUse {
                    id: "b".into(),
                    name: "y".into(),
                },
            },
            StreamEvent::ToolInputDelta {
                index: 1,
                partial_json: "{\"q\":".into(),
            },
            StreamEvent::ToolInputDelta {
                index: 0,
                partial_json: "{\"p\":1".into(),
            },
            StreamEvent::ToolInputDelta {
                index: 1,
                partial_json: "2}".into(),
            },
            StreamEvent::ToolInputDelta {
                index: 0,
                partial_json: "}".into(),
            },
            StreamEvent::MessageDelta {
                stop_reason: Some(StopReason::ToolUse),
                stop_sequence: None,
                usage: None,
            },
        ];
        for event in &events {
            acc.push(event).unwrap();
        }
        let response = acc.finish().unwrap();
        let calls: Vec<_> = response
            .tool_calls()
            .map(|(id, _, input)| (id.to_owned(), input.clone()))
            .collect();
        assert_eq!(
            calls,
            vec![
                ("a".to_owned(), json!({"p": 1})),
                ("b".to_owned(), json!({"q": 2}))
            ]
        );
    }

    #[test]
    fn a_delta_without_a_block_is_an_error() {
        let mut acc = Accumulator::new("t");
        let err = acc
            .push(&StreamEvent::TextDelta {
                index: 3,
                text: "x".into(),
            })
            .unwrap_err();
        assert_eq!(err.kind(), "decode");
    }

    #[test]
    fn invalid_tool_json_is_an_error_unless_cut_off() {
        let run = |stop| {
            let mut acc = Accumulator::new("t");
            acc.push(&StreamEvent::BlockStart {
                index: 0,
                block: BlockStart::ToolUse {
                    id: "a".into(),
                    name: "x".into(),
                },
            })
            .unwrap();
            acc.push(&StreamEvent::ToolInputDelta {
                index: 0,
                partial_json: "{\"p\":".into(),
            })
            .unwrap();
            acc.push(&StreamEvent::MessageDelta {
                stop_reason: Some(stop),
                stop_sequence: None,
                usage: None,
            })
            .unwrap();
            acc.finish()
        };
        assert_eq!(run(StopReason::ToolUse).unwrap_err().kind(), "decode");
        let cut = run(StopReason::MaxTokens).unwrap();
        assert_eq!(cut.tool_calls().next().unwrap().2, &json!("{\"p\":"));
    }
}
