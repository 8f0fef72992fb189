//! Mapping an MCP `CallToolResult` onto a mux `ToolOutput`.

use mux_tool::{Content, ToolOutput};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

fn string(value: &Value, key: &str) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// One MCP content block (in wire form) as a mux content block.
fn block(value: &Value) -> Content {
    let text = |key| string(value, key).unwrap_or_default();
    match value.get("type").and_then(Value::as_str) {
        Some("text") => Content::text(text("text")),
        Some("image") => Content::image(text("data"), text("mimeType")),
        Some("audio") => Content::Audio {
            data: text("data"),
            mime_type: text("mimeType"),
        },
        Some("resource_link") => Content::ResourceLink {
            uri: text("uri"),
            name: string(value, "name"),
            description: string(value, "description"),
            mime_type: string(value, "mimeType"),
        },
        Some("resource") => {
            let resource = value.get("resource").cloned().unwrap_or(Value::Null);
            Content::Resource {
                uri: string(&resource, "uri").unwrap_or_default(),
                mime_type: string(&resource, "mimeType"),
                text: string(&resource, "text"),
                blob: string(&resource, "blob"),
            }
        }
        // A block type newer than this code: keep it whole rather than drop it.
        _ => Content::json(value.clone()),
    }
}

/// Converts a tool result: each content block in order, then `structuredContent` as a JSON
/// block (replacing a text block that only repeats it as JSON); `isError` becomes
/// [`ToolOutput::is_error`]. Metadata records the server and tool.
pub(crate) fn to_output(result: &CallToolResult, server: &str, tool: &str) -> ToolOutput {
    let mut content = Vec::with_capacity(result.content.len() + 1);
    for item in &result.content {
        match serde_json::to_value(item) {
            Ok(value) => content.push(block(&value)),
            Err(err) => content.push(Content::text(format!(
                "[mux: a content block could not be read: {err}]"
            ))),
        }
    }
    if let Some(structured) = &result.structured_content {
        // Servers usually repeat structured content as JSON text; keep one typed copy.
        let repeated = content.iter().position(|block| {
            block
                .as_text()
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
                .is_some_and(|value| &value == structured)
        });
        match repeated {
            Some(index) => content[index] = Content::json(structured.clone()),
            None => content.push(Content::json(structured.clone())),
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
        let out = to_output(&result, "srv", "tool");
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
