//! Responses API streaming events, translated to [`StreamEvent`]s.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::Value;

use crate::blocks::end_message;
use crate::decode::{EventMapper, Flow};
use crate::error::LlmError;
use crate::event::{BlockStart, StreamEvent};
use crate::response::{StopReason, Usage};
use crate::sse::SseEventRef;

use super::wire::{SUMMARY_SEPARATOR, error_of, incomplete_reason, reasoning_signature, usage};

/// What an output item became.
#[derive(Debug)]
enum Kind {
    /// A reasoning item: a thinking block whose signature carries the item at its end.
    Reasoning { id: String },
    /// An assistant message: a text block, opened at its first text.
    Message,
    /// A function call: a tool-use block.
    Call,
}

#[derive(Debug)]
struct Item {
    kind: Kind,
    /// The block, once opened.
    block: Option<usize>,
    /// Whether any text or argument fragment was sent for it (a `.done` event then adds
    /// nothing; without deltas, the `.done` text is the content).
    emitted: bool,
    /// Summary parts begun (reasoning items).
    parts: usize,
}

/// Translates a Responses API stream (`POST /responses` with `stream: true`).
///
/// Items are followed by `output_index` (or `item_id` when a server omits it). Reasoning items
/// become thinking blocks (summary text as thinking, the item id and encrypted content in the
/// signature); messages become text; function calls become tool-use blocks. Text or arguments
/// that arrive only in a `.done` event or in `response.output_item.done` are used when no delta
/// carried them. `response.completed` / `response.incomplete` end the message; `response.failed`
/// and `error` become typed errors.
#[derive(Debug)]
pub struct ResponsesDecoder {
    provider: String,
    started: bool,
    next_index: usize,
    items: BTreeMap<u64, Item>,
    ids: HashMap<String, u64>,
    /// Text parts that received text, by (output index, content index).
    texts: HashSet<(u64, u64)>,
    called: bool,
    refused: bool,
    finished: bool,
}

impl ResponsesDecoder {
    /// A decoder for one stream; `provider` names the server in errors.
    pub fn new(provider: impl Into<String>) -> Self {
        Self {
            provider: provider.into(),
            started: false,
            next_index: 0,
            items: BTreeMap::new(),
            ids: HashMap::new(),
            texts: HashSet::new(),
            called: false,
            refused: false,
            finished: false,
        }
    }

    fn start(&mut self, response: Option<&Value>, out: &mut Vec<StreamEvent>) {
        if self.started {
            return;
        }
        self.started = true;
        let field = |key: &str| {
            response
                .and_then(|r| r[key].as_str())
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        out.push(StreamEvent::MessageStart {
            id: field("id"),
            model: field("model"),
            usage: Usage::default(),
        });
    }

    fn open(&mut self, block: BlockStart, out: &mut Vec<StreamEvent>) -> usize {
        let index = self.next_index;
        self.next_index += 1;
        out.push(StreamEvent::BlockStart { index, block });
        index
    }

    /// The output index an event refers to.
    fn position(&self, event: &Value) -> Option<u64> {
        event["output_index"].as_u64().or_else(|| {
            event["item_id"]
                .as_str()
                .and_then(|id| self.ids.get(id).copied())
        })
    }

    fn add_item(&mut self, position: u64, item: &Value, out: &mut Vec<StreamEvent>) {
        if self.items.contains_key(&position) {
            return;
        }
        let id = item["id"].as_str().unwrap_or_default().to_owned();
        let (kind, block) = match item["type"].as_str() {
            Some("reasoning") => {
                let block = self.open(BlockStart::Thinking, out);
                (Kind::Reasoning { id: id.clone() }, Some(block))
            }
            Some("message") => (Kind::Message, None),
            Some("function_call") => {
                self.called = true;
                let call_id = item["call_id"]
                    .as_str()
                    .filter(|c| !c.is_empty())
                    .unwrap_or(&id)
                    .to_owned();
                let call_id = if call_id.is_empty() {
                    format!("call_{position}")
                } else {
                    call_id
                };
                let name = item["name"].as_str().unwrap_or_default().to_owned();
                let block = self.open(BlockStart::ToolUse { id: call_id, name }, out);
                (Kind::Call, Some(block))
            }
            _ => return,
        };
        if !id.is_empty() {
            self.ids.insert(id, position);
        }
        self.items.insert(
            position,
            Item {
                kind,
                block,
                emitted: false,
                parts: 0,
            },
        );
    }

    /// Text for the message at `position` (added on the fly when a server skipped
    /// `response.output_item.added`).
    fn text(&mut self, position: u64, content: u64, text: &str, out: &mut Vec<StreamEvent>) {
        if text.is_empty() {
            return;
        }
        if !self.items.contains_key(&position) {
            self.add_item(position, &serde_json::json!({"type": "message"}), out);
        }
        let opened = match self.items.get(&position) {
            Some(Item {
                kind: Kind::Message,
                block,
                ..
            }) => *block,
            _ => return,
        };
        let index = match opened {
            Some(index) => index,
            None => {
                let index = self.open(BlockStart::Text, out);
                if let Some(item) = self.items.get_mut(&position) {
                    item.block = Some(index);
                }
                index
            }
        };
        if let Some(item) = self.items.get_mut(&position) {
            item.emitted = true;
        }
        self.texts.insert((position, content));
        out.push(StreamEvent::TextDelta {
            index,
            text: text.to_owned(),
        });
    }

    fn thinking(&mut self, position: u64, text: &str, out: &mut Vec<StreamEvent>) {
        if let Some(item) = self.items.get_mut(&position)
            && let (Kind::Reasoning { .. }, Some(index)) = (&item.kind, item.block)
            && !text.is_empty()
        {
            item.emitted = true;
            out.push(StreamEvent::ThinkingDelta {
                index,
                thinking: text.to_owned(),
            });
        }
    }

    fn arguments(&mut self, position: u64, fragment: &str, out: &mut Vec<StreamEvent>) {
        if let Some(item) = self.items.get_mut(&position)
            && let (Kind::Call, Some(index)) = (&item.kind, item.block)
            && !fragment.is_empty()
        {
            item.emitted = true;
            out.push(StreamEvent::ToolInputDelta {
                index,
                partial_json: fragment.to_owned(),
            });
        }
    }

    fn emitted(&self, position: u64) -> bool {
        self.items.get(&position).is_some_and(|item| item.emitted)
    }

    /// `response.output_item.done`: content no delta carried, the reasoning signature, and
    /// the block's end.
    fn item_done(&mut self, position: u64, item: &Value, out: &mut Vec<StreamEvent>) {
        if !self.items.contains_key(&position) {
            self.add_item(position, item, out);
        }
        let emitted = self.emitted(position);
        match item["type"].as_str() {
            Some("reasoning") if !emitted => {
                // The summary, or else the reasoning text (`content`, from open models).
                let texts = |key: &str| -> Vec<&str> {
                    item[key]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|part| part["text"].as_str())
                        .collect()
                };
                let mut parts = texts("summary");
                if parts.is_empty() {
                    parts = texts("content");
                }
                self.thinking(position, &parts.join(SUMMARY_SEPARATOR), out);
            }
            Some("message") if !emitted => {
                for (i, part) in item["content"].as_array().into_iter().flatten().enumerate() {
                    let text = match part["type"].as_str() {
                        Some("output_text") => part["text"].as_str(),
                        Some("refusal") => {
                            self.refused = true;
                            part["refusal"].as_str()
                        }
                        _ => None,
                    };
                    self.text(position, i as u64, text.unwrap_or(""), out);
                }
            }
            Some("function_call") if !emitted => {
                let arguments = item["arguments"].as_str().unwrap_or("").to_owned();
                self.arguments(position, &arguments, out);
            }
            _ => {}
        }
        let Some(state) = self.items.get_mut(&position) else {
            return;
        };
        let Some(index) = state.block.take() else {
            return;
        };
        if let Kind::Reasoning { id } = &state.kind {
            let id = item["id"].as_str().unwrap_or(id);
            out.push(StreamEvent::SignatureDelta {
                index,
                signature: reasoning_signature(id, item["encrypted_content"].as_str()),
            });
        }
        out.push(StreamEvent::BlockStop { index });
    }

    fn finish(&mut self, reason: StopReason, usage: Option<Usage>, out: &mut Vec<StreamEvent>) {
        for item in self.items.values_mut() {
            if let Some(index) = item.block.take() {
                out.push(StreamEvent::BlockStop { index });
            }
        }
        self.finished = true;
        end_message(out, reason, usage);
    }
}

impl EventMapper for ResponsesDecoder {
    fn provider(&self) -> &str {
        &self.provider
    }

    fn on_event(
        &mut self,
        event: SseEventRef<'_>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<Flow, LlmError> {
        if event.is_done() {
            if self.finished {
                return Ok(Flow::Done);
            }
            return Err(LlmError::transport(
                &self.provider,
                "the stream ended ([DONE]) before response.completed",
            ));
        }
        let data: Value = serde_json::from_str(event.data).map_err(|err| {
            LlmError::decode(
                &self.provider,
                format!("bad stream event: {err}"),
                event.data,
            )
        })?;
        let kind = data["type"].as_str().or(event.event).unwrap_or("");
        let text_of = |key: &str| data[key].as_str().unwrap_or("");
        match kind {
            "error" => return Err(error_of(&self.provider, &data)),
            "response.failed" => {
                return Err(error_of(&self.provider, &data["response"]["error"]));
            }
            "response.created" | "response.in_progress" | "response.queued" => {
                self.start(Some(&data["response"]), out);
                return Ok(Flow::Continue);
            }
            _ => {}
        }
        self.start(data.get("response"), out);
        let position = self.position(&data);
        match (kind, position) {
            ("response.output_item.added", Some(position)) => {
                self.add_item(position, &data["item"], out);
            }
            ("response.output_item.done", Some(position)) => {
                self.item_done(position, &data["item"], out);
            }
            ("response.output_text.delta", Some(position)) => {
                let content = data["content_index"].as_u64().unwrap_or(0);
                self.text(position, content, text_of("delta"), out);
            }
            ("response.refusal.delta", Some(position)) => {
                self.refused = true;
                let content = data["content_index"].as_u64().unwrap_or(0);
                self.text(position, content, text_of("delta"), out);
            }
            ("response.output_text.done" | "response.refusal.done", Some(position)) => {
                let content = data["content_index"].as_u64().unwrap_or(0);
                if !self.texts.contains(&(position, content)) {
                    let key = if kind == "response.refusal.done" {
                        self.refused = true;
                        "refusal"
                    } else {
                        "text"
                    };
                    self.text(position, content, text_of(key), out);
                }
            }
            ("response.reasoning_summary_part.added", Some(position)) => {
                if let Some(item) = self.items.get_mut(&position) {
                    item.parts += 1;
                    if item.parts > 1 && item.emitted {
                        self.thinking(position, SUMMARY_SEPARATOR, out);
                    }
                }
            }
            (
                "response.reasoning_summary_text.delta"
                | "response.reasoning_text.delta"
                | "response.reasoning.delta",
                Some(position),
            ) => self.thinking(position, text_of("delta"), out),
            (
                "response.reasoning_summary_text.done"
                | "response.reasoning_text.done"
                | "response.reasoning.done",
                Some(position),
            ) if !self.emitted(position) => self.thinking(position, text_of("text"), out),
            ("response.function_call_arguments.delta", Some(position)) => {
                self.arguments(position, text_of("delta"), out);
            }
            ("response.function_call_arguments.done", Some(position))
                if !self.emitted(position) =>
            {
                self.arguments(position, text_of("arguments"), out);
            }
            ("response.completed", _) => {
                let response = &data["response"];
                let reason = if self.refused {
                    StopReason::Refusal
                } else if self.called {
                    StopReason::ToolUse
                } else {
                    StopReason::EndTurn
                };
                self.finish(reason, usage(&response["usage"]), out);
                return Ok(Flow::Done);
            }
            ("response.incomplete", _) => {
                let response = &data["response"];
                self.finish(incomplete_reason(response), usage(&response["usage"]), out);
                return Ok(Flow::Done);
            }
            _ => {}
        }
        Ok(Flow::Continue)
    }

    fn on_end(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), LlmError> {
        if self.finished {
            return Ok(());
        }
        Err(LlmError::transport(
            &self.provider,
            "the stream ended before response.completed",
        ))
    }
}
