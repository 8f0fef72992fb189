//! Content as both OpenAI APIs (Chat Completions and Responses) take it.

use serde_json::{Value, json};

use crate::error::LlmError;
use crate::message::{ContentBlock, ImageSource};
use crate::request::ToolChoice;
use crate::response::Usage;

/// An image as a URL: a `data:` URL for inline bytes.
pub(crate) fn image_url(source: &ImageSource) -> String {
    match source {
        ImageSource::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
        ImageSource::Url { url } => url.clone(),
    }
}

/// The text of tool-result content. Tool results carry text only, so an image becomes a
/// visible placeholder rather than disappearing.
pub(crate) fn text_of(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            ContentBlock::Image { .. } => {
                Some("[image omitted: tool results carry text only in this API]")
            }
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A tool result as the text both APIs send back: the content's text, with `Error: ` in front
/// when the tool failed (neither API has an error flag on tool results).
pub(crate) fn tool_result_text(blocks: &[ContentBlock], is_error: bool) -> String {
    let text = text_of(blocks);
    if is_error {
        format!("Error: {text}")
    } else {
        text
    }
}

/// Walks a user message's blocks for both APIs: each tool result is pushed to `out` at once,
/// as `result(tool_use_id, text)` (the text from [`tool_result_text`]); text and images become
/// the parts returned, through `text` and `image`. Other blocks are not sent.
pub(crate) fn user_parts(
    content: &[ContentBlock],
    out: &mut Vec<Value>,
    result: impl Fn(&str, String) -> Value,
    text: impl Fn(&str) -> Value,
    image: impl Fn(&ImageSource) -> Value,
) -> Vec<Value> {
    let mut parts = Vec::new();
    for block in content {
        match block {
            ContentBlock::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => out.push(result(tool_use_id, tool_result_text(content, *is_error))),
            ContentBlock::Text { text: t } => parts.push(text(t)),
            ContentBlock::Image { source } => parts.push(image(source)),
            _ => {}
        }
    }
    parts
}

/// An output schema's name as both APIs accept it: at most 64 of `A-Z a-z 0-9 _ -` (anything
/// else becomes `_`), `output` when nothing is left.
pub(crate) fn schema_name(name: &str) -> String {
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.is_empty() {
        "output".to_owned()
    } else {
        name
    }
}

/// A tool choice as both APIs spell it; `named` writes the choice of one tool, the one place
/// they differ.
pub(crate) fn tool_choice(choice: &ToolChoice, named: impl Fn(&str) -> Value) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::Any => json!("required"),
        ToolChoice::None => json!("none"),
        ToolChoice::Tool { name } => named(name),
    }
}

/// The JSON pointers of a `usage` object's counts; the two APIs name them differently.
pub(crate) struct UsageFields {
    /// Input tokens, cached ones included.
    pub input: &'static str,
    /// The cached part of the input.
    pub cached: &'static str,
    /// Output tokens.
    pub output: &'static str,
    /// The reasoning part of the output.
    pub reasoning: &'static str,
}

/// Reads a `usage` object; the input count includes cached tokens, so they are split off.
/// `None` when `value` is not an object.
pub(crate) fn usage_at(value: &Value, fields: &UsageFields) -> Option<Usage> {
    if !value.is_object() {
        return None;
    }
    let n = |pointer: &str| value.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let cached = n(fields.cached);
    Some(Usage {
        input_tokens: n(fields.input).saturating_sub(cached),
        output_tokens: n(fields.output),
        cache_read_tokens: cached,
        cache_write_tokens: 0,
        reasoning_tokens: n(fields.reasoning),
    })
}

/// The arguments of a tool call named `name`, sent as a JSON string: blank is `{}`, and text
/// that is not JSON is a decode error naming the tool.
pub(crate) fn tool_arguments(
    provider: &str,
    name: &str,
    arguments: &str,
) -> Result<Value, LlmError> {
    if arguments.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(arguments).map_err(|err| {
        LlmError::decode(
            provider,
            format!("arguments of tool call `{name}` are not valid JSON: {err}"),
            arguments,
        )
    })
}
