//! `grep`: a regular expression over the tree, with ripgrep's libraries, capped.

use std::fs::File;
use std::path::Path;

use globset::GlobBuilder;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Lossy;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::text::decode_head;
use super::walk::{Withheld, walk};
use super::{Sandbox, blocking};
use crate::{
    Location, Presentation, Subject, ToolAnnotations, ToolContext, ToolError, ToolKind, ToolOutput,
    TypedTool,
};

/// How many matching lines a call returns at most, by default.
const DEFAULT_MAX_MATCHES: usize = 500;
/// How many bytes of output a call returns at most, by default.
const DEFAULT_MAX_BYTES: usize = 50_000;
/// How many bytes of one matching line are shown.
const MAX_LINE_BYTES: usize = 400;

/// The arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// The regular expression (Rust regex syntax, as in ripgrep).
    pub pattern: String,
    /// The file or directory to search, relative to the root. Default: the root.
    pub path: Option<String>,
    /// Only search files whose path (relative to `path`) matches this glob, e.g. `**/*.rs`.
    pub glob: Option<String>,
    /// Match without regard to case. Default: false.
    #[serde(default)]
    pub ignore_case: bool,
}

/// Searches file contents with a regular expression, like ripgrep: gitignore-aware, binary
/// files skipped, results as `path:line:text` with paths relative to the root, capped in
/// matches and bytes with a visible marker.
#[derive(Clone, Debug)]
pub struct Grep {
    sandbox: Sandbox,
    max_matches: usize,
    max_bytes: usize,
}

impl Grep {
    /// `grep` confined to `sandbox`.
    pub fn new(sandbox: Sandbox) -> Self {
        Self {
            sandbox,
            max_matches: DEFAULT_MAX_MATCHES,
            max_bytes: DEFAULT_MAX_BYTES,
        }
    }

    /// Returns at most `matches` matching lines per call.
    pub fn max_matches(mut self, matches: usize) -> Self {
        self.max_matches = matches;
        self
    }

    /// Returns at most `bytes` bytes of results per call.
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }
}

impl TypedTool for Grep {
    type Args = GrepArgs;
    const NAME: &'static str = "grep";

    fn description(&self) -> String {
        "Searches file contents under the workspace root with a regular expression (ripgrep \
         syntax). Returns path:line:text for each matching line; gitignored and binary files are \
         skipped. Narrow with path and glob."
            .into()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only().with_kind(ToolKind::Search)
    }

    fn subject(&self, args: &GrepArgs) -> Subject {
        Subject::path(args.path.as_deref().unwrap_or("."))
    }

    async fn call(&self, args: GrepArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let tool = self.clone();
        blocking(move || tool.search(&args, &cx)).await
    }
}

/// What a search has gathered so far.
struct Results {
    lines: Vec<String>,
    bytes: usize,
    full: bool,
    unreadable: usize,
}

impl Grep {
    fn search(&self, args: &GrepArgs, cx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let matcher = RegexMatcherBuilder::new()
            .case_insensitive(args.ignore_case)
            .build(&args.pattern)
            .map_err(|err| {
                ToolError::InvalidArguments(format!("bad regex {:?}: {err}", args.pattern))
            })?;
        let filter = match &args.glob {
            Some(glob) => Some(
                GlobBuilder::new(glob)
                    .literal_separator(true)
                    .build()
                    .map_err(|err| {
                        ToolError::InvalidArguments(format!("bad glob {glob:?}: {err}"))
                    })?
                    .compile_matcher(),
            ),
            None => None,
        };
        let located = self
            .sandbox
            .locate_existing(args.path.as_deref().unwrap_or("."))?;
        let resolved = self.sandbox.sandbox_path(&located);
        let base = resolved.real();
        let mut searcher = SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(0))
            .line_number(true)
            .build();
        let mut results = Results {
            lines: Vec::new(),
            bytes: 0,
            full: false,
            unreadable: 0,
        };
        let mut withheld = Withheld::default();
        if !located.is_dir() {
            match located.open_file()? {
                Some(file) => self.search_file(
                    &mut searcher,
                    &matcher,
                    &file,
                    resolved.relative(),
                    &mut results,
                ),
                None => results.unreadable += 1,
            }
        } else {
            let mut checked = self.sandbox.checked_walk()?;
            let (entries, left_out) = walk(base, None, cx);
            withheld = left_out;
            for entry in entries {
                if cx.is_cancelled() {
                    return Err(ToolError::Cancelled);
                }
                if results.full {
                    break;
                }
                let Ok(entry) = entry else {
                    results.unreadable += 1;
                    continue;
                };
                if !entry.file_type().is_some_and(|kind| kind.is_file()) {
                    continue;
                }
                let relative = entry.path().strip_prefix(base).unwrap_or(entry.path());
                if filter.as_ref().is_some_and(|glob| !glob.is_match(relative)) {
                    continue;
                }
                let Ok(from_root) = entry.path().strip_prefix(self.sandbox.root()) else {
                    continue;
                };
                // Opened beneath the root handle, not by the path the walk saw.
                match checked.open_file(from_root) {
                    Some(file) => {
                        self.search_file(&mut searcher, &matcher, &file, from_root, &mut results);
                    }
                    None => results.unreadable += 1,
                }
            }
        }
        let count = results.lines.len();
        let mut text = if results.lines.is_empty() {
            format!("No matches for {:?}", args.pattern)
        } else {
            results.lines.join("\n")
        };
        if results.full {
            text.push_str(&format!(
                "\n[results capped at {count} lines; narrow the pattern, path or glob]"
            ));
        }
        if results.unreadable > 0 {
            text.push_str(&format!(
                "\n[{} files or directories could not be read]",
                results.unreadable
            ));
        }
        if let Some(note) = withheld.note() {
            text.push('\n');
            text.push_str(&note);
        }
        Ok(ToolOutput::text(text)
            .with_metadata("matches", json!(count))
            .with_metadata("capped", json!(results.full))
            .with_metadata("withheld", json!(withheld.count()))
            .with_presentation(
                Presentation::new().with_location(Location::new(resolved.display())),
            ))
    }

    fn search_file(
        &self,
        searcher: &mut Searcher,
        matcher: &grep_regex::RegexMatcher,
        file: &File,
        relative: &Path,
        results: &mut Results,
    ) {
        let shown = relative.to_string_lossy().into_owned();
        let sink = Lossy(|number, line: &str| {
            let line = line.trim_end_matches(['\n', '\r']);
            let mut text = decode_head(&line.as_bytes()[..line.len().min(MAX_LINE_BYTES)]);
            if line.len() > MAX_LINE_BYTES {
                text.to_mut().push_str(" … [line cut]");
            }
            let entry = format!("{shown}:{number}:{text}");
            if results.lines.len() == self.max_matches
                || results.bytes + entry.len() + 1 > self.max_bytes
            {
                results.full = true;
                return Ok(false);
            }
            results.bytes += entry.len() + 1;
            results.lines.push(entry);
            Ok(true)
        });
        if searcher.search_file(matcher, file, sink).is_err() {
            results.unreadable += 1;
        }
    }
}
