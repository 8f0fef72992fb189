//! Tool families: the names a rule can give to every tool of a kind, as Claude Code does.
//!
//! | family | rule names | the calls it reaches |
//! |---|---|---|
//! | read | `Read` | any tool with a path subject that is annotated read-only: `read_file`, `grep`, `glob`, `list_dir`, … |
//! | edit | `Edit`, `Write` | any tool with a path subject that is not read-only: `edit_file`, `write_file`, … |
//! | shell | `Bash` | any tool with a command subject: `bash`, … |
//! | fetch | `WebFetch` | any tool with a URL subject: `web_fetch`, … |
//!
//! A tool joins a family through what it declares (its [`Subject`] kind and its read-only
//! annotation), so an application's tools and MCP tools join as mux's own do.

use std::fmt;

use mux_tool::{Subject, ToolSpec};

/// A family of tools a rule can name at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Tools that read files.
    Read,
    /// Tools that change files.
    Edit,
    /// Tools that run shell commands.
    Bash,
    /// Tools that fetch URLs.
    WebFetch,
}

/// mux's built-in tools, the family each belongs to, and the Claude Code name that means it.
const MEMBERS: [(&str, Family, Option<&str>); 8] = [
    ("read_file", Family::Read, None),
    ("grep", Family::Read, Some("Grep")),
    ("glob", Family::Read, Some("Glob")),
    ("list_dir", Family::Read, Some("LS")),
    ("edit_file", Family::Edit, Some("MultiEdit")),
    ("write_file", Family::Edit, None),
    ("bash", Family::Bash, None),
    ("web_fetch", Family::WebFetch, None),
];

/// Tool names that are known without belonging to a family: mux's other built-in tools and
/// Claude Code's tools that have no path, command or URL.
const OTHER_KNOWN: [&str; 8] = [
    "todo_write",
    "task",
    "TodoWrite",
    "Task",
    "WebSearch",
    "NotebookEdit",
    "NotebookRead",
    "ask_user",
];

impl Family {
    /// The family a rule's tool part names: `Read`; `Edit` or `Write`; `Bash`; `WebFetch`.
    pub fn named(name: &str) -> Option<Self> {
        match name {
            "Read" => Some(Self::Read),
            "Edit" | "Write" => Some(Self::Edit),
            "Bash" => Some(Self::Bash),
            "WebFetch" => Some(Self::WebFetch),
            _ => None,
        }
    }

    /// The family of a call, from its tool's declarations: a command subject is the shell, a
    /// URL subject a fetch, a path subject a read when the tool is read-only and an edit
    /// otherwise. A call with no subject belongs to no family.
    pub fn of(spec: &ToolSpec, subject: &Subject) -> Option<Self> {
        match subject {
            Subject::Command(_) => Some(Self::Bash),
            Subject::Url(_) => Some(Self::WebFetch),
            Subject::Path(_) if spec.annotations.read_only => Some(Self::Read),
            Subject::Path(_) => Some(Self::Edit),
            _ => None,
        }
    }

    /// The family of one of mux's built-in tools (`read_file`, `bash`, …), or of the Claude
    /// Code name of one (`Grep`, `Glob`, `LS`, `MultiEdit`).
    pub fn of_member(name: &str) -> Option<Self> {
        MEMBERS
            .iter()
            .find(|(mux, _, claude)| *mux == name || *claude == Some(name))
            .map(|(_, family, _)| *family)
    }

    /// The mux tool a Claude Code name stands for (`Grep` → `grep`), if it is an alias.
    pub(crate) fn alias_of(name: &str) -> Option<&'static str> {
        MEMBERS
            .iter()
            .find(|(_, _, claude)| *claude == Some(name))
            .map(|(mux, _, _)| *mux)
    }

    /// What kind of subject the family's calls have: `"command"`, `"path"` or `"url"`.
    pub(crate) fn subject_kind(self) -> &'static str {
        match self {
            Self::Read | Self::Edit => "path",
            Self::Bash => "command",
            Self::WebFetch => "url",
        }
    }

    /// The name a rule uses for the family.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "Read",
            Self::Edit => "Edit",
            Self::Bash => "Bash",
            Self::WebFetch => "WebFetch",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a rule's tool part names something this crate knows: a family, a built-in tool,
/// one of Claude Code's tools, or an MCP tool (`mcp__…`).
pub(crate) fn is_known_tool(name: &str) -> bool {
    Family::named(name).is_some()
        || Family::of_member(name).is_some()
        || OTHER_KNOWN.contains(&name)
        || name.starts_with("mcp__")
}

/// The name closest to `name` among the known ones and an application's `extra` tools, for a
/// "did you mean" hint.
pub(crate) fn closest<'a>(name: &str, extra: &[&'a str]) -> Option<&'a str> {
    let families = ["Read", "Edit", "Write", "Bash", "WebFetch"];
    let members = MEMBERS
        .iter()
        .flat_map(|(mux, _, claude)| std::iter::once(*mux).chain(*claude));
    families
        .into_iter()
        .chain(members)
        .chain(OTHER_KNOWN)
        .chain(extra.iter().copied())
        .map(|known| (strsim::jaro_winkler(name, known), known))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, known)| known)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_members() {
        assert_eq!(Family::named("Write"), Some(Family::Edit));
        assert_eq!(Family::named("read_file"), None);
        assert_eq!(Family::of_member("grep"), Some(Family::Read));
        assert_eq!(Family::of_member("LS"), Some(Family::Read));
        assert_eq!(Family::alias_of("Glob"), Some("glob"));
        assert!(is_known_tool("mcp__github__create_issue"));
        assert!(!is_known_tool("Bsh"));
        assert_eq!(closest("Bsh", &[]), Some("Bash"));
        assert_eq!(closest("reed_file", &[]), Some("read_file"));
        assert_eq!(closest("deplooy", &["deploy"]), Some("deploy"));
    }
}
