//! A byte-level Server-Sent Events decoder.
//!
//! It takes network chunks as they come: a line, a UTF-8 character or a JSON document split
//! across chunks comes out whole. CR, LF and CRLF all end a line (a CR at the end of one chunk
//! and an LF at the start of the next count once). Comment lines are skipped, events whose
//! data is empty (priming events) are dropped, and multi-line data is joined with `\n`.

/// One decoded event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when present.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

impl SseEvent {
    /// Whether this is the `[DONE]` sentinel OpenAI-style streams end with.
    pub fn is_done(&self) -> bool {
        self.data == "[DONE]"
    }

    /// Borrows this event.
    pub fn as_ref(&self) -> SseEventRef<'_> {
        SseEventRef {
            event: self.event.as_deref(),
            data: &self.data,
        }
    }
}

/// One decoded event, borrowing the decoder's buffers (no allocation per event).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseEventRef<'a> {
    /// The `event:` field, when present.
    pub event: Option<&'a str>,
    /// The `data:` lines, joined with `\n`.
    pub data: &'a str,
}

impl SseEventRef<'_> {
    /// Whether this is the `[DONE]` sentinel OpenAI-style streams end with.
    pub fn is_done(&self) -> bool {
        self.data == "[DONE]"
    }

    /// An owned copy.
    pub fn to_owned(&self) -> SseEvent {
        SseEvent {
            event: self.event.map(str::to_owned),
            data: self.data.to_owned(),
        }
    }
}

/// The data of an event was not UTF-8.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("SSE data is not valid UTF-8: {snippet}")]
pub struct SseError {
    /// The offending bytes, lossily decoded and shortened.
    pub snippet: String,
}

/// The decoder state. Feed it chunks with [`SseDecoder::feed`] (owned events) or
/// [`SseDecoder::feed_with`] (borrowed events, no allocation per event).
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// An incomplete line carried over from the previous chunk.
    line: Vec<u8>,
    /// The previous chunk ended with CR: skip an LF at the start of the next.
    after_cr: bool,
    event: Vec<u8>,
    has_event: bool,
    data: Vec<u8>,
    has_data: bool,
}

impl SseDecoder {
    /// A fresh decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes a chunk, pushing every completed event onto `out`.
    pub fn feed(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        self.feed_with(chunk, |event| {
            out.push(event.to_owned());
            Ok::<(), SseError>(())
        })
    }

    /// Ends the input: a last line without a terminator and a last event without a blank
    /// line are still delivered.
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        self.finish_with(|event| {
            out.push(event.to_owned());
            Ok::<(), SseError>(())
        })
    }

    /// Decodes a chunk, calling `on_event` with every completed event.
    pub fn feed_with<E: From<SseError>>(
        &mut self,
        mut chunk: &[u8],
        mut on_event: impl FnMut(SseEventRef<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if chunk.is_empty() {
            return Ok(());
        }
        if self.after_cr {
            self.after_cr = false;
            if let [b'\n', rest @ ..] = chunk {
                chunk = rest;
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', chunk) {
            let terminator = chunk[end];
            if self.line.is_empty() {
                self.process_line(&chunk[..end], &mut on_event)?;
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&chunk[..end]);
                let result = self.process_line(&line, &mut on_event);
                line.clear();
                self.line = line;
                result?;
            }
            let mut next = end + 1;
            if terminator == b'\r' {
                match chunk.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
            chunk = &chunk[next..];
        }
        self.line.extend_from_slice(chunk);
        Ok(())
    }

    /// Like [`SseDecoder::finish`], calling `on_event`.
    pub fn finish_with<E: From<SseError>>(
        &mut self,
        mut on_event: impl FnMut(SseEventRef<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, &mut on_event)?;
        }
        self.dispatch(&mut on_event)
    }

    fn process_line<E: From<SseError>>(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(SseEventRef<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if line.is_empty() {
            return self.dispatch(on_event);
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
                self.has_event = true;
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch<E: From<SseError>>(
        &mut self,
        on_event: &mut impl FnMut(SseEventRef<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let has_event = std::mem::take(&mut self.has_event);
        self.has_data = false;
        if self.data.is_empty() {
            return Ok(());
        }
        let result = match (
            utf8(&self.data),
            has_event.then(|| utf8(&self.event)).transpose(),
        ) {
            (Ok(data), Ok(event)) => on_event(SseEventRef { event, data }),
            (Err(err), _) | (_, Err(err)) => Err(err.into()),
        };
        self.data.clear();
        result
    }
}

fn utf8(bytes: &[u8]) -> Result<&str, SseError> {
    std::str::from_utf8(bytes).map_err(|_| SseError {
        snippet: crate::error::snippet(&String::from_utf8_lossy(bytes)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        for chunk in chunks {
            decoder.feed(chunk, &mut out).unwrap();
        }
        decoder.finish(&mut out).unwrap();
        out
    }

    fn ev(event: Option<&str>, data: &str) -> SseEvent {
        SseEvent {
            event: event.map(str::to_owned),
            data: data.to_owned(),
        }
    }

    #[test]
    fn all_line_endings_are_accepted() {
        for sep in ["\n", "\r", "\r\n"] {
            let text = format!("event: a{sep}data: 1{sep}{sep}data: 2{sep}{sep}");
            assert_eq!(
                decode_chunks(&[text.as_bytes()]),
                vec![ev(Some("a"), "1"), ev(None, "2")],
                "separator {sep:?}"
            );
        }
    }

    #[test]
    fn comments_and_priming_events_are_ignored() {
        let text = b": keep-alive\n\ndata:\n\nevent: ping\ndata:\n\n:comment\ndata: x\n\n";
        assert_eq!(decode_chunks(&[text]), vec![ev(None, "x")]);
    }

    #[test]
    fn multi_line_data_is_joined() {
        let text = b"data: {\"a\":\ndata: 1}\n\n";
        assert_eq!(decode_chunks(&[text]), vec![ev(None, "{\"a\":\n1}")]);
    }

    #[test]
    fn a_split_utf8_character_comes_out_whole() {
        let text = "data: 40°C\n\n".as_bytes();
        let at = text.iter().position(|b| *b == 0xC2).unwrap() + 1;
        assert_eq!(
            decode_chunks(&[&text[..at], &text[at..]]),
            vec![ev(None, "40°C")]
        );
    }

    #[test]
    fn a_cr_lf_split_across_chunks_ends_one_line() {
        let out = decode_chunks(&[b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"]);
        assert_eq!(out, vec![ev(None, "a"), ev(None, "b")]);
    }

    #[test]
    fn done_is_recognized_and_unterminated_input_is_flushed() {
        let out = decode_chunks(&[b"data: [DONE]"]);
        assert!(out[0].is_done());
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let mut decoder = SseDecoder::new();
        let mut out = Vec::new();
        assert!(decoder.feed(b"data: \xff\xfe\n\n", &mut out).is_err());
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let text =
            "event: x\r\ndata: é1\r\n\r\n: c\ndata: 2\rdata: 3\r\rdata: [DONE]\n\n".as_bytes();
        let whole = decode_chunks(&[text]);
        for a in 0..=text.len() {
            for b in a..=text.len() {
                assert_eq!(
                    decode_chunks(&[&text[..a], &text[a..b], &text[b..]]),
                    whole,
                    "split at {a},{b}"
                );
            }
        }
    }
}
