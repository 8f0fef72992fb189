//! What a tool returns: content blocks, an error flag and metadata.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Presentation;

/// One block of tool output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Content {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Base64 image bytes.
        data: String,
        /// MIME type such as `image/png`.
        mime_type: String,
    },
    /// A link to a resource the model may read later.
    ResourceLink {
        /// The resource URI.
        uri: String,
        /// A short name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// A description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// MIME type, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// Audio, base64-encoded.
    Audio {
        /// Base64 audio bytes.
        data: String,
        /// MIME type such as `audio/wav`.
        mime_type: String,
    },
    /// A resource embedded in the output: its URI and its text or base64 bytes.
    Resource {
        /// The resource URI.
        uri: String,
        /// MIME type, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// The contents, for a text resource.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// The base64 contents, for a binary resource.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        blob: Option<String>,
    },
    /// Structured JSON, matching the tool's output schema when it has one.
    Json {
        /// The value.
        value: Value,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// A JSON block.
    pub fn json(value: Value) -> Self {
        Self::Json { value }
    }

    /// An image block from base64 data.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Self::Image {
            data: data.into(),
            mime_type: mime_type.into(),
        }
    }

    /// A resource link.
    pub fn resource_link(uri: impl Into<String>) -> Self {
        Self::ResourceLink {
            uri: uri.into(),
            name: None,
            description: None,
            mime_type: None,
        }
    }

    /// The text of a text block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Self::Text { text } => Some(text),
            _ => None,
        }
    }
}

/// The result of a tool call as the model will see it.
///
/// A failure the model should read (a file not found, a refused command) is an output with
/// `is_error` set, not a Rust error.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The content blocks, in order.
    pub content: Vec<Content>,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
    /// Extra data for the application (not sent to the model); sorted by key.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, Value>,
}

impl ToolOutput {
    /// A successful output with one text block.
    ///
    /// ```
    /// let out = mux_tool::ToolOutput::text("done");
    /// assert_eq!(out.to_text(), "done");
    /// assert!(!out.is_error);
    /// ```
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            ..Self::default()
        }
    }

    /// A successful output with one JSON block.
    pub fn json(value: Value) -> Self {
        Self {
            content: vec![Content::json(value)],
            ..Self::default()
        }
    }

    /// A failed output with one text block that explains the failure.
    pub fn error(message: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(message)],
            is_error: true,
            ..Self::default()
        }
    }

    /// Adds a content block.
    pub fn with_content(mut self, content: Content) -> Self {
        self.content.push(content);
        self
    }

    /// Adds a metadata entry.
    pub fn with_metadata(mut self, key: impl Into<String>, value: Value) -> Self {
        self.metadata.insert(key.into(), value);
        self
    }

    /// Sets what the call shows on a face (a diff, locations, the todo list), stored in the
    /// metadata under [`Presentation::METADATA_KEY`].
    pub fn with_presentation(mut self, presentation: Presentation) -> Self {
        match serde_json::to_value(&presentation) {
            Ok(value) => {
                self.metadata
                    .insert(Presentation::METADATA_KEY.to_owned(), value);
            }
            Err(err) => {
                tracing::debug!(target: "mux_tool", error = %err, "a presentation did not serialize");
            }
        }
        self
    }

    /// What the call shows on a face, read back from the metadata through the
    /// [`Presentation`] bounds; `None` when there is none or it is not a presentation.
    pub fn presentation(&self) -> Option<Presentation> {
        let value = self.metadata.get(Presentation::METADATA_KEY)?;
        match Presentation::deserialize(value) {
            Ok(presentation) => Some(presentation),
            Err(err) => {
                tracing::debug!(target: "mux_tool", error = %err, "metadata holds no valid presentation");
                None
            }
        }
    }

    /// All text blocks joined with newlines; JSON blocks are included as compact JSON.
    pub fn to_text(&self) -> String {
        let mut parts = Vec::with_capacity(self.content.len());
        for block in &self.content {
            match block {
                Content::Text { text } => parts.push(text.clone()),
                Content::Json { value } => parts.push(value.to_string()),
                _ => {}
            }
        }
        parts.join("\n")
    }
}
