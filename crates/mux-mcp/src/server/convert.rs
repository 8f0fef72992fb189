//! mux tool shapes as MCP wire shapes: a `ToolSpec` as an MCP `Tool`, a `ToolOutput` as a
//! `CallToolResult`.

use std::sync::Arc;

use mux_tool::{Content, ToolOutput, ToolSpec};
use rmcp::model::{
    CallToolResult, ContentBlock, JsonObject, Resource, ResourceContents, Tool, ToolAnnotations,
};
use serde_json::Value;

/// The MCP tool for a mux spec: name, description, schemas and the four hints.
pub(crate) fn tool(spec: &ToolSpec) -> Tool {
    let input = object(&spec.input_schema);
    let annotations = ToolAnnotations::new()
        .read_only(spec.annotations.read_only)
        .destructive(spec.annotations.destructive)
        .idempotent(spec.annotations.idempotent)
        .open_world(spec.annotations.open_world);
    let mut tool = Tool::new(
        spec.name.to_string(),
        spec.description.clone(),
        Arc::new(input),
    )
    .with_annotations(annotations);
    if let Some(output) = &spec.output_schema {
        tool = tool.with_raw_output_schema(Arc::new(object(output)));
    }
    tool
}

/// A schema as a JSON object; a schema that is not one (a bare `true`) accepts any object.
fn object(schema: &Value) -> JsonObject {
    match schema {
        Value::Object(map) => map.clone(),
        _ => {
            let mut map = JsonObject::new();
            map.insert("type".into(), Value::String("object".into()));
            map
        }
    }
}

/// The MCP result for a mux output. JSON blocks become `structuredContent` (the last one when
/// there are several) and, as the spec asks for compatibility, their text as a text block.
/// `is_error` becomes `isError`.
pub(crate) fn result(output: ToolOutput) -> CallToolResult {
    let mut blocks = Vec::with_capacity(output.content.len());
    let mut structured = None;
    for item in output.content {
        match item {
            Content::Json { value } => {
                blocks.push(ContentBlock::text(value.to_string()));
                structured = Some(value);
            }
            other => blocks.push(block(other)),
        }
    }
    let mut result = if output.is_error {
        CallToolResult::error(blocks)
    } else {
        CallToolResult::success(blocks)
    };
    result.structured_content = structured;
    result
}

/// One non-JSON content block on the wire.
fn block(item: Content) -> ContentBlock {
    match item {
        Content::Text { text } => ContentBlock::text(text),
        Content::Image { data, mime_type } => ContentBlock::image(data, mime_type),
        Content::Audio { data, mime_type } => ContentBlock::audio(data, mime_type),
        Content::ResourceLink {
            uri,
            name,
            description,
            mime_type,
        } => {
            let name = name.unwrap_or_else(|| uri.clone());
            let mut resource = Resource::new(uri, name);
            if let Some(description) = description {
                resource = resource.with_description(description);
            }
            if let Some(mime_type) = mime_type {
                resource = resource.with_mime_type(mime_type);
            }
            ContentBlock::resource_link(resource)
        }
        Content::Resource {
            uri,
            mime_type,
            text,
            blob,
        } => {
            let contents = match (text, blob) {
                (_, Some(blob)) => ResourceContents::blob(blob, uri),
                (text, None) => ResourceContents::text(text.unwrap_or_default(), uri),
            };
            let contents = match mime_type {
                Some(mime_type) => contents.with_mime_type(mime_type),
                None => contents,
            };
            ContentBlock::resource(contents)
        }
        Content::Json { value } => ContentBlock::text(value.to_string()),
        // A block kind newer than this code: its JSON as text rather than nothing.
        other => ContentBlock::text(serde_json::to_string(&other).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use mux_tool::ToolAnnotations as Hints;
    use serde_json::json;

    #[test]
    fn a_spec_keeps_its_schemas_and_hints() {
        let spec = ToolSpec::new(
            "read_file",
            "Reads a file",
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        )
        .unwrap()
        .with_annotations(Hints::read_only());
        let wire = serde_json::to_value(tool(&spec)).unwrap();
        assert_eq!(wire["name"], "read_file");
        assert_eq!(wire["inputSchema"]["properties"]["path"]["type"], "string");
        assert_eq!(wire["annotations"]["readOnlyHint"], true);
        assert_eq!(wire["annotations"]["destructiveHint"], false);
    }

    #[test]
    fn json_becomes_structured_content_and_errors_set_is_error() {
        let out = ToolOutput::json(json!({"n": 1}));
        let wire = serde_json::to_value(result(out)).unwrap();
        assert_eq!(wire["structuredContent"], json!({"n": 1}));
        assert_eq!(wire["content"][0]["text"], "{\"n\":1}");
        assert_eq!(wire["isError"], false);
        let wire = serde_json::to_value(result(ToolOutput::error("no"))).unwrap();
        assert_eq!(wire["isError"], true);
        assert_eq!(wire["content"][0]["text"], "no");
    }
}
