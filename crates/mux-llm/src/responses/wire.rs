//! The Responses API wire format: input items, tools, `text.format`, usage, and the reply.

use serde_json::{Map, Value, json};

use crate::error::LlmError;
use crate::message::RESPONSES_REASONING as REASONING_MARK;
use crate::message::{ContentBlock, Message, Role};
use crate::openai_content::{
    UsageFields, image_url, schema_name, tool_arguments, tool_choice, usage_at, user_parts,
};
use crate::request::{OutputSchema, Request};
use crate::response::{Response, StopReason, Usage};

/// What a request asks of the Responses API beyond the [`Request`] itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResponsesOptions {
    /// Ask for reasoning items' encrypted content (`include: ["reasoning.encrypted_content"]`)
    /// and send `store: false`: nothing is kept on the server, and reasoning is carried across
    /// turns in the items themselves.
    pub encrypted_reasoning: bool,
    /// `reasoning.summary` (`auto`, `concise`, `detailed`): ask for a readable summary of the
    /// reasoning, streamed as thinking text. Sent only when the request asks for thinking.
    pub reasoning_summary: Option<String>,
}

/// A thinking block's signature that carries a reasoning item: its id and, when asked for,
/// its encrypted content. The block's text is the item's summary.
pub(crate) fn reasoning_signature(id: &str, encrypted_content: Option<&str>) -> String {
    let mut value = json!({"type": REASONING_MARK, "id": id});
    if let Some(content) = encrypted_content {
        value["encrypted_content"] = json!(content);
    }
    value.to_string()
}

/// The reasoning item a thinking block's signature describes; `None` for another provider's
/// signature, which this API cannot take.
fn reasoning_item(summary: &str, signature: &str) -> Option<Value> {
    let value: Value = serde_json::from_str(signature).ok()?;
    if value["type"] != REASONING_MARK {
        return None;
    }
    let id = value["id"].as_str()?;
    // The summary goes back as one part: its parts were joined when it was received.
    let summary: Vec<Value> = if summary.is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "summary_text", "text": summary})]
    };
    let mut item = json!({"type": "reasoning", "id": id, "summary": summary});
    if let Some(content) = value["encrypted_content"].as_str() {
        item["encrypted_content"] = json!(content);
    }
    Some(item)
}

/// What separates two summary parts in a thinking block's text.
pub(crate) const SUMMARY_SEPARATOR: &str = "\n\n";

/// Appends the input items of one message, in block order: user text and images as one
/// message, tool results as `function_call_output`, and for the assistant, reasoning items,
/// text as an assistant message and tool calls as `function_call`.
fn push_items(message: &Message, out: &mut Vec<Value>) {
    match message.role {
        Role::User => {
            let parts = user_parts(
                &message.content,
                out,
                |id, output| json!({"type": "function_call_output", "call_id": id, "output": output}),
                |text| json!({"type": "input_text", "text": text}),
                |source| json!({"type": "input_image", "image_url": image_url(source)}),
            );
            if !parts.is_empty() {
                out.push(json!({"type": "message", "role": "user", "content": parts}));
            }
        }
        Role::Assistant => {
            let mut text = String::new();
            let flush = |text: &mut String, out: &mut Vec<Value>| {
                if !text.is_empty() {
                    out.push(json!({
                        "type": "message",
                        "role": "assistant",
                        "content": std::mem::take(text),
                    }));
                }
            };
            for block in &message.content {
                match block {
                    ContentBlock::Text { text: t } => text.push_str(t),
                    ContentBlock::Thinking {
                        thinking,
                        signature,
                    } => {
                        if let Some(item) = reasoning_item(thinking, signature) {
                            flush(&mut text, out);
                            out.push(item);
                        }
                    }
                    ContentBlock::RedactedThinking { data } => {
                        if let Some(item) = reasoning_item("", data) {
                            flush(&mut text, out);
                            out.push(item);
                        }
                    }
                    ContentBlock::ToolUse { id, name, input } => {
                        flush(&mut text, out);
                        out.push(json!({
                            "type": "function_call",
                            "call_id": id,
                            "name": name,
                            "arguments": input.to_string(),
                        }));
                    }
                    _ => {}
                }
            }
            flush(&mut text, out);
        }
    }
}

/// The JSON body of a `POST /responses` request. Stop sequences have no field in this API, so a
/// request carrying them is refused rather than sent without them.
pub fn request_body(
    request: &Request,
    options: &ResponsesOptions,
    stream: bool,
) -> Result<Value, LlmError> {
    if !request.stop_sequences.is_empty() {
        return Err(LlmError::new(
            "openai-responses",
            crate::LlmFailure::Config {
                message: "the Responses API has no stop sequences; remove them from the request"
                    .into(),
            },
        ));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    if let Some(system) = &request.system {
        body.insert("instructions".into(), json!(system));
    }
    let mut input = Vec::new();
    for message in request.messages.iter() {
        push_items(message, &mut input);
    }
    body.insert("input".into(), Value::Array(input));
    body.insert("max_output_tokens".into(), json!(request.max_tokens));
    let tools = request.sorted_tools();
    if !tools.is_empty() {
        let tools: Vec<Value> = tools
            .into_iter()
            .map(|spec| {
                let strict = crate::request::is_strict_schema(&spec.input_schema);
                json!({
                    "type": "function",
                    "name": spec.name.as_str(),
                    "description": spec.description,
                    "parameters": spec.input_schema,
                    "strict": strict,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = tool_choice(
            &request.tool_choice,
            |name| json!({"type": "function", "name": name}),
        );
        body.insert("tool_choice".into(), choice);
    }
    if let Some(output) = &request.output {
        body.insert("text".into(), json!({"format": text_format(output)}));
    }
    if let Some(temperature) = request.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(thinking) = &request.thinking {
        let mut reasoning = json!({"effort": thinking.effort().as_str()});
        if let Some(summary) = &options.reasoning_summary {
            reasoning["summary"] = json!(summary);
        }
        body.insert("reasoning".into(), reasoning);
    }
    if options.encrypted_reasoning {
        body.insert("store".into(), Value::Bool(false));
        body.insert("include".into(), json!(["reasoning.encrypted_content"]));
    }
    if let Some(user) = request.metadata.get("user_id") {
        body.insert("safety_identifier".into(), json!(user));
    }
    if stream {
        body.insert("stream".into(), Value::Bool(true));
    }
    Ok(Value::Object(body))
}

/// `text.format` for structured output: a json_schema format, strict when the schema allows.
fn text_format(output: &OutputSchema) -> Value {
    let name = schema_name(&output.name);
    json!({
        "type": "json_schema",
        "name": name,
        "schema": output.schema,
        "strict": output.is_strict_compatible(),
    })
}

/// Reads a `usage` object: `input_tokens` counts cached tokens too, so they are split off.
pub(crate) fn usage(value: &Value) -> Option<Usage> {
    usage_at(
        value,
        &UsageFields {
            input: "/input_tokens",
            cached: "/input_tokens_details/cached_tokens",
            output: "/output_tokens",
            reasoning: "/output_tokens_details/reasoning_tokens",
        },
    )
}

/// The stop reason of an incomplete response, from `incomplete_details.reason`.
pub(crate) fn incomplete_reason(response: &Value) -> StopReason {
    match response
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str)
    {
        Some("max_output_tokens") => StopReason::MaxTokens,
        Some("content_filter") => StopReason::Refusal,
        Some(other) => StopReason::Other(other.to_owned()),
        None => StopReason::Other("incomplete".into()),
    }
}

/// The typed error of a failed response (`response.error`) or an `error` event, whose fields
/// sit at the top level (OpenAI) or under `error` (Open Responses).
pub(crate) fn error_of(provider: &str, value: &Value) -> LlmError {
    let error = value
        .get("error")
        .filter(|e| e.is_object())
        .unwrap_or(value);
    let code = error["code"]
        .as_str()
        .or_else(|| error["type"].as_str().filter(|t| *t != "error"))
        .unwrap_or("server_error");
    let message = error["message"]
        .as_str()
        .map_or_else(|| format!("the response failed ({code})"), str::to_owned);
    let kind = match code {
        "rate_limit_exceeded" | "rate_limit_error" => "rate_limit_error",
        "server_error" | "api_error" | "internal_error" => "server_error",
        "server_is_overloaded" | "overloaded_error" | "slow_down" => "overloaded_error",
        "context_length_exceeded" => "context_length_exceeded",
        "authentication_error" | "invalid_api_key" => "authentication_error",
        "permission_error" => "permission_error",
        _ => "invalid_request_error",
    };
    LlmError::in_stream(provider, kind, format!("{message} ({code})"))
}

/// Converts a non-streaming `response` object to a [`Response`].
pub fn response_from_json(provider: &str, value: &Value) -> Result<Response, LlmError> {
    match value["status"].as_str() {
        Some("failed") => return Err(error_of(provider, &value["error"])),
        Some("completed" | "incomplete") | None => {}
        Some(other) => {
            return Err(LlmError::decode(
                provider,
                format!("the response is `{other}`, not finished"),
                &value.to_string(),
            ));
        }
    }
    let output = value["output"]
        .as_array()
        .ok_or_else(|| LlmError::decode(provider, "the reply has no output", &value.to_string()))?;
    let mut content = Vec::new();
    let mut called = false;
    let mut refused = false;
    for item in output {
        match item["type"].as_str() {
            Some("reasoning") => {
                let Some(id) = item["id"].as_str() else {
                    continue;
                };
                let summary: Vec<&str> = item["summary"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|part| part["text"].as_str())
                    .collect();
                content.push(ContentBlock::Thinking {
                    thinking: summary.join(SUMMARY_SEPARATOR),
                    signature: reasoning_signature(id, item["encrypted_content"].as_str()),
                });
            }
            Some("message") => {
                let mut text = String::new();
                for part in item["content"].as_array().into_iter().flatten() {
                    match part["type"].as_str() {
                        Some("output_text") => text.push_str(part["text"].as_str().unwrap_or("")),
                        Some("refusal") => {
                            refused = true;
                            text.push_str(part["refusal"].as_str().unwrap_or(""));
                        }
                        _ => {}
                    }
                }
                if !text.is_empty() {
                    content.push(ContentBlock::text(text));
                }
            }
            Some("function_call") => {
                called = true;
                let name = item["name"].as_str().unwrap_or_default();
                let arguments = item["arguments"].as_str().unwrap_or("");
                let input = tool_arguments(provider, name, arguments)?;
                let id = item["call_id"]
                    .as_str()
                    .or(item["id"].as_str())
                    .unwrap_or_default();
                content.push(ContentBlock::tool_use(id, name, input));
            }
            _ => {}
        }
    }
    let stop_reason = if value["status"] == "incomplete" {
        incomplete_reason(value)
    } else if refused {
        StopReason::Refusal
    } else if called {
        StopReason::ToolUse
    } else {
        StopReason::EndTurn
    };
    Ok(Response {
        id: value["id"].as_str().map(str::to_owned),
        model: value["model"].as_str().map(str::to_owned),
        content,
        stop_reason,
        stop_sequence: None,
        usage: usage(&value["usage"]).unwrap_or_default(),
        stop_details: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reasoning_signature_round_trips_and_a_foreign_one_is_skipped() {
        let signature = reasoning_signature("rs_1", Some("gAAAA"));
        let item = reasoning_item("first\n\nsecond", &signature).unwrap();
        assert_eq!(
            item,
            json!({"type": "reasoning", "id": "rs_1", "summary": [
                {"type": "summary_text", "text": "first\n\nsecond"},
            ], "encrypted_content": "gAAAA"})
        );
        assert_eq!(reasoning_item("thought", "EqQBCkgIARABGAIiQL"), None);
        assert_eq!(reasoning_item("", r#"{"type":"other","id":"x"}"#), None);
    }

    #[test]
    fn stop_sequences_are_refused() {
        let request = Request::new("gpt-5", 10).user("hi").stop_sequence("END");
        let err = request_body(&request, &ResponsesOptions::default(), true).unwrap_err();
        assert_eq!(err.kind(), "config");
    }

    #[test]
    fn error_codes_map_to_kinds() {
        let kind = |v: Value| error_of("p", &v).kind();
        assert_eq!(
            kind(json!({"code": "server_error", "message": "boom"})),
            "server"
        );
        assert_eq!(kind(json!({"code": "rate_limit_exceeded"})), "rate_limited");
        assert_eq!(
            kind(json!({"code": "context_length_exceeded"})),
            "context_length"
        );
        assert_eq!(kind(json!({"code": "invalid_prompt"})), "invalid_request");
        assert_eq!(
            kind(
                json!({"type": "error", "error": {"type": "server_error", "code": null, "message": "x"}})
            ),
            "server"
        );
    }
}
