//! `list_dir`: the entries of one directory, gitignore-aware.

use rustix::fs::FileType;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::walk::walk;
use super::{Sandbox, blocking};
use crate::{
    Location, Presentation, Subject, ToolAnnotations, ToolContext, ToolError, ToolKind, ToolOutput,
    TypedTool,
};

/// How many entries a call lists at most, by default.
const DEFAULT_MAX_ENTRIES: usize = 1000;

/// The arguments of `list_dir`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDirArgs {
    /// The directory to list, relative to the root. Default: the root.
    #[serde(default = "root")]
    pub path: String,
}

fn root() -> String {
    ".".to_owned()
}

/// Lists one directory, sorted by name: directories end in `/`, symlinks in `@`. Entries
/// matched by `.gitignore` or `.ignore` files and the `.git` directory are left out.
#[derive(Clone, Debug)]
pub struct ListDir {
    sandbox: Sandbox,
    max_entries: usize,
}

impl ListDir {
    /// `list_dir` confined to `sandbox`.
    pub fn new(sandbox: Sandbox) -> Self {
        Self {
            sandbox,
            max_entries: DEFAULT_MAX_ENTRIES,
        }
    }

    /// Lists at most `entries` entries per call.
    pub fn max_entries(mut self, entries: usize) -> Self {
        self.max_entries = entries;
        self
    }
}

impl TypedTool for ListDir {
    type Args = ListDirArgs;
    const NAME: &'static str = "list_dir";

    fn description(&self) -> String {
        "Lists a directory under the workspace root (default: the root). Directories end in /, \
         symlinks in @; gitignored entries are left out."
            .into()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only().with_kind(ToolKind::Search)
    }

    fn subject(&self, args: &ListDirArgs) -> Subject {
        Subject::path(&args.path)
    }

    async fn call(&self, args: ListDirArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let tool = self.clone();
        blocking(move || {
            let located = tool.sandbox.locate_existing(&args.path)?;
            let resolved = tool.sandbox.sandbox_path(&located);
            let shown = resolved.display();
            if !located.is_dir() {
                return Err(ToolError::failed(format!(
                    "{shown} is not a directory; use read_file to read a file"
                )));
            }
            let mut checked = tool.sandbox.checked_walk()?;
            let mut lines = Vec::new();
            let mut more = 0usize;
            let (entries, withheld) = walk(resolved.real(), Some(1), &cx);
            for entry in entries {
                if cx.is_cancelled() {
                    return Err(ToolError::Cancelled);
                }
                let entry = entry.map_err(|err| ToolError::failed(err.to_string()))?;
                if entry.depth() == 0 {
                    continue;
                }
                // What the walk saw, as it is now beneath the root handle.
                let Some(kind) = entry
                    .path()
                    .strip_prefix(tool.sandbox.root())
                    .ok()
                    .and_then(|relative| checked.kind(relative))
                else {
                    continue;
                };
                if lines.len() == tool.max_entries {
                    more += 1;
                    continue;
                }
                let name = entry.file_name().to_string_lossy();
                let suffix = match kind {
                    FileType::Symlink => "@",
                    FileType::Directory => "/",
                    _ => "",
                };
                lines.push(format!("{name}{suffix}"));
            }
            let count = lines.len();
            let mut text = if lines.is_empty() {
                format!("({shown} is empty)")
            } else {
                lines.join("\n")
            };
            if more > 0 {
                text.push_str(&format!("\n[{more} more entries not shown]"));
            }
            if let Some(note) = withheld.note() {
                text.push('\n');
                text.push_str(&note);
            }
            Ok(ToolOutput::text(text)
                .with_metadata("entries", json!(count))
                .with_metadata("omitted", json!(more))
                .with_metadata("withheld", json!(withheld.count()))
                .with_presentation(Presentation::new().with_location(Location::new(shown))))
        })
        .await
    }
}
