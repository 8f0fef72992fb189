//! Content as both OpenAI APIs (Chat Completions and Responses) take it.

use crate::message::{ContentBlock, ImageSource};

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
