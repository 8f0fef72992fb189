//! An ACP prompt (text, resource links, embedded resources) as the text the loop reads.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};

use crate::AcpError;

/// Joins the prompt's blocks into one user message. Links are named by their URI, embedded
/// text resources are inlined in a `<context>` element (as Zed's own adapters do), and
/// images and audio, which this face does not advertise, are refused.
pub(crate) fn prompt_text(blocks: &[ContentBlock]) -> Result<String, AcpError> {
    let mut parts = Vec::with_capacity(blocks.len());
    for block in blocks {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            ContentBlock::ResourceLink(link) => {
                parts.push(format!("@{} ({})", link.name, link.uri));
            }
            ContentBlock::Resource(embedded) => match &embedded.resource {
                EmbeddedResourceResource::TextResourceContents(resource) => parts.push(format!(
                    "<context ref=\"{}\">\n{}\n</context>",
                    resource.uri, resource.text
                )),
                EmbeddedResourceResource::BlobResourceContents(resource) => {
                    parts.push(format!("@{} (binary resource)", resource.uri));
                }
                _ => return Err(AcpError::UnsupportedContent("this resource")),
            },
            ContentBlock::Image(_) => return Err(AcpError::UnsupportedContent("image")),
            ContentBlock::Audio(_) => return Err(AcpError::UnsupportedContent("audio")),
            _ => return Err(AcpError::UnsupportedContent("this content block")),
        }
    }
    Ok(parts.join("\n\n"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn blocks(value: serde_json::Value) -> Vec<ContentBlock> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn text_links_and_resources_become_one_message() {
        let prompt = blocks(json!([
            {"type": "text", "text": "Explain"},
            {"type": "resource_link", "name": "main.rs", "uri": "file:///p/main.rs"},
            {"type": "resource", "resource": {"uri": "file:///p/a.rs", "text": "fn a() {}"}}
        ]));
        assert_eq!(
            prompt_text(&prompt).unwrap(),
            "Explain\n\n@main.rs (file:///p/main.rs)\n\n<context ref=\"file:///p/a.rs\">\nfn a() {}\n</context>"
        );
    }

    #[test]
    fn an_image_is_refused_by_name() {
        let prompt = blocks(json!([{"type": "image", "data": "AAAA", "mimeType": "image/png"}]));
        assert!(
            prompt_text(&prompt)
                .unwrap_err()
                .to_string()
                .contains("image")
        );
    }
}
