//! Lines of bytes from a reader, with a limit that is enforced as a line is read.

use std::io;

use futures::io::{AsyncBufRead, AsyncBufReadExt};

/// How much of a refused line its error echoes, in bytes.
pub(super) const ECHO: usize = 128;

/// One line of input, as read.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum RawLine {
    /// The line's bytes, without its `\n` (nor a `\r` before it).
    Bytes(Vec<u8>),
    /// A line over the limit: its first bytes and its length.
    TooLong { prefix: Vec<u8>, len: u64 },
}

/// Reads lines of bytes, refusing those over `max` bytes without holding them.
pub(super) struct LineReader<R> {
    pub(super) reader: R,
    pub(super) max: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// The next line, or `None` at the end of input (a last line without `\n` counts).
    pub(super) async fn next(&mut self) -> io::Result<Option<RawLine>> {
        let mut line = Vec::new();
        let mut over: Option<(Vec<u8>, u64)> = None;
        let mut read_any = false;
        loop {
            let buffer = self.reader.fill_buf().await?;
            if buffer.is_empty() {
                return Ok(match over {
                    Some((prefix, len)) => Some(RawLine::TooLong { prefix, len }),
                    None if read_any => Some(RawLine::Bytes(trimmed(line))),
                    None => None,
                });
            }
            read_any = true;
            let newline = buffer.iter().position(|&b| b == b'\n');
            let chunk = &buffer[..newline.unwrap_or(buffer.len())];
            match &mut over {
                Some((_, len)) => *len += chunk.len() as u64,
                None if line.len() + chunk.len() > self.max => {
                    let len = (line.len() + chunk.len()) as u64;
                    let prefix = line.iter().chain(chunk).take(ECHO).copied().collect();
                    // Free what was held: the rest of the line is only counted.
                    line = Vec::new();
                    over = Some((prefix, len));
                }
                None => line.extend_from_slice(chunk),
            }
            let used = newline.map_or(chunk.len(), |at| at + 1);
            self.reader.consume_unpin(used);
            if newline.is_some() {
                return Ok(Some(match over {
                    Some((prefix, len)) => RawLine::TooLong { prefix, len },
                    None => RawLine::Bytes(trimmed(line)),
                }));
            }
        }
    }
}

/// `line` without a trailing `\r`.
fn trimmed(mut line: Vec<u8>) -> Vec<u8> {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    line
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use futures::io::BufReader;

    use super::*;

    /// Every line of `input`, read through a buffer of `capacity` bytes.
    fn read_all(input: &[u8], capacity: usize, max: usize) -> Vec<RawLine> {
        let mut lines = LineReader {
            reader: BufReader::with_capacity(capacity, futures::io::Cursor::new(input.to_vec())),
            max,
        };
        let mut out = Vec::new();
        futures::executor::block_on(async {
            while let Some(line) = lines.next().await.unwrap() {
                out.push(line);
            }
        });
        out
    }

    fn bytes(line: &str) -> RawLine {
        RawLine::Bytes(line.as_bytes().to_vec())
    }

    #[test]
    fn lines_split_across_reads_come_out_whole_without_their_line_ends() {
        let input = b"{\"a\":1}\r\n\nlast without newline";
        for capacity in [1, 2, 3, 7, 64] {
            assert_eq!(
                read_all(input, capacity, 100),
                [bytes("{\"a\":1}"), bytes(""), bytes("last without newline")],
                "buffer of {capacity}"
            );
        }
    }

    #[test]
    fn a_line_over_the_limit_is_counted_not_kept_and_the_next_line_is_read() {
        let long = vec![b'x'; 10_000];
        let mut input = long.clone();
        input.extend_from_slice(b"\nnext\n");
        for capacity in [1, 100, 8192] {
            let lines = read_all(&input, capacity, 1000);
            assert_eq!(lines.len(), 2);
            assert_eq!(
                lines[0],
                RawLine::TooLong {
                    prefix: vec![b'x'; ECHO],
                    len: 10_000
                }
            );
            assert_eq!(lines[1], bytes("next"));
        }
        // Exactly at the limit is accepted; one byte more is not.
        assert_eq!(read_all(b"12345\n", 4, 5), [bytes("12345")]);
        assert!(matches!(
            read_all(b"123456\n", 4, 5)[..],
            [RawLine::TooLong { len: 6, .. }]
        ));
        // Unfinished at the end of input, still refused.
        assert!(matches!(
            read_all(b"123456", 4, 5)[..],
            [RawLine::TooLong { len: 6, .. }]
        ));
    }
}
