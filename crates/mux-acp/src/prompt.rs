//! An ACP prompt (text, resource links, embedded resources, images) as the user message the
//! loop reads.

use agent_client_protocol::v1::schema::{ContentBlock, EmbeddedResourceResource};
use mux_llm::ImageSource;

use crate::AcpError;

/// A prompt as the loop takes it: its text, and the images sent with it.
#[derive(Debug, Default)]
pub(crate) struct Prompt {
    pub(crate) text: String,
    pub(crate) images: Vec<mux_llm::ContentBlock>,
}

/// Reads the prompt's blocks. Text is joined into one message; links are named by their
/// URI, embedded text resources are inlined in a `<context>` element (as Zed's own adapters
/// do); images go beside the text as image blocks. Audio, which this face does not
/// advertise, is refused.
pub(crate) fn read_prompt(blocks: &[ContentBlock]) -> Result<Prompt, AcpError> {
    let mut parts = Vec::with_capacity(blocks.len());
    let mut images = Vec::new();
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
            ContentBlock::Image(image) => images.push(mux_llm::ContentBlock::Image {
                source: match &image.uri {
                    Some(uri) if image.data.is_empty() => ImageSource::Url { url: uri.clone() },
                    _ => ImageSource::Base64 {
                        media_type: image.mime_type.clone(),
                        data: image.data.clone(),
                    },
                },
            }),
            ContentBlock::Audio(_) => return Err(AcpError::UnsupportedContent("audio")),
            _ => return Err(AcpError::UnsupportedContent("this content block")),
        }
    }
    Ok(Prompt {
        text: parts.join("\n\n"),
        images,
    })
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
            read_prompt(&prompt).unwrap().text,
            "Explain\n\n@main.rs (file:///p/main.rs)\n\n<context ref=\"file:///p/a.rs\">\nfn a() {}\n</context>"
        );
    }

    #[test]
    fn an_image_goes_beside_the_text_and_audio_is_refused_by_name() {
        let prompt = blocks(json!([
            {"type": "text", "text": "What is this?"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
        ]));
        let read = read_prompt(&prompt).unwrap();
        assert_eq!(read.text, "What is this?");
        assert_eq!(
            read.images,
            vec![mux_llm::ContentBlock::Image {
                source: ImageSource::Base64 {
                    media_type: "image/png".into(),
                    data: "iVBORw0KGgo=".into()
                }
            }]
        );
        let audio = blocks(json!([{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]));
        assert!(
            read_prompt(&audio)
                .unwrap_err()
                .to_string()
                .contains("audio")
        );
    }
}
