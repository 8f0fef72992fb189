//! Cutting text and tool outputs to a size on UTF-8 boundaries, always visibly.

use serde_json::json;

pub use crate::utf8_cut::{floor_char_boundary, truncate_str};
use crate::{Content, ToolOutput};

/// Metadata key set on an output that was cut, holding `{"omitted_bytes", "limit_bytes"}`.
pub const TRUNCATED_METADATA_KEY: &str = "mux.truncated";

/// Cuts `output` so that its content holds at most `limit` bytes (text, serialized JSON and
/// image data all count). Returns the number of bytes omitted, or 0 if nothing was cut.
///
/// A cut is never silent: a final text block says how much was omitted, and the metadata key
/// [`TRUNCATED_METADATA_KEY`] records it.
///
/// ```
/// use mux_tool::{truncate::limit_output, ToolOutput};
///
/// let mut out = ToolOutput::text("héllo wörld");
/// let omitted = limit_output(&mut out, 2);
/// assert_eq!(out.content[0].as_text(), Some("h")); // "é" is two bytes and does not fit
/// assert!(omitted > 0);
/// assert!(out.to_text().contains("output truncated"));
/// ```
pub fn limit_output(output: &mut ToolOutput, limit: usize) -> usize {
    // Most outputs fit: they are left as they are, with no new block list.
    let mut total = 0usize;
    if output.content.iter().all(|block| {
        total = total.saturating_add(content_size(block));
        total <= limit
    }) {
        return 0;
    }
    let mut remaining = limit;
    let mut omitted = 0usize;
    let mut kept = Vec::with_capacity(output.content.len());
    for block in output.content.drain(..) {
        let size = content_size(&block);
        if size <= remaining {
            remaining -= size;
            kept.push(block);
            continue;
        }
        if remaining == 0 {
            omitted += size;
            continue;
        }
        match block {
            Content::Text { text } => {
                let cut = floor_char_boundary(&text, remaining);
                omitted += text.len() - cut;
                remaining -= cut;
                let mut text = text;
                text.truncate(cut);
                kept.push(Content::Text { text });
            }
            Content::Json { value } => {
                let serialized = value.to_string();
                let cut = floor_char_boundary(&serialized, remaining);
                omitted += serialized.len() - cut;
                remaining -= cut;
                kept.push(Content::text(&serialized[..cut]));
            }
            other => omitted += content_size(&other),
        }
    }
    output.content = kept;
    if omitted > 0 {
        output.content.push(Content::text(format!(
            "\n[output truncated: {omitted} bytes omitted; the limit is {limit} bytes]"
        )));
        output.metadata.insert(
            TRUNCATED_METADATA_KEY.to_owned(),
            json!({"omitted_bytes": omitted, "limit_bytes": limit}),
        );
    }
    omitted
}

/// The length of `value` serialized, counted without building the text.
fn json_len(value: &serde_json::Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

fn content_size(block: &Content) -> usize {
    match block {
        Content::Text { text } => text.len(),
        Content::Json { value } => json_len(value),
        Content::Image { data, .. } | Content::Audio { data, .. } => data.len(),
        Content::Resource {
            uri,
            mime_type,
            text,
            blob,
        } => {
            uri.len()
                + mime_type.as_ref().map_or(0, String::len)
                + text.as_ref().map_or(0, String::len)
                + blob.as_ref().map_or(0, String::len)
        }
        Content::ResourceLink {
            uri,
            name,
            description,
            mime_type,
        } => {
            uri.len()
                + name.as_ref().map_or(0, String::len)
                + description.as_ref().map_or(0, String::len)
                + mime_type.as_ref().map_or(0, String::len)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn multibyte_text_is_cut_on_a_char_boundary() {
        let mut out = ToolOutput::text("日本語テキスト");
        let omitted = limit_output(&mut out, 7);
        assert_eq!(out.content[0].as_text(), Some("日本"));
        assert_eq!(omitted, "日本語テキスト".len() - "日本".len());
        assert_eq!(
            out.metadata[TRUNCATED_METADATA_KEY]["omitted_bytes"],
            omitted
        );
    }

    #[test]
    fn blocks_past_the_limit_are_counted_not_dropped_silently() {
        let mut out = ToolOutput::text("abcd")
            .with_content(Content::image("A".repeat(100), "image/png"))
            .with_content(Content::text("tail"));
        let omitted = limit_output(&mut out, 6);
        assert_eq!(omitted, 100 + 2);
        assert_eq!(out.content[0].as_text(), Some("abcd"));
        assert_eq!(out.content[1].as_text(), Some("ta"));
        assert!(out.to_text().contains("102 bytes omitted"));
    }

    #[test]
    fn output_within_the_limit_is_untouched() {
        let mut out = ToolOutput::text("short");
        assert_eq!(limit_output(&mut out, 5), 0);
        assert_eq!(out, ToolOutput::text("short"));
    }

    #[test]
    fn json_is_measured_as_its_serialized_text() {
        let value = serde_json::json!({"k": "日本", "n": [1, 2.5, null], "q": "a\"b"});
        assert_eq!(json_len(&value), value.to_string().len());
        let mut out = ToolOutput::json(value.clone());
        let limit = value.to_string().len();
        assert_eq!(limit_output(&mut out, limit), 0);
        assert_eq!(limit_output(&mut out, limit - 1), 1);
    }

    proptest! {
        #[test]
        fn truncation_never_splits_a_char_and_never_exceeds(s in "\\PC{0,64}", limit in 0usize..80) {
            let mut out = ToolOutput::text(s.clone());
            let omitted = limit_output(&mut out, limit);
            let blocks = if omitted > 0 { out.content.len() - 1 } else { out.content.len() };
            let kept: String = out.content[..blocks].iter().filter_map(Content::as_text).collect();
            let kept = kept.as_str();
            prop_assert!(kept.len() <= limit);
            prop_assert!(s.starts_with(kept));
            prop_assert_eq!(kept.len() + omitted, s.len());
        }
    }
}
