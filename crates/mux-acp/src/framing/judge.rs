//! What becomes of a line: passed to the SDK, skipped, or refused with a short error.

use std::cell::Cell;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Value, json};

use super::lines::{ECHO, RawLine};

/// The most JSON values (objects, arrays, members, strings, numbers, literals) one incoming
/// line may hold. The SDK parses every line into a `serde_json::Value`, which takes tens of
/// bytes a value: 57 MiB of `[],` took the agent to 4 GiB. An ACP client's messages hold a
/// few hundred values; their bulk is in strings.
const MAX_VALUES: usize = 100_000;

/// JSON-RPC's "Parse error".
const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's "Invalid Request".
const INVALID_REQUEST: i64 = -32600;

/// What becomes of a line.
#[derive(Debug)]
pub(super) enum Verdict {
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
pub(super) fn judge(line: RawLine, max: usize) -> Verdict {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;

    const LIMIT: usize = 64 * 1024 * 1024;

    fn bytes(line: &str) -> RawLine {
        RawLine::Bytes(line.as_bytes().to_vec())
    }

    fn refused(line: &[u8]) -> Value {
        match judge(RawLine::Bytes(line.to_vec()), LIMIT) {
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
        assert!(matches!(judge(bytes(&within), LIMIT), Verdict::Pass(_)));
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
    fn an_overlong_line_is_an_invalid_request_naming_its_length_and_the_limit() {
        let response = match judge(
            RawLine::TooLong {
                prefix: b"{\"jsonrpc\"".to_vec(),
                len: 100_000_000,
            },
            LIMIT,
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
