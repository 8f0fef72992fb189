//! Mapping an MCP `CallToolResult` onto a mux `ToolOutput`.

use mux_tool::{Content, ToolOutput};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Value, json};

/// One MCP content block as a mux content block, moving its strings.
fn block(item: ContentBlock) -> Content {
    match item {
        ContentBlock::Text(text) => Content::text(text.text),
        ContentBlock::Image(image) => Content::image(image.data, image.mime_type),
        ContentBlock::Audio(audio) => Content::Audio {
            data: audio.data,
            mime_type: audio.mime_type,
        },
        ContentBlock::ResourceLink(link) => Content::ResourceLink {
            uri: link.uri,
            name: Some(link.name),
            description: link.description,
            mime_type: link.mime_type,
        },
        ContentBlock::Resource(embedded) => match embedded.resource {
            ResourceContents::TextResourceContents {
                uri,
                mime_type,
                text,
                ..
            } => Content::Resource {
                uri,
                mime_type,
                text: Some(text),
                blob: None,
            },
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => Content::Resource {
                uri,
                mime_type,
                text: None,
                blob: Some(blob),
            },
            // A resource kind newer than this code: keep it whole rather than drop it.
            other => wire(&other),
        },
        // A block type newer than this code: keep it whole rather than drop it.
        other => wire(&other),
    }
}

/// A block mux has no type for, as its wire JSON.
fn wire(item: &impl serde::Serialize) -> Content {
    match serde_json::to_value(item) {
        Ok(value) => Content::json(value),
        Err(err) => Content::text(format!("[mux: a content block could not be read: {err}]")),
    }
}

/// Converts a tool result: each content block in order, then `structuredContent` as a JSON
/// block (replacing a text block that only repeats it as JSON); `isError` becomes
/// [`ToolOutput::is_error`]. Metadata records the server and tool.
pub(crate) fn to_output(result: CallToolResult, server: &str, tool: &str) -> ToolOutput {
    let mut content = Vec::with_capacity(result.content.len() + 1);
    content.extend(result.content.into_iter().map(block));
    if let Some(structured) = result.structured_content {
        // Servers usually repeat structured content as JSON text; keep one typed copy.
        let repeated = content.iter().position(|block| {
            block
                .as_text()
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
                .is_some_and(|value| value == structured)
        });
        match repeated {
            Some(index) => content[index] = Content::json(structured),
            None => content.push(Content::json(structured)),
        }
    }
    ToolOutput {
        content,
        is_error: result.is_error.unwrap_or(false),
        ..ToolOutput::default()
    }
    .with_metadata("mcp", json!({"server": server, "tool": tool}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_content_kind_maps() {
        let result: CallToolResult = serde_json::from_value(json!({
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "aW1n", "mimeType": "image/png"},
                {"type": "audio", "data": "YXVk", "mimeType": "audio/wav"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "A"}},
                {"type": "resource_link", "uri": "file:///b", "name": "b"}
            ],
            "structuredContent": {"n": 1},
            "isError": true
        }))
        .unwrap();
        let out = to_output(result, "srv", "tool");
        assert!(out.is_error);
        assert_eq!(
            out.content,
            vec![
                Content::text("hi"),
                Content::image("aW1n", "image/png"),
                Content::Audio {
                    data: "YXVk".into(),
                    mime_type: "audio/wav".into()
                },
                Content::Resource {
                    uri: "file:///a.txt".into(),
                    mime_type: Some("text/plain".into()),
                    text: Some("A".into()),
                    blob: None
                },
                Content::ResourceLink {
                    uri: "file:///b".into(),
                    name: Some("b".into()),
                    description: None,
                    mime_type: None
                },
                Content::json(json!({"n": 1})),
            ]
        );
        assert_eq!(
            out.metadata["mcp"],
            json!({"server": "srv", "tool": "tool"})
        );
    }
}
