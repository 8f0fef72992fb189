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

/// Turns the output tool's call in a whole response into text.
pub(crate) fn into_text(output: &OutputSchema, mut response: Response) -> Response {
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

/// Does [`into_text`] on a stream: the output tool's block is held back until it is complete,
/// then sent as one text block at its index.
pub(crate) fn stream_into_text(output: OutputSchema, stream: EventStream) -> EventStream {
    let mut held: HashMap<usize, String> = HashMap::new();
    let mut other_calls = false;
    Box::pin(stream.flat_map(move |event| {
        let events: Vec<_> = match event {
            Ok(StreamEvent::BlockStart {
                index,
                block: BlockStart::ToolUse { name, .. },
            }) if name == OutputSchema::TOOL_NAME => {
                held.insert(index, String::new());
                vec![]
            }
            Ok(StreamEvent::ToolInputDelta {
                index,
                partial_json,
            }) if held.contains_key(&index) => {
                if let Some(json) = held.get_mut(&index) {
                    json.push_str(&partial_json);
                }
                vec![]
            }
            Ok(StreamEvent::BlockStop { index }) if held.contains_key(&index) => {
                let json = held.remove(&index).unwrap_or_default();
                let input: Value = serde_json::from_str(&json).unwrap_or(Value::String(json));
                vec![
                    Ok(StreamEvent::BlockStart {
                        index,
                        block: BlockStart::Text,
                    }),
                    Ok(StreamEvent::TextDelta {
                        index,
                        text: answer_text(&output, &input),
                    }),
                    Ok(StreamEvent::BlockStop { index }),
                ]
            }
            Ok(StreamEvent::BlockStart {
                index,
                block: block @ BlockStart::ToolUse { .. },
            }) => {
                other_calls = true;
                vec![Ok(StreamEvent::BlockStart { index, block })]
            }
            Ok(StreamEvent::MessageDelta {
                stop_reason: Some(StopReason::ToolUse),
                stop_sequence,
                usage,
            }) if !other_calls => vec![Ok(StreamEvent::MessageDelta {
                stop_reason: Some(StopReason::EndTurn),
                stop_sequence,
                usage,
            })],
            other => vec![other],
        };
        futures::stream::iter(events)
    }))
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
        let list = OutputSchema::new("names", json!({"type": "array", "items": {"type": "string"}}));
        assert_eq!(tool(&list)["input_schema"]["properties"]["result"]["type"], "array");
        let reply = Response::from_tool_use("t1", "final_result", json!({"result": ["a", "b"]}));
        let reply = into_text(&list, reply);
        assert_eq!(reply.text(), r#"["a","b"]"#);
        assert_eq!(reply.stop_reason, StopReason::EndTurn);
    }

    #[test]
    fn another_call_keeps_the_turn_going() {
        let mut reply = Response::from_tool_use("t1", "final_result", json!({"temp": 3}));
        reply.content.push(ContentBlock::tool_use("t2", "lookup", json!({})));
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
