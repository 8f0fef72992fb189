//! The built-in tool names rules are usually written for, their specs and subjects.
//!
//! mux's own file and shell tools use the same names; an application with its own tools gives
//! them a [`subject`](mux_tool::Tool::subject) and gets the same matching.

use mux_tool::{Subject, ToolAnnotations, ToolSpec};
use serde_json::{Value, json};

use crate::Family;

/// The tool names known here.
pub const NAMES: [&str; 5] = ["Bash", "Read", "Edit", "Write", "WebFetch"];

/// The spec of a built-in tool, with its usual annotations (Read and WebFetch are read-only,
/// Write is destructive), or `None` for another name.
pub fn spec(name: &str) -> Option<ToolSpec> {
    let (description, schema, annotations) = match name {
        "Bash" => (
            "Runs a shell command",
            json!({"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}),
            ToolAnnotations::default(),
        ),
        "Read" => ("Reads a file", path_schema(), ToolAnnotations::read_only()),
        "Edit" => ("Edits a file", path_schema(), ToolAnnotations::default()),
        "Write" => (
            "Writes a file",
            path_schema(),
            ToolAnnotations::destructive(),
        ),
        "WebFetch" => (
            "Fetches a URL",
            json!({"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}),
            ToolAnnotations::read_only().with_open_world(true),
        ),
        _ => return None,
    };
    ToolSpec::new(name, description, schema)
        .ok()
        .map(|spec| spec.with_annotations(annotations))
}

fn path_schema() -> Value {
    json!({"type": "object", "properties": {"path": {"type": "string"}, "file_path": {"type": "string"}}})
}

/// The subject of a call to a built-in tool: `{"command"}` for Bash, `{"path"}` or
/// `{"file_path"}` for Read, Edit and Write, `{"url"}` for WebFetch. `None` when the input
/// lacks the field (or the tool is not built in), and when a Read, Edit or Write input has
/// both `path` and `file_path`: the judged field must be the one the tool reads, and a decoy
/// beside it (`{"path": "src/main.rs", "file_path": "secrets/key"}`) leaves no telling which.
pub fn subject(name: &str, input: &Value) -> Option<Subject> {
    let field = |key: &str| input.get(key).and_then(Value::as_str);
    match name {
        "Bash" => field("command").map(Subject::command),
        "Read" | "Edit" | "Write" => match (input.get("path"), input.get("file_path")) {
            (Some(_), Some(_)) => None,
            _ => field("path").or_else(|| field("file_path")),
        }
        .map(Subject::path),
        "WebFetch" => field("url").map(Subject::url),
        _ => None,
    }
}

/// What kind of subject a built-in tool's calls have: `"command"`, `"path"` or `"url"`. Covers
/// the names above and those of mux-tool's own built-in tools (`bash`, `read_file`, …), so a
/// rule for them whose specifier does not fit is a load error.
pub(crate) fn subject_kind(name: &str) -> Option<&'static str> {
    Family::named(name)
        .or_else(|| Family::of_member(name))
        .map(Family::subject_kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decoy_path_field_leaves_no_subject() {
        let decoy = json!({"path": "src/main.rs", "file_path": "secrets/key"});
        assert_eq!(subject("Read", &decoy), None);
        assert_eq!(subject("Write", &decoy), None);
        let claude = json!({"file_path": "secrets/key", "offset": 1});
        assert_eq!(subject("Read", &claude), Some(Subject::path("secrets/key")));
        let mux = json!({"path": "src/main.rs"});
        assert_eq!(subject("Edit", &mux), Some(Subject::path("src/main.rs")));
    }
}
