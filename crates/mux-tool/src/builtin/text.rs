//! Byte-to-text helpers that never split a UTF-8 character.

use std::borrow::Cow;

/// How many bytes at the end of `bytes` start a UTF-8 character that is not complete yet.
pub(crate) fn incomplete_suffix_len(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let byte = bytes[bytes.len() - back];
        if byte & 0xC0 == 0x80 {
            continue; // a continuation byte: look further back for the lead byte
        }
        let needed = match byte {
            0xF0.. => 4,
            0xE0.. => 3,
            0xC0.. => 2,
            _ => 1,
        };
        return if needed > back { back } else { 0 };
    }
    0
}

/// `bytes` as text, without an incomplete character at the end (it was cut), with invalid
/// sequences replaced by U+FFFD.
pub(crate) fn decode_head(bytes: &[u8]) -> Cow<'_, str> {
    let end = bytes.len() - incomplete_suffix_len(bytes);
    String::from_utf8_lossy(&bytes[..end])
}

/// `bytes` as text, without the continuation bytes of a character cut at the start.
pub(crate) fn decode_tail(bytes: &[u8]) -> Cow<'_, str> {
    let start = bytes
        .iter()
        .take(3)
        .take_while(|b| **b & 0xC0 == 0x80)
        .count();
    String::from_utf8_lossy(&bytes[start..])
}

/// Decodes a byte stream chunk by chunk, holding back a character split across chunks.
#[derive(Debug, Default)]
pub(crate) struct Utf8Stream {
    pending: Vec<u8>,
}

impl Utf8Stream {
    /// The text completed by `chunk`.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> String {
        self.pending.extend_from_slice(chunk);
        let end = self.pending.len() - incomplete_suffix_len(&self.pending);
        let text = String::from_utf8_lossy(&self.pending[..end]).into_owned();
        self.pending.drain(..end);
        text
    }

    /// Whatever is left at the end of the stream.
    pub(crate) fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_cut_character_is_dropped_from_the_head() {
        let bytes = "aé".as_bytes();
        assert_eq!(decode_head(&bytes[..2]), "a");
        assert_eq!(decode_head(bytes), "aé");
        assert_eq!(
            decode_head("日本".as_bytes().get(..4).unwrap_or_default()),
            "日"
        );
    }

    #[test]
    fn a_cut_character_is_dropped_from_the_tail() {
        let bytes = "日本".as_bytes();
        assert_eq!(decode_tail(&bytes[1..]), "本");
        assert_eq!(decode_tail(&bytes[3..]), "本");
    }

    proptest! {
        #[test]
        fn streaming_in_any_chunks_gives_back_the_text(s in "\\PC{0,40}", split in 1usize..7) {
            let mut stream = Utf8Stream::default();
            let mut out = String::new();
            for chunk in s.as_bytes().chunks(split) {
                out.push_str(&stream.push(chunk));
            }
            out.push_str(&stream.finish());
            prop_assert_eq!(out, s);
        }

        #[test]
        fn head_and_tail_cuts_never_produce_replacement_characters(s in "\\PC{0,40}", at in 0usize..200) {
            let bytes = s.as_bytes();
            let at = at.min(bytes.len());
            prop_assert!(s.starts_with(decode_head(&bytes[..at]).as_ref()));
            prop_assert!(s.ends_with(decode_tail(&bytes[at..]).as_ref()));
        }
    }
}
