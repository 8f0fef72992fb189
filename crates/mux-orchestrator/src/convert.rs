//! Turning tool outputs into the content of a `tool_result` block.

use mux_llm::{ContentBlock, ImageSource};
use mux_tool::{Content, ToolOutput};

/// The `tool_result` block that answers call `call_id` with `output`. Text and images pass
/// through; JSON becomes its compact text; a resource link becomes a line naming it. An empty
/// output becomes an explicit "(no output)", because providers reject empty results.
pub fn tool_result_block(call_id: &str, output: &ToolOutput) -> ContentBlock {
    let mut content = Vec::with_capacity(output.content.len());
    for block in &output.content {
        match block {
            Content::Text { text } => content.push(ContentBlock::text(text.clone())),
            Content::Json { value } => content.push(ContentBlock::text(value.to_string())),
            Content::Image { data, mime_type } => content.push(ContentBlock::Image {
                source: ImageSource::Base64 {
                    media_type: mime_type.clone(),
                    data: data.clone(),
                },
            }),
            Content::ResourceLink { uri, name, .. } => {
                let label = name.as_deref().unwrap_or(uri);
                content.push(ContentBlock::text(format!("[resource {label}: {uri}]")));
            }
            _ => {}
        }
    }
    if content.is_empty() {
        content.push(ContentBlock::text("(no output)"));
    }
    ContentBlock::ToolResult {
        tool_use_id: call_id.to_owned(),
        content,
        is_error: output.is_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn outputs_map_onto_result_blocks() {
        let output = ToolOutput::text("hello")
            .with_content(Content::json(json!({"a": 1})))
            .with_content(Content::image("AAAA", "image/png"))
            .with_content(Content::resource_link("file:///x"));
        let ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
        } = tool_result_block("c1", &output)
        else {
            panic!("not a tool result");
        };
        assert_eq!(tool_use_id, "c1");
        assert!(!is_error);
        assert_eq!(content.len(), 4);
        assert_eq!(content[1].as_text(), Some(r#"{"a":1}"#));
        assert_eq!(
            content[3].as_text(),
            Some("[resource file:///x: file:///x]")
        );
    }

    #[test]
    fn an_empty_error_output_still_says_something() {
        let ContentBlock::ToolResult {
            content, is_error, ..
        } = tool_result_block(
            "c",
            &ToolOutput {
                is_error: true,
                ..Default::default()
            },
        )
        else {
            panic!("not a tool result");
        };
        assert!(is_error);
        assert_eq!(content[0].as_text(), Some("(no output)"));
    }
}
