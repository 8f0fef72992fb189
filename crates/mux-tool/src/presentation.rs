//! What a call shows on a face besides its text: the files it touched ([`Location`]), the
//! change it made ([`Diff`]) and the todo list ([`TodoItem`]s), gathered in a
//! [`Presentation`] that the tool puts in its output's metadata.
//!
//! Faces read it back with [`ToolOutput::presentation`](crate::ToolOutput::presentation) and
//! show it whatever the tool's name is, so an application's own edit tool shows its diff as
//! the built-in `edit_file` does.
//!
//! Everything is bounded when it is built and again when it is read from JSON, so a diff of a
//! huge file cannot flood a face, an event buffer or a session log:
//! - a diff keeps only the changed lines and [`DIFF_CONTEXT_LINES`] unchanged lines around
//!   them, then at most [`MAX_DIFF_TEXT_BYTES`] of each side, cut at a line end and marked
//!   [`truncated`](Diff::truncated);
//! - at most [`MAX_DIFFS`] diffs, [`MAX_LOCATIONS`] locations and [`MAX_TODOS`] todos; further
//!   ones are dropped;
//! - paths are cut at [`MAX_PATH_BYTES`], todo texts at [`MAX_TODO_BYTES`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::utf8_cut::floor_char_boundary;

/// The most bytes of each side of a [`Diff`] (old text, new text), after trimming to the
/// changed lines: 32 KiB.
pub const MAX_DIFF_TEXT_BYTES: usize = 32 * 1024;
/// The unchanged lines a [`Diff`] keeps before and after the changed ones.
pub const DIFF_CONTEXT_LINES: usize = 3;
/// The most diffs one [`Presentation`] carries.
pub const MAX_DIFFS: usize = 8;
/// The most locations one [`Presentation`] carries.
pub const MAX_LOCATIONS: usize = 64;
/// The most todos one [`Presentation`] carries.
pub const MAX_TODOS: usize = 100;
/// The longest path kept, in bytes (Linux's `PATH_MAX`).
pub const MAX_PATH_BYTES: usize = 4096;
/// The longest todo text kept (`content`, `active_form`), in bytes.
pub const MAX_TODO_BYTES: usize = 1024;

/// What a tool call shows on a face: locations, diffs and the todo list. Stored in
/// [`ToolOutput::metadata`](crate::ToolOutput::metadata) under [`Presentation::METADATA_KEY`]
/// by [`ToolOutput::with_presentation`](crate::ToolOutput::with_presentation).
///
/// ```
/// use mux_tool::{Diff, Location, Presentation, ToolOutput};
///
/// let output = ToolOutput::text("Replaced 1 occurrence in src/lib.rs").with_presentation(
///     Presentation::new()
///         .with_location(Location::new("src/lib.rs").with_line(2))
///         .with_diff(Diff::new("src/lib.rs", Some("a\nb\nc\n"), "a\nB\nc\n")),
/// );
/// let shown = output.presentation().expect("a presentation");
/// assert_eq!(shown.locations()[0].line(), Some(2));
/// assert_eq!(shown.diffs()[0].new_text(), "a\nB\nc\n");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "PresentationWire")]
pub struct Presentation {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    locations: Vec<Location>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    diffs: Vec<Diff>,
    #[serde(skip_serializing_if = "Option::is_none")]
    todos: Option<Vec<TodoItem>>,
}

impl Presentation {
    /// The metadata key a presentation is stored under: `"presentation"`.
    pub const METADATA_KEY: &'static str = "presentation";

    /// An empty presentation.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a file the call touched (dropped past [`MAX_LOCATIONS`]).
    pub fn with_location(mut self, location: Location) -> Self {
        if self.locations.len() < MAX_LOCATIONS {
            self.locations.push(location);
        }
        self
    }

    /// Adds a change the call made (dropped past [`MAX_DIFFS`]).
    pub fn with_diff(mut self, diff: Diff) -> Self {
        if self.diffs.len() < MAX_DIFFS {
            self.diffs.push(diff);
        }
        self
    }

    /// Sets the whole todo list as it now stands (the first [`MAX_TODOS`] items, texts cut at
    /// [`MAX_TODO_BYTES`]). An empty list says the list is now empty.
    pub fn with_todos(mut self, todos: impl IntoIterator<Item = TodoItem>) -> Self {
        let todos = todos
            .into_iter()
            .take(MAX_TODOS)
            .map(|mut item| {
                cut_in_place(&mut item.content, MAX_TODO_BYTES);
                if let Some(active) = &mut item.active_form {
                    cut_in_place(active, MAX_TODO_BYTES);
                }
                item
            })
            .collect();
        self.todos = Some(todos);
        self
    }

    /// The files the call touched, in order.
    pub fn locations(&self) -> &[Location] {
        &self.locations
    }

    /// The changes the call made, in order.
    pub fn diffs(&self) -> &[Diff] {
        &self.diffs
    }

    /// The todo list as the call left it; `None` when the call says nothing about it.
    pub fn todos(&self) -> Option<&[TodoItem]> {
        self.todos.as_deref()
    }

    /// Whether there is nothing to show.
    pub fn is_empty(&self) -> bool {
        self.locations.is_empty() && self.diffs.is_empty() && self.todos.is_none()
    }
}

/// A [`Presentation`] as JSON may spell it; read through the same bounds.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct PresentationWire {
    locations: Vec<Location>,
    diffs: Vec<Diff>,
    todos: Option<Vec<TodoItem>>,
}

impl From<PresentationWire> for Presentation {
    fn from(wire: PresentationWire) -> Self {
        let mut out = wire
            .locations
            .into_iter()
            .fold(Self::new(), Self::with_location);
        out = wire.diffs.into_iter().fold(out, Self::with_diff);
        match wire.todos {
            Some(todos) => out.with_todos(todos),
            None => out,
        }
    }
}

/// A file a call touched, with the line where one is known. The path is as the tool gives it:
/// the built-in tools give it relative to their root, and a face resolves it against its own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "LocationWire")]
pub struct Location {
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<u32>,
}

impl Location {
    /// The file `path` (cut at [`MAX_PATH_BYTES`]).
    pub fn new(path: impl Into<String>) -> Self {
        Self {
            path: cut(path.into(), MAX_PATH_BYTES).0,
            line: None,
        }
    }

    /// The location at the 1-based `line`.
    pub fn with_line(mut self, line: u32) -> Self {
        self.line = Some(line);
        self
    }

    /// The path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The 1-based line, when known.
    pub fn line(&self) -> Option<u32> {
        self.line
    }
}

#[derive(Deserialize)]
struct LocationWire {
    path: String,
    #[serde(default)]
    line: Option<u32>,
}

impl From<LocationWire> for Location {
    fn from(wire: LocationWire) -> Self {
        Self {
            line: wire.line,
            ..Self::new(wire.path)
        }
    }
}

/// A change to one text file: its old text (`None` for a new file) and its new text,
/// trimmed to the changed lines with [`DIFF_CONTEXT_LINES`] lines of context and bounded by
/// [`MAX_DIFF_TEXT_BYTES`] per side.
///
/// ```
/// use mux_tool::Diff;
///
/// let old: String = (1..=100).map(|n| format!("line {n}\n")).collect();
/// let new = old.replace("line 50\n", "line fifty\n");
/// let diff = Diff::new("notes.txt", Some(&old), &new);
/// // Three lines of context on each side of the change, starting at line 47.
/// assert_eq!(diff.first_line(), 47);
/// assert_eq!(diff.new_text().lines().count(), 7);
/// assert_eq!(diff.old_text().map(|t| t.contains("line 50")), Some(true));
/// assert!(!diff.truncated());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "DiffWire")]
pub struct Diff {
    path: String,
    old_text: Option<String>,
    new_text: String,
    #[serde(rename = "line")]
    first_line: u32,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    truncated: bool,
}

impl Diff {
    /// The change of the file `path` from `old` (`None`: the file is new) to `new`.
    pub fn new(path: impl Into<String>, old: Option<&str>, new: &str) -> Self {
        let path = cut(path.into(), MAX_PATH_BYTES).0;
        let Some(old) = old else {
            let (new_text, truncated) = cut(new.to_owned(), MAX_DIFF_TEXT_BYTES);
            return Self {
                path,
                old_text: None,
                new_text,
                first_line: 1,
                truncated,
            };
        };
        let hunk = Hunk::of(old, new);
        let (old_text, old_cut) = cut(old[hunk.old].to_owned(), MAX_DIFF_TEXT_BYTES);
        let (new_text, new_cut) = cut(new[hunk.new].to_owned(), MAX_DIFF_TEXT_BYTES);
        Self {
            path,
            old_text: Some(old_text),
            new_text,
            first_line: u32::try_from(hunk.first_line).unwrap_or(u32::MAX),
            truncated: old_cut || new_cut,
        }
    }

    /// The file's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The old text shown; `None` for a new file.
    pub fn old_text(&self) -> Option<&str> {
        self.old_text.as_deref()
    }

    /// The new text shown.
    pub fn new_text(&self) -> &str {
        &self.new_text
    }

    /// The 1-based line of the file where the shown texts start (1 for a whole file).
    pub fn first_line(&self) -> u32 {
        self.first_line
    }

    /// Whether a side was cut at [`MAX_DIFF_TEXT_BYTES`]: the texts are then the start of the
    /// change only.
    pub fn truncated(&self) -> bool {
        self.truncated
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DiffWire {
    path: String,
    #[serde(default)]
    old_text: Option<String>,
    new_text: String,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default)]
    truncated: bool,
}

impl From<DiffWire> for Diff {
    fn from(wire: DiffWire) -> Self {
        let mut diff = Self::new(wire.path, wire.old_text.as_deref(), &wire.new_text);
        let offset = wire.line.unwrap_or(1).saturating_sub(1);
        diff.first_line = diff.first_line.saturating_add(offset);
        diff.truncated |= wire.truncated;
        diff
    }
}

/// The byte ranges of the changed lines of two texts, with context, and the 1-based line where
/// they start.
struct Hunk {
    old: std::ops::Range<usize>,
    new: std::ops::Range<usize>,
    first_line: usize,
}

impl Hunk {
    fn of(old: &str, new: &str) -> Self {
        let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
        let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
        let prefix = old_lines
            .iter()
            .zip(&new_lines)
            .take_while(|(a, b)| a == b)
            .count();
        let room = old_lines.len().min(new_lines.len()) - prefix;
        let suffix = old_lines
            .iter()
            .rev()
            .zip(new_lines.iter().rev())
            .take(room)
            .take_while(|(a, b)| a == b)
            .count();
        let start = prefix.saturating_sub(DIFF_CONTEXT_LINES);
        let dropped_tail = suffix.saturating_sub(DIFF_CONTEXT_LINES);
        let range = |lines: &[&str]| {
            let from: usize = lines[..start].iter().map(|l| l.len()).sum();
            let end = lines.len() - dropped_tail;
            let to: usize = from + lines[start..end].iter().map(|l| l.len()).sum::<usize>();
            from..to
        };
        Self {
            old: range(&old_lines),
            new: range(&new_lines),
            first_line: start + 1,
        }
    }
}

/// Where a todo item stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on now.
    InProgress,
    /// Done.
    Completed,
}

/// How much a todo item matters, for faces that show it (ACP's plan entries). Default:
/// medium.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoPriority {
    /// Do it first.
    High,
    /// The default.
    #[default]
    Medium,
    /// When there is time.
    Low,
}

impl TodoPriority {
    fn is_medium(&self) -> bool {
        *self == Self::Medium
    }
}

// The doc comment below is the schema description `todo_write`'s model reads: keep it short.
// The item is what `todo_write` takes and what a `Presentation` shows.
/// One item of the todo list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    /// What is to be done, in the imperative ("Run the tests").
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
    /// The same in the present continuous ("Running the tests"), shown while in progress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_form: Option<String>,
    /// How much it matters. Not in `todo_write`'s schema (the model does not set it); an
    /// application's own todo tool may.
    #[serde(default, skip_serializing_if = "TodoPriority::is_medium")]
    #[schemars(skip)]
    pub priority: TodoPriority,
}

impl TodoItem {
    /// A pending item of medium priority.
    pub fn new(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            status: TodoStatus::Pending,
            active_form: None,
            priority: TodoPriority::Medium,
        }
    }

    /// The item with `status`.
    pub fn with_status(mut self, status: TodoStatus) -> Self {
        self.status = status;
        self
    }

    /// The item with `priority`.
    pub fn with_priority(mut self, priority: TodoPriority) -> Self {
        self.priority = priority;
        self
    }
}

/// `text` cut to at most `max` bytes, at the last line end that fits (or a character boundary
/// when the first line alone is longer), and whether it was cut.
fn cut(mut text: String, max: usize) -> (String, bool) {
    let was_cut = cut_in_place(&mut text, max);
    (text, was_cut)
}

fn cut_in_place(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    let boundary = floor_char_boundary(text, max);
    let at = match text[..boundary].rfind('\n') {
        Some(newline) if newline > 0 => newline + 1,
        _ => boundary,
    };
    text.truncate(at);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn numbered(lines: std::ops::RangeInclusive<usize>) -> String {
        lines.map(|n| format!("line {n}\n")).collect()
    }

    #[test]
    fn a_diff_keeps_the_changed_lines_and_three_around_them() {
        let old = numbered(1..=20);
        let new = old
            .replace("line 10\n", "ten\n")
            .replace("line 12\n", "twelve\n");
        let diff = Diff::new("a.txt", Some(&old), &new);
        assert_eq!(diff.first_line(), 7);
        assert_eq!(diff.old_text(), Some(numbered(7..=15).as_str()));
        assert_eq!(
            diff.new_text(),
            "line 7\nline 8\nline 9\nten\nline 11\ntwelve\nline 13\nline 14\nline 15\n"
        );
    }

    #[test]
    fn a_change_at_either_end_keeps_what_context_there_is() {
        let old = numbered(1..=5);
        let first = Diff::new("a", Some(&old), &old.replacen("line 1\n", "one\n", 1));
        assert_eq!(
            (first.first_line(), first.new_text()),
            (1, "one\nline 2\nline 3\nline 4\n")
        );
        let appended = format!("{old}line 6\n");
        let last = Diff::new("a", Some(&old), &appended);
        assert_eq!(last.first_line(), 3);
        assert_eq!(last.old_text(), Some("line 3\nline 4\nline 5\n"));
        assert_eq!(last.new_text(), "line 3\nline 4\nline 5\nline 6\n");
    }

    #[test]
    fn a_file_without_a_final_newline_diffs_its_last_line() {
        let diff = Diff::new("a", Some("x\ny"), "x\nz");
        assert_eq!((diff.old_text(), diff.new_text()), (Some("x\ny"), "x\nz"));
    }

    #[test]
    fn a_new_file_has_no_old_text() {
        let diff = Diff::new("new.txt", None, "hi\n");
        let wire = serde_json::to_value(&diff).unwrap();
        assert_eq!(
            wire,
            json!({"path": "new.txt", "oldText": null, "newText": "hi\n", "line": 1})
        );
    }

    #[test]
    fn a_huge_diff_is_cut_at_a_line_end_and_says_so() {
        // A 4 MB file rewritten whole: both sides are cut to the cap.
        let old: String = (0..100_000)
            .map(|n| format!("old line {n:>30}\n"))
            .collect();
        let new: String = (0..100_000)
            .map(|n| format!("new line {n:>30}\n"))
            .collect();
        let diff = Diff::new("big.txt", Some(&old), &new);
        assert!(diff.truncated());
        for side in [diff.old_text().unwrap(), diff.new_text()] {
            assert!(side.len() <= MAX_DIFF_TEXT_BYTES, "{}", side.len());
            assert!(side.len() > MAX_DIFF_TEXT_BYTES - 64, "{}", side.len());
            assert!(side.ends_with('\n'));
        }
        // A single huge line is cut at a character boundary.
        let line = "é".repeat(MAX_DIFF_TEXT_BYTES);
        let diff = Diff::new("one.txt", None, &line);
        assert!(diff.truncated());
        assert!(diff.new_text().len() <= MAX_DIFF_TEXT_BYTES);
    }

    #[test]
    fn a_one_line_edit_of_a_huge_file_is_small() {
        let old: String = (0..200_000).map(|n| format!("line {n}\n")).collect();
        let new = old.replacen("line 100000\n", "changed\n", 1);
        let diff = Diff::new("big.txt", Some(&old), &new);
        assert!(!diff.truncated());
        assert_eq!(diff.first_line(), 100_001 - 3);
        assert_eq!(diff.new_text().lines().count(), 7);
    }

    #[test]
    fn json_from_elsewhere_is_read_through_the_same_bounds() {
        let huge = "x\n".repeat(MAX_DIFF_TEXT_BYTES);
        let wire = json!({
            "locations": (0..1000).map(|n| json!({"path": format!("f{n}")})).collect::<Vec<_>>(),
            "diffs": (0..20).map(|_| json!({"path": "p".repeat(10_000), "newText": huge})).collect::<Vec<_>>(),
            "todos": (0..500).map(|_| json!({"content": "t".repeat(5000), "status": "pending"})).collect::<Vec<_>>(),
        });
        let shown: Presentation = serde_json::from_value(wire).unwrap();
        assert_eq!(shown.locations().len(), MAX_LOCATIONS);
        assert_eq!(shown.diffs().len(), MAX_DIFFS);
        let diff = &shown.diffs()[0];
        assert!(diff.truncated() && diff.new_text().len() <= MAX_DIFF_TEXT_BYTES);
        assert_eq!(diff.path().len(), MAX_PATH_BYTES);
        let todos = shown.todos().unwrap();
        assert_eq!(todos.len(), MAX_TODOS);
        assert_eq!(todos[0].content.len(), MAX_TODO_BYTES);
    }

    #[test]
    fn a_presentation_round_trips_and_reads_back_its_line_offset() {
        let old = numbered(1..=30);
        let new = old.replace("line 20\n", "twenty\n");
        let shown = Presentation::new()
            .with_location(Location::new("a.txt").with_line(20))
            .with_diff(Diff::new("a.txt", Some(&old), &new))
            .with_todos([TodoItem::new("Fix it")
                .with_status(TodoStatus::InProgress)
                .with_priority(TodoPriority::High)]);
        let wire = serde_json::to_value(&shown).unwrap();
        assert_eq!(wire["diffs"][0]["line"], 17);
        assert_eq!(wire["todos"][0]["priority"], "high");
        let back: Presentation = serde_json::from_value(wire).unwrap();
        assert_eq!(back, shown);
    }

    #[test]
    fn the_model_cannot_set_a_priority_through_the_schema() {
        let schema = crate::input_schema_for::<TodoItem>();
        assert!(schema["properties"].get("priority").is_none(), "{schema}");
        assert_eq!(schema["additionalProperties"], false);
    }
}
