//! The Chat Completions wire format.

use serde_json::{Map, Value, json};

use crate::error::LlmError;
use crate::message::{ContentBlock, Message, Role};
use crate::openai_content::{
    UsageFields, image_url, schema_name, text_of, tool_arguments, tool_choice, usage_at, user_parts,
};
use crate::request::{OutputSchema, Request};
use crate::response::{Response, StopReason, Usage};

/// Differences between OpenAI and the servers that imitate it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WireOptions {
    /// Send `max_completion_tokens` (OpenAI) instead of `max_tokens` (most compatible servers).
    pub max_completion_tokens: bool,
    /// Ask for a final usage chunk with `stream_options.include_usage`.
    pub include_usage: bool,
    /// Send `reasoning_effort` when the request asks for thinking.
    pub reasoning_effort: bool,
}

impl Default for WireOptions {
    fn default() -> Self {
        Self {
            max_completion_tokens: true,
            include_usage: true,
            reasoning_effort: true,
        }
    }
}

/// Appends the wire messages for one message: tool results become `role:"tool"` messages,
/// the rest a user or assistant message. Thinking blocks are not sent (the API has no field
/// for them).
fn push_message(message: &Message, out: &mut Vec<Value>) {
    match message.role {
        Role::User => {
            let parts = user_parts(
                &message.content,
                out,
                |id, text| json!({"role": "tool", "tool_call_id": id, "content": text}),
                |text| json!({"type": "text", "text": text}),
                |source| json!({"type": "image_url", "image_url": {"url": image_url(source)}}),
            );
            if parts.is_empty() {
                return;
            }
            let all_text = parts.iter().all(|p| p["type"] == "text");
            let content = if all_text {
                Value::String(
                    parts
                        .iter()
                        .filter_map(|p| p["text"].as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                )
            } else {
                Value::Array(parts)
            };
            out.push(json!({"role": "user", "content": content}));
        }
        Role::Assistant => {
            let text = text_of(&message.content);
            let calls: Vec<Value> = message
                .content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::ToolUse { id, name, input } => Some(json!({
                        "id": id,
                        "type": "function",
                        "function": {"name": name, "arguments": input.to_string()},
                    })),
                    _ => None,
                })
                .collect();
            let mut wire = json!({"role": "assistant"});
            wire["content"] = if text.is_empty() {
                Value::Null
            } else {
                Value::String(text)
            };
            if !calls.is_empty() {
                wire["tool_calls"] = Value::Array(calls);
            }
            out.push(wire);
        }
    }
}

/// The JSON body of a Chat Completions request.
pub fn request_body(request: &Request, options: WireOptions, stream: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    let mut messages = Vec::new();
    if let Some(system) = &request.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for message in request.messages.iter() {
        push_message(message, &mut messages);
    }
    body.insert("messages".into(), Value::Array(messages));
    let tokens_field = if options.max_completion_tokens {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body.insert(tokens_field.into(), json!(request.max_tokens));
    let tools = request.sorted_tools();
    if !tools.is_empty() {
        let tools: Vec<Value> = tools
            .into_iter()
            .map(|spec| {
                json!({"type": "function", "function": {
                    "name": spec.name.as_str(),
                    "description": spec.description,
                    "parameters": spec.input_schema,
                }})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = tool_choice(
            &request.tool_choice,
            |name| json!({"type": "function", "function": {"name": name}}),
        );
        body.insert("tool_choice".into(), choice);
    }
    if let Some(output) = &request.output {
        body.insert("response_format".into(), response_format(output));
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if !request.stop_sequences.is_empty() {
        body.insert("stop".into(), json!(request.stop_sequences));
    }
    if let (Some(thinking), true) = (&request.thinking, options.reasoning_effort) {
        body.insert("reasoning_effort".into(), json!(thinking.effort().as_str()));
    }
    if let Some(user) = request.metadata.get("user_id") {
        body.insert("user".into(), json!(user));
    }
    if stream {
        body.insert("stream".into(), Value::Bool(true));
        if options.include_usage {
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
    }
    Value::Object(body)
}

/// `response_format: json_schema` for structured output. The name keeps only the characters
/// the API accepts; strict mode is asked for only when the schema allows it.
fn response_format(output: &OutputSchema) -> Value {
    let name = schema_name(&output.name);
    json!({"type": "json_schema", "json_schema": {
        "name": name,
        "schema": output.schema,
        "strict": output.is_strict_compatible(),
    }})
}

/// Maps a `finish_reason` to a normalized stop reason. The API reports a matched stop
/// sequence as `stop` too, so it maps to [`StopReason::EndTurn`].
pub(crate) fn stop_reason(finish: &str) -> StopReason {
    match finish {
        "stop" => StopReason::EndTurn,
        "length" => StopReason::MaxTokens,
        "tool_calls" | "function_call" => StopReason::ToolUse,
        "content_filter" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
    }
}

/// Reads a `usage` object; `prompt_tokens` counts cached tokens too, so they are split off.
pub(crate) fn usage(value: &Value) -> Option<Usage> {
    usage_at(
        value,
        &UsageFields {
            input: "/prompt_tokens",
            cached: "/prompt_tokens_details/cached_tokens",
            output: "/completion_tokens",
            reasoning: "/completion_tokens_details/reasoning_tokens",
        },
    )
}

/// Converts a non-streaming Chat Completions reply to a [`Response`].
pub fn response_from_json(provider: &str, value: &Value) -> Result<Response, LlmError> {
    let choice = value.pointer("/choices/0").ok_or_else(|| {
        LlmError::decode(provider, "the reply has no choices", &value.to_string())
    })?;
    let message = &choice["message"];
    let mut content = Vec::new();
    for key in ["reasoning_content", "reasoning"] {
        if let Some(text) = message[key].as_str().filter(|t| !t.is_empty()) {
            content.push(ContentBlock::Thinking {
                thinking: text.to_owned(),
                signature: String::new(),
            });
            break;
        }
    }
    let refusal = message["refusal"].as_str().filter(|t| !t.is_empty());
    if let Some(text) = message["content"]
        .as_str()
        .filter(|t| !t.is_empty())
        .or(refusal)
    {
        content.push(ContentBlock::text(text));
    }
    for (i, call) in message["tool_calls"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let arguments = call
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or("{}");
        let name = call
            .pointer("/function/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let input = tool_arguments(provider, name, arguments)?;
        content.push(ContentBlock::ToolUse {
            id: call["id"]
                .as_str()
                .map_or_else(|| format!("call_{i}"), str::to_owned),
            name: name.to_owned(),
            input,
        });
    }
    let mut reason = stop_reason(choice["finish_reason"].as_str().unwrap_or("unknown"));
    if refusal.is_some() {
        reason = StopReason::Refusal;
    }
    Ok(Response {
        id: value["id"].as_str().map(str::to_owned),
        model: value["model"].as_str().map(str::to_owned),
        content,
        stop_reason: reason,
        stop_sequence: None,
        usage: usage(&value["usage"]).unwrap_or_default(),
        stop_details: None,
    })
}
