//! The Messages API wire format: requests out, non-streaming responses in.

use serde_json::{Map, Value, json};

use crate::error::LlmError;
use crate::message::{CacheHint, ContentBlock, ImageSource, Message, Role};
use crate::request::{Request, ToolChoice};
use crate::response::{Response, StopDetails, StopReason, Usage};

fn cache_control(hint: CacheHint) -> Value {
    match hint {
        CacheHint::Ephemeral => json!({"type": "ephemeral"}),
        CacheHint::Long => json!({"type": "ephemeral", "ttl": "1h"}),
    }
}

fn wire_block(block: &ContentBlock) -> Value {
    match block {
        ContentBlock::Text { text } => json!({"type": "text", "text": text}),
        ContentBlock::Image { source } => match source {
            ImageSource::Base64 { media_type, data } => json!({
                "type": "image",
                "source": {"type": "base64", "media_type": media_type, "data": data}
            }),
            ImageSource::Url { url } => {
                json!({"type": "image", "source": {"type": "url", "url": url}})
            }
        },
        ContentBlock::ToolUse { id, name, input } => {
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => {
            let mut value = json!({
                "type": "tool_result",
                "tool_use_id": tool_use_id,
                "content": content.iter().map(wire_block).collect::<Vec<_>>(),
            });
            if *is_error {
                value["is_error"] = Value::Bool(true);
            }
            value
        }
        ContentBlock::Thinking {
            thinking,
            signature,
        } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
        ContentBlock::RedactedThinking { data } => {
            json!({"type": "redacted_thinking", "data": data})
        }
    }
}

fn message(message: &Message, tail_hint: Option<CacheHint>) -> Value {
    // Reasoning items from OpenAI's Responses API cannot be sent here (their signature is not
    // Anthropic's); they are left out.
    let mut content: Vec<Value> = message
        .content
        .iter()
        .filter(|block| match block {
            ContentBlock::Thinking { signature, .. } => {
                !crate::message::is_responses_reasoning(signature)
            }
            ContentBlock::RedactedThinking { data } => {
                !crate::message::is_responses_reasoning(data)
            }
            _ => true,
        })
        .map(wire_block)
        .collect();
    if let (Some(hint), Some(Value::Object(last))) =
        (message.cache.or(tail_hint), content.last_mut())
    {
        last.insert("cache_control".into(), cache_control(hint));
    }
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    json!({"role": role, "content": content})
}

/// The JSON body of a Messages API request.
pub fn request_body(request: &Request, stream: bool) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    body.insert("max_tokens".into(), json!(request.max_tokens));
    if let Some(system) = &request.system {
        let mut text = json!({"type": "text", "text": system});
        if let Some(hint) = request.cache.system {
            text["cache_control"] = cache_control(hint);
        }
        body.insert("system".into(), json!([text]));
    }
    let last = request.messages.len().saturating_sub(1);
    let messages: Vec<Value> = request
        .messages
        .iter()
        .enumerate()
        .map(|(i, m)| message(m, if i == last { request.cache.tail } else { None }))
        .collect();
    body.insert("messages".into(), Value::Array(messages));
    let tools = request.sorted_tools();
    let output_tool = request.output.as_ref().map(super::output::tool);
    if !tools.is_empty() || output_tool.is_some() {
        let count = tools.len() + usize::from(output_tool.is_some());
        let mut tools: Vec<Value> = tools
            .into_iter()
            .map(|spec| {
                json!({
                    "name": spec.name.as_str(),
                    "description": spec.description,
                    "input_schema": spec.input_schema,
                })
            })
            .chain(output_tool)
            .collect();
        if let (Some(last), Some(hint)) = (tools.get_mut(count - 1), request.cache.tools) {
            last["cache_control"] = cache_control(hint);
        }
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &request.tool_choice {
            _ if request.output.is_some() => super::output::tool_choice(request),
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::Any => json!({"type": "any"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Tool { name } => json!({"type": "tool", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if !request.stop_sequences.is_empty() {
        body.insert("stop_sequences".into(), json!(request.stop_sequences));
    }
    if let Some(thinking) = &request.thinking {
        body.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": thinking.budget_tokens}),
        );
    }
    if let Some(user) = request.metadata.get("user_id") {
        body.insert("metadata".into(), json!({"user_id": user}));
    }
    if stream {
        body.insert("stream".into(), Value::Bool(true));
    }
    Value::Object(body)
}

/// Reads a usage object (`message_start`, `message_delta` or a whole message).
pub(crate) fn usage(value: &Value) -> Usage {
    usage_over(Usage::default(), value)
}

/// `base` with every count that `value` reports replaced, zero included: a final
/// `message_delta`'s usage is authoritative for the fields it carries, and the counts it
/// leaves out keep their `message_start` values.
pub(crate) fn usage_over(base: Usage, value: &Value) -> Usage {
    let n = |pointer: &str, old: u64| {
        value
            .pointer(pointer)
            .and_then(Value::as_u64)
            .unwrap_or(old)
    };
    Usage {
        input_tokens: n("/input_tokens", base.input_tokens),
        output_tokens: n("/output_tokens", base.output_tokens),
        cache_read_tokens: n("/cache_read_input_tokens", base.cache_read_tokens),
        cache_write_tokens: n("/cache_creation_input_tokens", base.cache_write_tokens),
        reasoning_tokens: n(
            "/output_tokens_details/thinking_tokens",
            base.reasoning_tokens,
        ),
    }
}

/// Reads `stop_details` (`{type: "refusal", category, explanation}`), when present.
pub(crate) fn stop_details(value: Option<&Value>) -> Option<StopDetails> {
    let value = value.filter(|v| v.is_object())?;
    let field = |key: &str| str_field(value, key).map(str::to_owned);
    Some(StopDetails {
        category: field("category"),
        explanation: field("explanation"),
    })
}

fn str_field<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// Converts a non-streaming Messages API reply to a [`Response`]. Block types this crate does
/// not model (server tools, citations) are skipped.
pub fn response_from_json(value: &Value) -> Result<Response, LlmError> {
    let bad = |what: &str| LlmError::decode("anthropic", what.to_owned(), &value.to_string());
    let blocks = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("the reply has no `content` array"))?;
    let mut content = Vec::with_capacity(blocks.len());
    for item in blocks {
        let text = |key: &str| str_field(item, key).unwrap_or_default().to_owned();
        match str_field(item, "type") {
            Some("text") => content.push(ContentBlock::Text { text: text("text") }),
            Some("thinking") => content.push(ContentBlock::Thinking {
                thinking: text("thinking"),
                signature: text("signature"),
            }),
            Some("redacted_thinking") => {
                content.push(ContentBlock::RedactedThinking { data: text("data") })
            }
            Some("tool_use") => content.push(ContentBlock::ToolUse {
                id: text("id"),
                name: text("name"),
                input: item.get("input").cloned().unwrap_or_else(|| json!({})),
            }),
            _ => {}
        }
    }
    Ok(Response {
        id: str_field(value, "id").map(str::to_owned),
        model: str_field(value, "model").map(str::to_owned),
        content,
        stop_reason: StopReason::parse(str_field(value, "stop_reason").unwrap_or("unknown")),
        stop_sequence: str_field(value, "stop_sequence").map(str::to_owned),
        usage: value.get("usage").map(usage).unwrap_or_default(),
        stop_details: stop_details(value.get("stop_details")),
    })
}
