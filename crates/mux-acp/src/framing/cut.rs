//! Error responses on their way out, cut to a short text: errors quote what they refuse (a
//! method name, an id, a path, the SDK's whole params object).

use serde_json::Value;

/// An outgoing line longer than this is checked for an error response to cut.
const ERROR_LINE: usize = 4096;
/// How much of an error's message and of its data a cut keeps, in bytes.
const ERROR_TEXT: usize = 1024;
/// How every notification the SDK sends starts: never an error response.
const NOTIFICATION: &str = r#"{"jsonrpc":"2.0","method":"#;

/// `line`, or when it is an error response over [`ERROR_LINE`] bytes, the same response
/// with its message and data cut to [`ERROR_TEXT`] bytes each.
pub(super) fn bounded(line: String) -> String {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

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
}
