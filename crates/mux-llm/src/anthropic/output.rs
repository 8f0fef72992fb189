//! Structured output on Anthropic: a forced output tool whose input becomes the reply's text.
//!
//! The request offers one more tool, [`OutputSchema::TOOL_NAME`], with the schema as its
//! input schema (wrapped in an object when the schema is not one), and makes the model call a
//! tool. The reply's call to it is turned back into a text block holding the JSON, and a turn
//! whose only call was that one ends as [`StopReason::EndTurn`], so a loop reads it as the
//! final answer.

use std::collections::HashMap;

use futures::StreamExt;
use serde_json::{Value, json};

use crate::client::EventStream;
use crate::event::{BlockStart, StreamEvent};
use crate::message::ContentBlock;
use crate::request::{OutputSchema, Request};
use crate::response::{Response, StopReason};

/// The property that holds a non-object answer inside the tool's input.
const WRAPPED: &str = "result";

fn is_object(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// The output tool's definition.
pub(crate) fn tool(output: &OutputSchema) -> Value {
    let input_schema = if is_object(&output.schema) {
        output.schema.clone()
    } else {
        json!({"type": "object", "properties": {WRAPPED: output.schema}, "required": [WRAPPED]})
    };
    json!({
        "name": OutputSchema::TOOL_NAME,
        "description": format!(
            "Give your final answer ({}). Call this once, when you are done, with the answer as its input.",
            output.name
        ),
        "input_schema": input_schema,
    })
}

/// The tool choice that makes the model answer through the tool: that tool when it is the
/// only one, any tool otherwise; `auto` with extended thinking, which allows no forcing.
pub(crate) fn tool_choice(request: &Request) -> Value {
    if request.thinking.is_some() {
        json!({"type": "auto"})
    } else if request.tools.is_empty() {
        json!({"type": "tool", "name": OutputSchema::TOOL_NAME})
    } else {
        json!({"type": "any"})
    }
}

/// The answer's JSON text from the tool's input.
fn answer_text(output: &OutputSchema, input: &Value) -> String {
    let answer = if is_object(&output.schema) {
        input
    } else {
        input.get(WRAPPED).unwrap_or(input)
    };
    answer.to_string()
}

/// Turns the output tool's call in a whole response into the reply's only text: text the
/// model wrote beside it (a preamble) would spoil the JSON.
pub(crate) fn into_text(output: &OutputSchema, mut response: Response) -> Response {
    let answered = response
        .tool_calls()
        .any(|(_, name, _)| name == OutputSchema::TOOL_NAME);
    if answered {
        response
            .content
            .retain(|block| !matches!(block, ContentBlock::Text { .. }));
    }
    let mut other_calls = false;
    for block in &mut response.content {
        if let ContentBlock::ToolUse { name, input, .. } = block {
            if name == OutputSchema::TOOL_NAME {
                *block = ContentBlock::text(answer_text(output, input));
            } else {
                other_calls = true;
            }
        }
    }
    if response.stop_reason == StopReason::ToolUse && !other_calls {
        response.stop_reason = StopReason::EndTurn;
    }
    response
}

/// Does [`into_text`] on a stream. The output tool's block is held back until it is
/// complete, then sent as one text block at its index; the model's own text is held back to
/// the end of the message, and dropped if the output tool answered.
pub(crate) fn stream_into_text(output: OutputSchema, stream: EventStream) -> EventStream {
    let mut state = Rewrite {
        output,
        answers: HashMap::new(),
        texts: Vec::new(),
        text_blocks: Vec::new(),
        answered: false,
        other_calls: false,
    };
    Box::pin(stream.flat_map(move |event| {
        let events = match event {
            Ok(event) => state.push(event).into_iter().map(Ok).collect(),
            Err(error) => vec![Err(error)],
        };
        futures::stream::iter(events)
    }))
}

struct Rewrite {
    output: OutputSchema,
    /// Output-tool blocks being received: index → JSON so far.
    answers: HashMap<usize, String>,
    /// The model's text events, held back.
    texts: Vec<StreamEvent>,
    text_blocks: Vec<usize>,
    answered: bool,
    other_calls: bool,
}

impl Rewrite {
    fn push(&mut self, event: StreamEvent) -> Vec<StreamEvent> {
        match event {
            StreamEvent::BlockStart {
                index,
                block: BlockStart::ToolUse { name, .. },
            } if name == OutputSchema::TOOL_NAME => {
                self.answers.insert(index, String::new());
                vec![]
            }
            StreamEvent::ToolInputDelta {
                index,
                partial_json,
            } if self.answers.contains_key(&index) => {
                if let Some(json) = self.answers.get_mut(&index) {
                    json.push_str(&partial_json);
                }
                vec![]
            }
            StreamEvent::BlockStop { index } if self.answers.contains_key(&index) => {
                let json = self.answers.remove(&index).unwrap_or_default();
                let input: Value = serde_json::from_str(&json).unwrap_or(Value::String(json));
                self.answered = true;
                vec![
                    StreamEvent::BlockStart {
                        index,
                        block: BlockStart::Text,
                    },
                    StreamEvent::TextDelta {
                        index,
                        text: answer_text(&self.output, &input),
                    },
                    StreamEvent::BlockStop { index },
                ]
            }
            StreamEvent::BlockStart {
                index,
                block: BlockStart::Text,
            } => {
                self.text_blocks.push(index);
                self.texts.push(StreamEvent::BlockStart {
                    index,
                    block: BlockStart::Text,
                });
                vec![]
            }
            event @ (StreamEvent::TextDelta { index, .. } | StreamEvent::BlockStop { index })
                if self.text_blocks.contains(&index) =>
            {
                self.texts.push(event);
                vec![]
            }
            StreamEvent::BlockStart {
                index,
                block: block @ BlockStart::ToolUse { .. },
            } => {
                self.other_calls = true;
                vec![StreamEvent::BlockStart { index, block }]
            }
            StreamEvent::MessageDelta {
                stop_reason,
                stop_sequence,
                usage,
            } => {
                let stop_reason = match stop_reason {
                    Some(StopReason::ToolUse) if !self.other_calls => Some(StopReason::EndTurn),
                    other => other,
                };
                let mut events = self.release_texts();
                events.push(StreamEvent::MessageDelta {
                    stop_reason,
                    stop_sequence,
                    usage,
                });
                events
            }
            StreamEvent::MessageStop => {
                let mut events = self.release_texts();
                events.push(StreamEvent::MessageStop);
                events
            }
            other => vec![other],
        }
    }

    /// The held-back text, unless the output tool answered.
    fn release_texts(&mut self) -> Vec<StreamEvent> {
        let texts = std::mem::take(&mut self.texts);
        if self.answered { Vec::new() } else { texts }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::events_of;

    fn weather() -> OutputSchema {
        OutputSchema::new(
            "weather",
            json!({"type": "object", "properties": {"temp": {"type": "number"}}, "required": ["temp"]}),
        )
    }

    #[test]
    fn a_non_object_schema_is_wrapped_and_unwrapped() {
        let list = OutputSchema::new(
            "names",
            json!({"type": "array", "items": {"type": "string"}}),
        );
        assert_eq!(
            tool(&list)["input_schema"]["properties"]["result"]["type"],
            "array"
        );
        let reply = Response::from_tool_use("t1", "final_result", json!({"result": ["a", "b"]}));
        let reply = into_text(&list, reply);
        assert_eq!(reply.text(), r#"["a","b"]"#);
        assert_eq!(reply.stop_reason, StopReason::EndTurn);
    }

    #[tokio::test]
    async fn a_preamble_beside_the_answer_is_dropped_and_plain_text_kept() {
        let mut reply = Response::from_text("Let me answer.");
        reply.content.push(ContentBlock::tool_use(
            "t1",
            "final_result",
            json!({"temp": 1}),
        ));
        reply.stop_reason = StopReason::ToolUse;
        let events: Vec<_> = events_of(&reply).into_iter().map(Ok).collect();
        let stream = stream_into_text(weather(), Box::pin(futures::stream::iter(events)));
        let streamed = crate::accumulate("anthropic", stream).await.unwrap();
        assert_eq!(streamed.text(), r#"{"temp":1}"#);
        assert_eq!(into_text(&weather(), reply).text(), r#"{"temp":1}"#);

        // No output call: the text arrives whole, at the end of the message.
        let plain = Response::from_text("I cannot say.");
        let events: Vec<_> = events_of(&plain).into_iter().map(Ok).collect();
        let stream = stream_into_text(weather(), Box::pin(futures::stream::iter(events)));
        let streamed = crate::accumulate("anthropic", stream).await.unwrap();
        assert_eq!(streamed.text(), "I cannot say.");
    }

    #[test]
    fn another_call_keeps_the_turn_going() {
        let mut reply = Response::from_tool_use("t1", "final_result", json!({"temp": 3}));
        reply
            .content
            .push(ContentBlock::tool_use("t2", "lookup", json!({})));
        let reply = into_text(&weather(), reply);
        assert_eq!(reply.stop_reason, StopReason::ToolUse);
        assert_eq!(reply.text(), r#"{"temp":3}"#);
    }

    #[tokio::test]
    async fn a_streamed_output_call_becomes_one_text_block() {
        let reply = Response::from_tool_use("t1", "final_result", json!({"temp": 21.5}));
        let events: Vec<_> = events_of(&reply).into_iter().map(Ok).collect();
        let stream = stream_into_text(weather(), Box::pin(futures::stream::iter(events)));
        let response = crate::accumulate("anthropic", stream).await.unwrap();
        assert_eq!(response.text(), r#"{"temp":21.5}"#);
        assert_eq!(response.stop_reason, StopReason::EndTurn);
    }
}
