//! The directory walk shared by `list_dir`, `glob` and `grep`: gitignore-aware, symlinks
//! listed but never followed (so a walk cannot leave the root), `.git` skipped, sorted, and
//! paths the call's [`PathFilter`](crate::PathFilter) withholds left out and counted.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use ignore::{Walk, WalkBuilder};

use crate::ToolContext;

/// How many paths a walk left out because the call's filter withholds them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Withheld(Arc<AtomicUsize>);

impl Withheld {
    pub(crate) fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// The note a tool appends to its output when it left paths out.
    pub(crate) fn note(&self) -> Option<String> {
        match self.count() {
            0 => None,
            n => Some(format!(
                "[{n} {} withheld: permission rules deny reading {}]",
                if n == 1 { "path" } else { "paths" },
                if n == 1 { "it" } else { "them" }
            )),
        }
    }
}

/// A walk of `dir` that honours `.gitignore`, `.ignore` and git's exclude files, whether or
/// not `dir` is inside a git repository. A directory the call withholds is not entered.
pub(crate) fn walk(dir: &Path, max_depth: Option<usize>, cx: &ToolContext) -> (Walk, Withheld) {
    let withheld = Withheld::default();
    let mut builder = WalkBuilder::new(dir);
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .max_depth(max_depth)
        .sort_by_file_name(|a, b| a.cmp(b));
    let filter = cx.path_filter().cloned();
    let counter = withheld.clone();
    builder.filter_entry(move |entry| {
        if entry.file_name() == ".git" {
            return false;
        }
        let hidden =
            entry.depth() > 0 && filter.as_ref().is_some_and(|f| f.withholds(entry.path()));
        if hidden {
            counter.0.fetch_add(1, Ordering::Relaxed);
        }
        !hidden
    });
    (builder.build(), withheld)
}
