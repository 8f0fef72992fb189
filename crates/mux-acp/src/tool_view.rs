//! How a tool call looks in an editor: its ACP kind, title, locations and content.
//!
//! Everything comes from what the tool says about itself, never from its name: the kind from
//! its annotations ([`mux_tool::ToolKind`], mapped one to one by [`kind_of`]), the title and
//! the first location from its [`Subject`], and the diffs, final locations and todo plan from
//! the [`Presentation`] in its output. An application's own edit tool shows as a diff the
//! same way `edit_file` does.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    ContentBlock, Diff, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, ToolCallContent,
    ToolCallLocation, ToolKind,
};
use mux_tool::{Presentation, Registry, Subject, TodoItem, TodoPriority, TodoStatus, Tool};
use serde_json::Value;

/// What the editor is told about one tool: its kind and the subject of one call.
pub(crate) struct Described {
    pub(crate) kind: ToolKind,
    pub(crate) subject: Subject,
}

impl Described {
    /// The tool `name` of `tools` called with `input`; a tool the registry does not hold
    /// (gone since, or a subagent's own) shows as `other` with no subject.
    pub(crate) fn of(tools: &Registry, name: &str, input: &Value) -> Self {
        match tools.get(name) {
            Some(tool) => Self::tool(&tool, input),
            None => Self {
                kind: ToolKind::Other,
                subject: Subject::None,
            },
        }
    }

    fn tool(tool: &Arc<dyn Tool>, input: &Value) -> Self {
        Self {
            kind: kind_of(tool.spec().annotations.kind),
            subject: tool.subject(input),
        }
    }
}

/// The ACP kind of a mux tool kind: the same nine names, one to one.
pub(crate) fn kind_of(kind: mux_tool::ToolKind) -> ToolKind {
    use mux_tool::ToolKind as Mux;
    match kind {
        Mux::Read => ToolKind::Read,
        Mux::Edit => ToolKind::Edit,
        Mux::Delete => ToolKind::Delete,
        Mux::Move => ToolKind::Move,
        Mux::Search => ToolKind::Search,
        Mux::Execute => ToolKind::Execute,
        Mux::Fetch => ToolKind::Fetch,
        Mux::Think => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// A one-line title: the tool and what the call acts on (its subject).
pub(crate) fn title_of(name: &str, subject: &Subject) -> String {
    let main = match subject {
        Subject::Command(command) => Some(command.clone()),
        Subject::Path(path) => Some(path.display().to_string()),
        Subject::Url(url) => Some(url.clone()),
        _ => None,
    };
    match main {
        Some(main) => format!("{name}: {}", one_line(&main, 120)),
        None => name.to_owned(),
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

/// The file a call is about to touch, before it runs: its path subject, made absolute.
pub(crate) fn subject_locations(subject: &Subject, root: &Path) -> Vec<ToolCallLocation> {
    match subject {
        Subject::Path(path) => vec![ToolCallLocation::new(absolute(
            root,
            &path.to_string_lossy(),
        ))],
        _ => Vec::new(),
    }
}

/// The files the call touched, as its output presents them, made absolute.
pub(crate) fn locations_of(shown: &Presentation, root: &Path) -> Vec<ToolCallLocation> {
    shown
        .locations()
        .iter()
        .map(|location| {
            ToolCallLocation::new(absolute(root, location.path())).line(location.line())
        })
        .collect()
}

/// `path` as a tool gave it, made absolute against `root` (for display only: the tools
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

/// The `diff` contents of the call's presented diffs (`oldText` null for a new file), each
/// followed by a note when it was cut to the size bound.
pub(crate) fn diffs_of(shown: &Presentation, root: &Path) -> Vec<ToolCallContent> {
    let mut out = Vec::new();
    for diff in shown.diffs() {
        let path = absolute(root, diff.path());
        out.push(ToolCallContent::from(
            Diff::new(path, diff.new_text()).old_text(diff.old_text().map(str::to_owned)),
        ));
        if diff.truncated() {
            out.push(text_content(format!(
                "(the diff of {} was cut at {} bytes a side)",
                diff.path(),
                mux_tool::MAX_DIFF_TEXT_BYTES
            )));
        }
    }
    out
}

/// Text content for a tool call.
pub(crate) fn text_content(text: impl Into<String>) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::from(text.into()))
}

/// The `plan` of a presented todo list: one entry per todo, in order.
pub(crate) fn plan_of(todos: &[TodoItem]) -> Plan {
    let entries = todos
        .iter()
        .map(|todo| {
            let status = match todo.status {
                TodoStatus::InProgress => PlanEntryStatus::InProgress,
                TodoStatus::Completed => PlanEntryStatus::Completed,
                TodoStatus::Pending => PlanEntryStatus::Pending,
            };
            let priority = match todo.priority {
                TodoPriority::High => PlanEntryPriority::High,
                TodoPriority::Medium => PlanEntryPriority::Medium,
                TodoPriority::Low => PlanEntryPriority::Low,
            };
            PlanEntry::new(todo.content.clone(), priority, status)
        })
        .collect();
    Plan::new(entries)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use mux_tool::{Location, TodoItem};
    use serde_json::json;

    #[test]
    fn every_mux_kind_maps_to_the_acp_kind_of_the_same_name() {
        use mux_tool::ToolKind as Mux;
        let cases = [
            (Mux::Read, ToolKind::Read),
            (Mux::Edit, ToolKind::Edit),
            (Mux::Delete, ToolKind::Delete),
            (Mux::Move, ToolKind::Move),
            (Mux::Search, ToolKind::Search),
            (Mux::Execute, ToolKind::Execute),
            (Mux::Fetch, ToolKind::Fetch),
            (Mux::Think, ToolKind::Think),
            (Mux::Other, ToolKind::Other),
        ];
        for (mux, acp) in cases {
            assert_eq!(kind_of(mux), acp, "{mux:?}");
            // The wire names agree too.
            assert_eq!(serde_json::to_value(acp).unwrap(), json!(mux.as_str()));
        }
    }

    #[test]
    fn a_new_file_has_a_null_old_text() {
        let shown = Presentation::new().with_diff(mux_tool::Diff::new("new.txt", None, "hi"));
        let wire = serde_json::to_value(diffs_of(&shown, Path::new("/r"))).unwrap();
        assert_eq!(
            wire,
            // ACP leaves `oldText` out for a new file.
            json!([{"type": "diff", "path": "/r/new.txt", "newText": "hi"}])
        );
    }

    #[test]
    fn a_cut_diff_says_so() {
        let huge = "x\n".repeat(mux_tool::MAX_DIFF_TEXT_BYTES);
        let shown = Presentation::new().with_diff(mux_tool::Diff::new("big", None, &huge));
        let wire = serde_json::to_value(diffs_of(&shown, Path::new("/r"))).unwrap();
        assert_eq!(wire[0]["type"], "diff");
        assert!(
            wire[1]["content"]["text"]
                .as_str()
                .unwrap()
                .contains("was cut"),
            "{wire}"
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
    fn presented_locations_keep_their_line() {
        let shown = Presentation::new().with_location(Location::new("src/lib.rs").with_line(40));
        let wire = serde_json::to_value(locations_of(&shown, Path::new("/r"))).unwrap();
        assert_eq!(wire, json!([{"path": "/r/src/lib.rs", "line": 40}]));
    }

    #[test]
    fn todos_become_plan_entries_with_their_priority() {
        let todos = [
            TodoItem::new("a").with_status(TodoStatus::Completed),
            TodoItem::new("b")
                .with_status(TodoStatus::InProgress)
                .with_priority(TodoPriority::High),
            TodoItem::new("c"),
        ];
        let wire = serde_json::to_value(plan_of(&todos)).unwrap();
        assert_eq!(
            wire["entries"],
            json!([
                {"content": "a", "priority": "medium", "status": "completed"},
                {"content": "b", "priority": "high", "status": "in_progress"},
                {"content": "c", "priority": "medium", "status": "pending"}
            ])
        );
    }

    #[test]
    fn titles_name_the_subject() {
        assert_eq!(
            title_of("bash", &Subject::command("git log\nmore")),
            "bash: git log…"
        );
        assert_eq!(
            title_of("save", &Subject::path("notes.txt")),
            "save: notes.txt"
        );
        assert_eq!(title_of("mcp__s__t", &Subject::None), "mcp__s__t");
    }
}
