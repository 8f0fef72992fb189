//! JSON-RPC on a byte stream, one message a line, that no input can stop.
//!
//! The SDK's own byte transport reads text: one line of invalid UTF-8 ends the connection,
//! and a line that is not JSON is answered with a parse error that echoes the whole line.
//! Here the input is read as bytes, one line at a time, and only lines that are UTF-8 and
//! parse as JSON reach the SDK; every other line is answered here with a short JSON-RPC error
//! (`id: null`) and skipped. A line longer than the limit is refused while it is read: its
//! bytes are dropped as they come, never held whole.
//!
//! Errors quote what they refuse (a method name, an id, a path, the SDK's whole params
//! object), so on the way out an error response's message and data are cut to a short text:
//! megabytes in never make megabytes of error out.

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::sync::Arc;

use agent_client_protocol::Lines;
use futures::future::Either;
use futures::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use futures::{AsyncRead, Sink, Stream};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Value, json};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// The longest line accepted by default: 64 MiB.
pub(crate) const DEFAULT_MAX_LINE: usize = 64 * 1024 * 1024;

/// The most JSON values (objects, arrays, members, strings, numbers, literals) one incoming
/// line may hold. The SDK parses every line into a `serde_json::Value`, which takes tens of
/// bytes a value: 57 MiB of `[],` took the agent to 4 GiB. An ACP client's messages hold a
/// few hundred values; their bulk is in strings.
const MAX_VALUES: usize = 100_000;

/// How much of a refused line its error echoes, in bytes.
const ECHO: usize = 128;

/// An outgoing line longer than this is checked for an error response to cut.
const ERROR_LINE: usize = 4096;
/// How much of an error's message and of its data a cut keeps, in bytes.
const ERROR_TEXT: usize = 1024;
/// How every notification the SDK sends starts: never an error response.
const NOTIFICATION: &str = r#"{"jsonrpc":"2.0","method":"#;

/// JSON-RPC's "Parse error".
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's "Invalid Request".
const INVALID_REQUEST: i64 = -32600;

/// One line of input, as read.
#[derive(Debug, PartialEq, Eq)]
enum RawLine {
    /// The line's bytes, without its `\n` (nor a `\r` before it).
    Bytes(Vec<u8>),
    /// A line over the limit: its first bytes and its length.
    TooLong { prefix: Vec<u8>, len: u64 },
}

/// Reads lines of bytes, refusing those over `max` bytes without holding them.
struct LineReader<R> {
    reader: R,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> LineReader<R> {
    /// The next line, or `None` at the end of input (a last line without `\n` counts).
    async fn next(&mut self) -> io::Result<Option<RawLine>> {
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

/// What becomes of a line.
#[derive(Debug)]
enum Verdict {
    /// UTF-8 and JSON: the SDK gets it.
    Pass(String),
    /// Blank: skipped without a word.
    Blank,
    /// Answered here with this error and skipped.
    Refuse(Value),
}

/// Judges a line: it must be UTF-8 and parse as a JSON value, as the SDK parses it (so the SDK
/// never meets a line it cannot parse, and never echoes one), of at most [`MAX_VALUES`]
/// values.
fn judge(line: RawLine, max: usize) -> Verdict {
    let bytes = match line {
        RawLine::TooLong { prefix, len } => {
            return Verdict::Refuse(error(
                INVALID_REQUEST,
                "Invalid Request",
                format!("line of {len} bytes is over the limit of {max} bytes; it was skipped"),
                &prefix,
            ));
        }
        RawLine::Bytes(bytes) => bytes,
    };
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => {
            let at = err.utf8_error().valid_up_to();
            return Verdict::Refuse(error(
                PARSE_ERROR,
                "Parse error",
                format!("line is not UTF-8 (invalid byte at offset {at})"),
                err.as_bytes(),
            ));
        }
    };
    if text.trim().is_empty() {
        return Verdict::Blank;
    }
    let counted = Cell::new(0);
    match check_json(&text, &counted) {
        Ok(()) => Verdict::Pass(text),
        Err(_) if counted.get() > MAX_VALUES => Verdict::Refuse(error(
            INVALID_REQUEST,
            "Invalid Request",
            format!("line holds more than {MAX_VALUES} JSON values; it was skipped"),
            text.as_bytes(),
        )),
        Err(err) => Verdict::Refuse(error(
            PARSE_ERROR,
            "Parse error",
            format!(
                "line is not JSON ({:?} error at column {})",
                err.classify(),
                err.column()
            ),
            text.as_bytes(),
        )),
    }
}

/// Parses `text` as the SDK does (`serde_json::from_str::<Value>`: the same parser through
/// `deserialize_any`, so the same numbers, escapes, nesting limit and trailing characters fail)
/// without building anything, counting its values in `counted` and failing past
/// [`MAX_VALUES`].
fn check_json(text: &str, counted: &Cell<usize>) -> Result<(), serde_json::Error> {
    let mut parser = serde_json::Deserializer::from_str(text);
    Counter(counted).deserialize(&mut parser)?;
    parser.end()
}

/// Visits one JSON value and everything in it, counting them.
struct Counter<'a>(&'a Cell<usize>);

impl Counter<'_> {
    fn count<E: de::Error>(&self) -> Result<(), E> {
        let count = self.0.get() + 1;
        self.0.set(count);
        if count > MAX_VALUES {
            return Err(E::custom("too many values"));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Counter<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Counter<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.count()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.count()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.count()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.count()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.count()
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.count()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.count()?;
        while seq.next_element_seed(Counter(self.0))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.count()?;
        while map.next_key_seed(Counter(self.0))?.is_some() {
            map.next_value_seed(Counter(self.0))?;
        }
        Ok(())
    }
}

/// A JSON-RPC error response with `id: null`, whose data names `reason` and shows at most
/// the first [`ECHO`] bytes of the line.
fn error(code: i64, message: &str, reason: String, line: &[u8]) -> Value {
    let shown = &line[..line.len().min(ECHO)];
    json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": code,
            "message": message,
            "data": {
                "reason": reason,
                "linePrefix": String::from_utf8_lossy(shown),
            },
        },
    })
}

/// `line`, or when it is an error response over [`ERROR_LINE`] bytes, the same response
/// with its message and data cut to [`ERROR_TEXT`] bytes each.
fn bounded(line: String) -> String {
    if line.len() <= ERROR_LINE || line.starts_with(NOTIFICATION) {
        return line;
    }
    let Ok(mut value) = serde_json::from_str::<Value>(&line) else {
        return line;
    };
    if value.get("method").is_some() {
        return line;
    }
    let Some(error) = value.get_mut("error").and_then(Value::as_object_mut) else {
        return line;
    };
    for field in ["message", "data"] {
        if let Some(text) = error.get_mut(field) {
            cut(text);
        }
    }
    value.to_string()
}

/// `value` as at most [`ERROR_TEXT`] bytes of text, saying how much was cut, when its text
/// is longer; else unchanged.
fn cut(value: &mut Value) {
    let text = match value.as_str() {
        Some(text) => text.to_owned(),
        None => value.to_string(),
    };
    if text.len() > ERROR_TEXT {
        let mut end = ERROR_TEXT;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        *value = Value::String(format!(
            "{}… ({} more bytes not shown)",
            &text[..end],
            text.len() - end
        ));
    }
}

/// Where both the SDK's messages and this module's errors go, a line at a time.
struct Output<W> {
    writer: Mutex<W>,
    /// Cancelled when a write finds the client gone (a broken pipe): input ends there, as at
    /// the end of input.
    gone: CancellationToken,
}

impl<W: AsyncWrite + Unpin> Output<W> {
    /// Writes `line` and a newline, and flushes. A client that is gone is no error: the line
    /// is dropped and [`Output::gone`] cancelled.
    async fn send(&self, line: &str) -> io::Result<()> {
        if self.gone.is_cancelled() {
            return Ok(());
        }
        let mut writer = self.writer.lock().await;
        let written = async {
            writer.write_all(line.as_bytes()).await?;
            writer.write_all(b"\n").await?;
            writer.flush().await
        }
        .await;
        match written {
            Err(err) if err.kind() == io::ErrorKind::BrokenPipe => {
                tracing::debug!(target: "mux_acp", "the client closed its input: ending");
                self.gone.cancel();
                Ok(())
            }
            other => other,
        }
    }
}

/// The outgoing lines.
pub(crate) type Outgoing = Pin<Box<dyn Sink<String, Error = io::Error> + Send>>;
/// The incoming lines.
pub(crate) type Incoming = Pin<Box<dyn Stream<Item = io::Result<String>> + Send>>;

/// The SDK's line transport over `reader` and `writer`, with lines judged as the module
/// docs say and lines over `max_line` bytes refused. Input ends at the end of `reader`, or
/// when a write finds the client gone.
pub(crate) fn transport<R, W>(reader: R, writer: W, max_line: usize) -> Lines<Outgoing, Incoming>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let output = Arc::new(Output {
        writer: Mutex::new(writer),
        gone: CancellationToken::new(),
    });
    let outgoing = futures::sink::unfold(Arc::clone(&output), async |output, line: String| {
        output.send(&bounded(line)).await?;
        Ok::<_, io::Error>(output)
    });
    let lines = LineReader {
        reader: BufReader::new(reader),
        max: max_line,
    };
    let incoming = futures::stream::unfold((lines, output), async |(mut lines, output)| {
        loop {
            let read = {
                let next = std::pin::pin!(lines.next());
                let gone = std::pin::pin!(output.gone.cancelled());
                match futures::future::select(next, gone).await {
                    Either::Left((read, _)) => read,
                    Either::Right(((), _)) => return None,
                }
            };
            let line = match read {
                Ok(Some(line)) => line,
                Ok(None) => return None,
                Err(err) => return Some((Err(err), (lines, output))),
            };
            match judge(line, lines.max) {
                Verdict::Pass(text) => return Some((Ok(text), (lines, output))),
                Verdict::Blank => {}
                Verdict::Refuse(response) => {
                    tracing::warn!(
                        target: "mux_acp",
                        reason = %response["error"]["data"]["reason"],
                        "input line refused"
                    );
                    if let Err(err) = output.send(&response.to_string()).await {
                        return Some((Err(err), (lines, output)));
                    }
                }
            }
        }
    });
    Lines::new(
        Box::pin(outgoing) as Outgoing,
        Box::pin(incoming) as Incoming,
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

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

    fn refused(line: &[u8]) -> Value {
        match judge(RawLine::Bytes(line.to_vec()), DEFAULT_MAX_LINE) {
            Verdict::Refuse(response) => response,
            other => panic!("{line:?} was not refused: {other:?}"),
        }
    }

    #[test]
    fn invalid_utf8_in_every_shape_is_a_parse_error() {
        let shapes: [&[u8]; 5] = [
            b"{\"a\":\"\x80\"}",         // a lone continuation byte
            b"{\"a\":\"\xe2\x82",        // a multibyte sequence cut at the line end
            b"{\"a\":\"\xc0\xaf\"}",     // an overlong encoding of `/`
            b"{\"a\":\"\xed\xa0\x80\"}", // a UTF-16 surrogate, encoded
            b"{\"a\":\"\xff\"}",         // a byte UTF-8 never uses
        ];
        for shape in shapes {
            let response = refused(shape);
            assert_eq!(response["error"]["code"], PARSE_ERROR, "{shape:?}");
            assert_eq!(response["id"], Value::Null);
            assert!(
                response["error"]["data"]["reason"]
                    .as_str()
                    .unwrap()
                    .contains("not UTF-8"),
                "{response}"
            );
        }
    }

    #[test]
    fn what_the_sdk_could_not_parse_is_refused_here_with_a_short_echo() {
        let deep = "[".repeat(200) + &"]".repeat(200);
        let huge = format!("{{not json {}", "y".repeat(1_000_000));
        for line in [
            "{ this is not json",
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":1e400}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":"\ud800"}"#,
            &deep,
            &huge,
        ] {
            let response = refused(line.as_bytes());
            assert_eq!(response["error"]["code"], PARSE_ERROR, "{line:.40}");
            assert!(serde_json::from_str::<Value>(line).is_err());
            let shown = response["error"]["data"]["linePrefix"].as_str().unwrap();
            assert!(shown.len() <= ECHO && line.starts_with(shown), "{shown}");
            assert!(response.to_string().len() < 512, "{response}");
        }
    }

    #[test]
    fn the_check_accepts_exactly_what_the_sdk_parses() {
        let cases = [
            r#"{"a":1,"a":2}"#,
            r#"{"s":"\u00e9\ud83d\ude00\n","n":-0.5e-3,"b":[true,false,null]}"#,
            "  [1, 2]  ",
            "{} x",
            "{}{}",
            r#"{"a":1,}"#,
            "[1e400]",
            "[-1e400]",
            r#"["\ud800"]"#,
            r#"["\udc00\ud800"]"#,
            r#"["\x"]"#,
            "\"tab\there\"",
            &("[".repeat(127) + &"]".repeat(127)),
            &("[".repeat(128) + &"]".repeat(128)),
            &("{\"a\":".repeat(130) + "1" + &"}".repeat(130)),
            "18446744073709551616",
            "-9223372036854775809",
            "01",
            "NaN",
        ];
        for case in cases {
            let counted = Cell::new(0);
            assert_eq!(
                check_json(case, &counted).is_ok(),
                serde_json::from_str::<Value>(case).is_ok(),
                "{case:.60}"
            );
        }
    }

    #[test]
    fn a_line_of_too_many_values_is_an_invalid_request_without_being_built() {
        let within = format!("[{}0]", "0,".repeat(MAX_VALUES - 2));
        assert!(matches!(
            judge(bytes(&within), DEFAULT_MAX_LINE),
            Verdict::Pass(_)
        ));
        for line in [
            format!("[{}0]", "0,".repeat(MAX_VALUES)),
            format!("[{}[]]", "[],".repeat(MAX_VALUES)),
            format!(
                "{{{}\"z\":1}}",
                (0..MAX_VALUES)
                    .map(|i| format!("\"k{i}\":1,"))
                    .collect::<String>()
            ),
        ] {
            let response = refused(line.as_bytes());
            assert_eq!(response["error"]["code"], INVALID_REQUEST, "{line:.40}");
            assert!(response.to_string().len() < 512);
        }
    }

    #[test]
    fn json_lines_pass_as_they_are_and_blank_lines_are_skipped() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#,
            "[1, 2]",
            "17",
        ] {
            assert!(matches!(
                judge(RawLine::Bytes(line.as_bytes().to_vec()), 100),
                Verdict::Pass(text) if text == line
            ));
        }
        assert!(matches!(judge(bytes(" \t"), 100), Verdict::Blank));
    }

    #[test]
    fn long_error_responses_are_cut_and_everything_else_passes_unchanged() {
        let big = "z".repeat(1_000_000);
        let quoted = json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32602,
            "message": "Invalid params", "data": {"error": format!("invalid type: \"{big}\""),
            "json": {"cwd": big}}}});
        let cut_line = bounded(quoted.to_string());
        assert!(cut_line.len() < 2 * ERROR_TEXT + 200, "{}", cut_line.len());
        let cut_value: Value = serde_json::from_str(&cut_line).unwrap();
        assert_eq!(cut_value["id"], 7);
        assert_eq!(cut_value["error"]["code"], -32602);
        assert_eq!(cut_value["error"]["message"], "Invalid params");
        assert!(
            cut_value["error"]["data"]
                .as_str()
                .unwrap()
                .ends_with("more bytes not shown)")
        );
        let message = json!({"jsonrpc": "2.0", "id": 8, "error": {"code": -32601,
            "message": "é".repeat(3000)}});
        let cut_message: Value = serde_json::from_str(&bounded(message.to_string())).unwrap();
        assert!(cut_message["error"]["message"].as_str().unwrap().len() < ERROR_TEXT + 64);
        for untouched in [
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "short"}}),
            json!({"jsonrpc": "2.0", "id": 2, "result": {"content": big}}),
            json!({"jsonrpc": "2.0", "method": "session/update", "params": {"error": big}}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "fs/write_text_file",
                "params": {"content": big}}),
        ] {
            let line = untouched.to_string();
            assert_eq!(bounded(line.clone()), line);
        }
    }

    #[test]
    fn an_overlong_line_is_an_invalid_request_naming_its_length_and_the_limit() {
        let response = match judge(
            RawLine::TooLong {
                prefix: b"{\"jsonrpc\"".to_vec(),
                len: 100_000_000,
            },
            DEFAULT_MAX_LINE,
        ) {
            Verdict::Refuse(response) => response,
            other => panic!("{other:?}"),
        };
        assert_eq!(response["error"]["code"], INVALID_REQUEST);
        let reason = response["error"]["data"]["reason"].as_str().unwrap();
        assert!(
            reason.contains("100000000") && reason.contains("67108864"),
            "{reason}"
        );
    }
}
