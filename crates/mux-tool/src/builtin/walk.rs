//! The directory walk shared by `list_dir`, `glob` and `grep`: gitignore-aware, symlinks
//! listed but never followed (so a walk cannot leave the root), `.git` skipped, sorted.

use std::path::Path;

use ignore::{Walk, WalkBuilder};

/// A walk of `dir` that honours `.gitignore`, `.ignore` and git's exclude files, whether or
/// not `dir` is inside a git repository.
pub(crate) fn walk(dir: &Path, max_depth: Option<usize>) -> Walk {
    let mut builder = WalkBuilder::new(dir);
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .max_depth(max_depth)
        .filter_entry(|entry| entry.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b));
    builder.build()
}
