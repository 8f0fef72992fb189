//! The Gemini wire format.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::message::{ContentBlock, ImageSource, Role};
use crate::request::{Request, ToolChoice};
use crate::response::{StopReason, Usage};

fn text_of(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(ContentBlock::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The JSON body of a `generateContent` request. Tool results name their function, found
/// through the matching tool call earlier in the conversation. A thinking block with a
/// signature but no text carries the signature Gemini attached to the next part.
pub fn request_body(request: &Request) -> Value {
    let mut names: HashMap<&str, &str> = HashMap::new();
    for message in request.messages.iter() {
        for block in &message.content {
            if let ContentBlock::ToolUse { id, name, .. } = block {
                names.insert(id, name);
            }
        }
    }
    let mut contents = Vec::new();
    for message in request.messages.iter() {
        let mut parts = Vec::new();
        let mut signature: Option<&str> = None;
        for block in &message.content {
            let mut part = match block {
                ContentBlock::Text { text } => json!({"text": text}),
                ContentBlock::Image { source } => match source {
                    ImageSource::Base64 { media_type, data } => {
                        json!({"inlineData": {"mimeType": media_type, "data": data}})
                    }
                    ImageSource::Url { url } => json!({"fileData": {"fileUri": url}}),
                },
                ContentBlock::ToolUse { id, name, input } => {
                    json!({"functionCall": {"id": id, "name": name, "args": input}})
                }
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    is_error,
                } => {
                    let key = if *is_error { "error" } else { "result" };
                    json!({"functionResponse": {
                        "id": tool_use_id,
                        "name": names.get(tool_use_id.as_str()).copied().unwrap_or(tool_use_id.as_str()),
                        "response": {key: text_of(content)},
                    }})
                }
                ContentBlock::Thinking {
                    thinking,
                    signature: sig,
                } => {
                    // A Responses reasoning item is OpenAI's alone: left out.
                    if crate::message::is_responses_reasoning(sig) {
                        continue;
                    }
                    if thinking.is_empty() {
                        signature = Some(sig.as_str()).filter(|s| !s.is_empty());
                        continue;
                    }
                    let mut part = json!({"text": thinking, "thought": true});
                    if !sig.is_empty() {
                        part["thoughtSignature"] = json!(sig);
                    }
                    part
                }
                ContentBlock::RedactedThinking { .. } => continue,
            };
            if let Some(sig) = signature.take() {
                part["thoughtSignature"] = json!(sig);
            }
            parts.push(part);
        }
        if parts.is_empty() {
            continue;
        }
        let role = match message.role {
            Role::User => "user",
            Role::Assistant => "model",
        };
        contents.push(json!({"role": role, "parts": parts}));
    }
    let mut body = Map::new();
    body.insert("contents".into(), Value::Array(contents));
    if let Some(system) = &request.system {
        body.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}]}),
        );
    }
    let tools = request.sorted_tools();
    if !tools.is_empty() {
        let declarations: Vec<Value> = tools
            .into_iter()
            .map(|spec| {
                json!({
                    "name": spec.name.as_str(),
                    "description": spec.description,
                    "parametersJsonSchema": spec.input_schema,
                })
            })
            .collect();
        body.insert(
            "tools".into(),
            json!([{"functionDeclarations": declarations}]),
        );
        let config = match &request.tool_choice {
            ToolChoice::Auto => json!({"mode": "AUTO"}),
            ToolChoice::Any => json!({"mode": "ANY"}),
            ToolChoice::None => json!({"mode": "NONE"}),
            ToolChoice::Tool { name } => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
        };
        body.insert(
            "toolConfig".into(),
            json!({"functionCallingConfig": config}),
        );
    }
    let mut generation = Map::new();
    generation.insert("maxOutputTokens".into(), json!(request.max_tokens));
    if let Some(temperature) = request.temperature {
        generation.insert("temperature".into(), json!(temperature));
    }
    if !request.stop_sequences.is_empty() {
        generation.insert("stopSequences".into(), json!(request.stop_sequences));
    }
    if let Some(output) = &request.output {
        // The JSON Schema form of `responseSchema`, as tools use `parametersJsonSchema`:
        // schemars output (`$ref`, `$defs`, `additionalProperties`) needs no translation.
        generation.insert("responseMimeType".into(), json!("application/json"));
        generation.insert("responseJsonSchema".into(), output.schema.clone());
    }
    if let Some(thinking) = &request.thinking {
        generation.insert(
            "thinkingConfig".into(),
            json!({"thinkingBudget": thinking.budget_tokens, "includeThoughts": true}),
        );
    }
    body.insert("generationConfig".into(), Value::Object(generation));
    Value::Object(body)
}

/// Maps a `finishReason`.
pub(crate) fn stop_reason(finish: &str, called_tools: bool) -> StopReason {
    match finish {
        "STOP" if called_tools => StopReason::ToolUse,
        "STOP" => StopReason::EndTurn,
        "MAX_TOKENS" => StopReason::MaxTokens,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            StopReason::Refusal
        }
        other => StopReason::Other(other.to_owned()),
    }
}

/// Reads `usageMetadata`; the prompt count includes cached tokens, the output count
/// excludes thoughts, so both are adjusted.
pub(crate) fn usage(value: &Value) -> Option<Usage> {
    if !value.is_object() {
        return None;
    }
    let n = |key: &str| value.get(key).and_then(Value::as_u64).unwrap_or(0);
    let cached = n("cachedContentTokenCount");
    let thoughts = n("thoughtsTokenCount");
    Some(Usage {
        input_tokens: n("promptTokenCount").saturating_sub(cached),
        output_tokens: n("candidatesTokenCount") + thoughts,
        cache_read_tokens: cached,
        cache_write_tokens: 0,
        reasoning_tokens: thoughts,
    })
}
