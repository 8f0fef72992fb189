//! `glob`: files whose path matches a glob pattern, gitignore-aware.

use globset::GlobBuilder;
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

/// How many paths a call returns at most, by default.
const DEFAULT_MAX_RESULTS: usize = 1000;

/// The arguments of `glob`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobArgs {
    /// The pattern, matched against paths relative to `path`: `*` stays within one directory,
    /// `**` crosses directories, e.g. `**/*.rs` or `src/*.toml`.
    pub pattern: String,
    /// The directory to search, relative to the root. Default: the root.
    pub path: Option<String>,
}

/// Finds files by glob pattern under a directory and returns their paths relative to the
/// root, sorted. Gitignored files and `.git` are skipped; symlinks are not followed.
#[derive(Clone, Debug)]
pub struct Glob {
    sandbox: Sandbox,
    max_results: usize,
}

impl Glob {
    /// `glob` confined to `sandbox`.
    pub fn new(sandbox: Sandbox) -> Self {
        Self {
            sandbox,
            max_results: DEFAULT_MAX_RESULTS,
        }
    }

    /// Returns at most `results` paths per call.
    pub fn max_results(mut self, results: usize) -> Self {
        self.max_results = results;
        self
    }
}

impl TypedTool for Glob {
    type Args = GlobArgs;
    const NAME: &'static str = "glob";

    fn description(&self) -> String {
        "Finds files under the workspace root whose path matches a glob pattern such as \
         **/*.rs. Returns paths relative to the root; gitignored files are skipped."
            .into()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only().with_kind(ToolKind::Search)
    }

    fn subject(&self, args: &GlobArgs) -> Subject {
        Subject::path(args.path.as_deref().unwrap_or("."))
    }

    async fn call(&self, args: GlobArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let tool = self.clone();
        blocking(move || {
            let matcher = GlobBuilder::new(&args.pattern)
                .literal_separator(true)
                .build()
                .map_err(|err| {
                    ToolError::InvalidArguments(format!(
                        "bad glob pattern {:?}: {err}",
                        args.pattern
                    ))
                })?
                .compile_matcher();
            let located = tool
                .sandbox
                .locate_existing(args.path.as_deref().unwrap_or("."))?;
            let resolved = tool.sandbox.sandbox_path(&located);
            if !located.is_dir() {
                return Err(ToolError::failed(format!(
                    "{} is not a directory",
                    resolved.display()
                )));
            }
            let mut checked = tool.sandbox.checked_walk()?;
            let mut found = Vec::new();
            let mut more = 0usize;
            let mut unreadable = 0usize;
            let (entries, withheld) = walk(resolved.real(), None, &cx);
            for entry in entries {
                if cx.is_cancelled() {
                    return Err(ToolError::Cancelled);
                }
                let Ok(entry) = entry else {
                    unreadable += 1;
                    continue;
                };
                if entry.file_type().is_some_and(|kind| kind.is_dir()) {
                    continue;
                }
                let Ok(relative) = entry.path().strip_prefix(resolved.real()) else {
                    continue;
                };
                if !matcher.is_match(relative) {
                    continue;
                }
                let Ok(from_root) = entry.path().strip_prefix(tool.sandbox.root()) else {
                    continue;
                };
                // What the walk saw, as it is now beneath the root handle.
                match checked.kind(from_root) {
                    None | Some(FileType::Directory) => continue,
                    Some(_) => {}
                }
                if found.len() == tool.max_results {
                    more += 1;
                    continue;
                }
                found.push(from_root.to_string_lossy().into_owned());
            }
            let count = found.len();
            let mut text = if found.is_empty() {
                format!("No files match {:?}", args.pattern)
            } else {
                found.join("\n")
            };
            if more > 0 {
                text.push_str(&format!(
                    "\n[{more} more matches not shown; narrow the pattern or path]"
                ));
            }
            if unreadable > 0 {
                text.push_str(&format!(
                    "\n[{unreadable} files or directories could not be read]"
                ));
            }
            if let Some(note) = withheld.note() {
                text.push('\n');
                text.push_str(&note);
            }
            Ok(ToolOutput::text(text)
                .with_metadata("matches", json!(count))
                .with_metadata("omitted", json!(more))
                .with_metadata("withheld", json!(withheld.count()))
                .with_presentation(
                    Presentation::new().with_location(Location::new(resolved.display())),
                ))
        })
        .await
    }
}
