//! How a mux tool call looks in an editor: its ACP kind, title, locations and content.
//!
//! The table follows Zed's own adapters (codex-acp, claude-agent-acp): `bash` is `execute`,
//! `read_file` is `read` with a location, the edit tools are `edit` with a `diff`, the searches
//! are `search`, `web_fetch` is `fetch`, `todo_write` and `task` are `think`, and any other tool
//! is `other` unless its annotations say it only reads.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ContentBlock, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, ToolCallContent,
    ToolCallLocation, ToolKind,
};
use serde_json::Value;

/// The ACP kind of the mux tool `name`; `read_only` is its annotation.
pub(crate) fn kind_of(name: &str, read_only: bool) -> ToolKind {
    match name {
        "bash" => ToolKind::Execute,
        "read_file" => ToolKind::Read,
        "edit_file" | "write_file" => ToolKind::Edit,
        "grep" | "glob" | "list_dir" => ToolKind::Search,
        "web_fetch" => ToolKind::Fetch,
        "todo_write" | "task" => ToolKind::Think,
        _ if read_only => ToolKind::Read,
        _ => ToolKind::Other,
    }
}

/// A one-line title: the tool and its main argument.
pub(crate) fn title_of(name: &str, input: &Value) -> String {
    let arg = |key: &str| input.get(key).and_then(Value::as_str);
    let main = match name {
        "bash" => arg("command"),
        "read_file" | "edit_file" | "write_file" | "list_dir" => arg("path"),
        "grep" | "glob" => arg("pattern"),
        "web_fetch" => arg("url"),
        "task" => arg("description").or_else(|| arg("prompt")),
        _ => None,
    };
    match (name, main) {
        ("todo_write", _) => "Update the plan".to_owned(),
        (_, Some(main)) => format!("{name}: {}", one_line(main, 120)),
        (_, None) => name.to_owned(),
    }
}

fn one_line(text: &str, max_chars: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut out: String = line.chars().take(max_chars).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

/// The files the call touches, as absolute paths under `root`, with the line where one is
/// known (`read_file`'s `offset`).
pub(crate) fn locations_of(name: &str, input: &Value, root: &Path) -> Vec<ToolCallLocation> {
    let Some(path) = path_arg(name, input) else {
        return Vec::new();
    };
    let location = ToolCallLocation::new(absolute(root, path));
    let line = (name == "read_file")
        .then(|| input.get("offset").and_then(Value::as_u64))
        .flatten()
        .and_then(|line| u32::try_from(line).ok());
    vec![location.line(line)]
}

fn path_arg<'a>(name: &str, input: &'a Value) -> Option<&'a str> {
    match name {
        "read_file" | "edit_file" | "write_file" | "list_dir" | "grep" | "glob" => {
            input.get("path").and_then(Value::as_str)
        }
        _ => None,
    }
}

/// `path` as the model gave it, made absolute against `root` (for display only: the tools
/// themselves confine every path to their sandbox).
pub(crate) fn absolute(root: &Path, path: &str) -> PathBuf {
    let path = Path::new(path);
    let base = if path.is_absolute() {
        PathBuf::new()
    } else {
        root.to_path_buf()
    };
    // `./src/./lib.rs` shows as `src/lib.rs`; `..` is left for the tool to judge.
    path.components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .fold(base, |mut out, c| {
            out.push(c);
            out
        })
}

/// The `diff` content of an edit: `edit_file` shows the replaced string and its replacement,
/// `write_file` the whole file, with `oldText` null when the file does not exist yet.
/// `old_file` is the file's current text, read by the caller (None when missing).
pub(crate) fn diff_of(
    name: &str,
    input: &Value,
    root: &Path,
    old_file: Option<String>,
) -> Option<ToolCallContent> {
    let path = absolute(root, input.get("path").and_then(Value::as_str)?);
    let text = |key: &str| input.get(key).and_then(Value::as_str).map(str::to_owned);
    let diff = match name {
        "edit_file" => Diff::new(path, text("new_string")?).old_text(text("old_string")),
        "write_file" => Diff::new(path, text("content")?).old_text(old_file),
        _ => return None,
    };
    Some(ToolCallContent::from(diff))
}

/// Text content for a tool call.
pub(crate) fn text_content(text: impl Into<String>) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::from(text.into()))
}

/// The `plan` update of a `todo_write` call: one entry per todo, in order.
pub(crate) fn plan_of(input: &Value) -> Option<Plan> {
    let todos = input.get("todos")?.as_array()?;
    let entries = todos
        .iter()
        .filter_map(|todo| {
            let content = todo.get("content")?.as_str()?;
            let status = match todo.get("status").and_then(Value::as_str) {
                Some("in_progress") => PlanEntryStatus::InProgress,
                Some("completed") => PlanEntryStatus::Completed,
                _ => PlanEntryStatus::Pending,
            };
            Some(PlanEntry::new(content, PlanEntryPriority::Medium, status))
        })
        .collect();
    Some(Plan::new(entries))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_follow_the_table() {
        let cases = [
            ("bash", false, ToolKind::Execute),
            ("read_file", true, ToolKind::Read),
            ("edit_file", false, ToolKind::Edit),
            ("write_file", false, ToolKind::Edit),
            ("grep", true, ToolKind::Search),
            ("glob", true, ToolKind::Search),
            ("list_dir", true, ToolKind::Search),
            ("web_fetch", true, ToolKind::Fetch),
            ("todo_write", false, ToolKind::Think),
            ("task", false, ToolKind::Think),
            ("mcp__x__lookup", true, ToolKind::Read),
            ("mcp__x__launch", false, ToolKind::Other),
        ];
        for (name, read_only, kind) in cases {
            assert_eq!(kind_of(name, read_only), kind, "{name}");
        }
    }

    #[test]
    fn a_new_file_has_a_null_old_text() {
        let input = json!({"path": "new.txt", "content": "hi"});
        let diff = diff_of("write_file", &input, Path::new("/r"), None).unwrap();
        let wire = serde_json::to_value(diff).unwrap();
        assert_eq!(wire["type"], "diff");
        assert_eq!(wire["path"], "/r/new.txt");
        assert_eq!(wire["oldText"], Value::Null);
        assert_eq!(wire["newText"], "hi");
    }

    #[test]
    fn an_edit_shows_the_replaced_string() {
        let input = json!({"path": "a.rs", "old_string": "x", "new_string": "y"});
        let wire =
            serde_json::to_value(diff_of("edit_file", &input, Path::new("/r"), None)).unwrap();
        assert_eq!(
            (wire["oldText"].as_str(), wire["newText"].as_str()),
            (Some("x"), Some("y"))
        );
    }

    #[test]
    fn dots_are_dropped_from_locations() {
        assert_eq!(absolute(Path::new("/r"), "."), Path::new("/r"));
        assert_eq!(
            absolute(Path::new("/r"), "./src/./a.rs"),
            Path::new("/r/src/a.rs")
        );
        assert_eq!(absolute(Path::new("/r"), "/etc/x"), Path::new("/etc/x"));
    }

    #[test]
    fn read_file_locates_its_offset() {
        let input = json!({"path": "src/lib.rs", "offset": 40});
        let wire =
            serde_json::to_value(locations_of("read_file", &input, Path::new("/r"))).unwrap();
        assert_eq!(wire, json!([{"path": "/r/src/lib.rs", "line": 40}]));
    }

    #[test]
    fn todos_become_plan_entries() {
        let input = json!({"todos": [
            {"content": "a", "status": "completed"},
            {"content": "b", "status": "in_progress"},
            {"content": "c", "status": "pending"}
        ]});
        let wire = serde_json::to_value(plan_of(&input).unwrap()).unwrap();
        let statuses: Vec<_> = wire["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["status"].clone())
            .collect();
        assert_eq!(
            statuses,
            [json!("completed"), json!("in_progress"), json!("pending")]
        );
    }

    #[test]
    fn titles_name_the_main_argument() {
        assert_eq!(
            title_of("bash", &json!({"command": "git log\nmore"})),
            "bash: git log…"
        );
        assert_eq!(title_of("todo_write", &json!({})), "Update the plan");
        assert_eq!(title_of("mcp__s__t", &json!({})), "mcp__s__t");
    }
}
