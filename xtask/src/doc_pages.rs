//! Part of the `doc` step: every Markdown page with compiled Rust code (docs/*.md, the
//! README.md files) is pulled into some crate's doctests with `include_str!`, so its blocks
//! are compiled and run. A page nobody includes would let its code rot unseen.

use std::path::Path;

use crate::cargo::workspace_root;

/// Fails naming each page with a Rust block that no crate includes.
pub(crate) fn check() -> Result<(), String> {
    let root = workspace_root();
    let sources = lib_sources(&root)?;
    let mut missing = Vec::new();
    for page in pages(&root)? {
        let text = std::fs::read_to_string(root.join(&page))
            .map_err(|err| format!("cannot read {page}: {err}"))?;
        if has_compiled_rust(&text) && !sources.iter().any(|(dir, src)| includes(dir, src, &page)) {
            missing.push(page);
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "pages with Rust code that no crate compiles as doctests (add `#[cfg(doctest)] \
             #[doc = include_str!(..)] pub struct ..;` to the crate they document): {}",
            missing.join(", ")
        ))
    }
}

/// docs/*.md, README.md and crates/*/README.md, relative to the root, sorted.
pub(crate) fn pages(root: &Path) -> Result<Vec<String>, String> {
    let mut pages = vec!["README.md".to_owned()];
    for (dir, only_readme) in [("docs", false), ("crates", true)] {
        let entries =
            std::fs::read_dir(root.join(dir)).map_err(|err| format!("cannot list {dir}: {err}"))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if only_readme {
                if entry.path().join("README.md").is_file() {
                    pages.push(format!("{dir}/{name}/README.md"));
                }
            } else if name.ends_with(".md") {
                pages.push(format!("{dir}/{name}"));
            }
        }
    }
    pages.sort();
    Ok(pages)
}

/// Each crate's `src/lib.rs`: its directory (relative to the root) and text.
fn lib_sources(root: &Path) -> Result<Vec<(String, String)>, String> {
    let entries = std::fs::read_dir(root.join("crates"))
        .map_err(|err| format!("cannot list crates: {err}"))?;
    let mut sources = Vec::new();
    for entry in entries.flatten() {
        let lib = entry.path().join("src/lib.rs");
        if let Ok(text) = std::fs::read_to_string(&lib) {
            let name = entry.file_name().to_string_lossy().into_owned();
            sources.push((format!("crates/{name}/src"), text));
        }
    }
    Ok(sources)
}

/// Whether `src` (a lib.rs in `dir`) has `include_str!("…")` naming `page`.
fn includes(dir: &str, src: &str, page: &str) -> bool {
    src.split("include_str!(\"").skip(1).any(|rest| {
        let Some(relative) = rest.split('"').next() else {
            return false;
        };
        normalize(&format!("{dir}/{relative}")) == page
    })
}

/// `a/b/../c` → `a/c`.
pub(crate) fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            ".." => {
                parts.pop();
            }
            "." | "" => {}
            other => parts.push(other),
        }
    }
    parts.join("/")
}

/// Whether a fence opens a Rust block that rustdoc compiles: `rust` (or no tag), plus any
/// of `no_run`, `should_panic`, `compile_fail`, `edition…`, but not `ignore`.
fn has_compiled_rust(text: &str) -> bool {
    let mut inside = false;
    for line in text.lines() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        if inside {
            inside = false;
            continue;
        }
        inside = true;
        let words: Vec<&str> = info.split(',').map(str::trim).collect();
        let rust = info.trim().is_empty() || words.contains(&"rust");
        if rust && !words.contains(&"ignore") {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::{has_compiled_rust, includes, normalize};

    #[test]
    fn compiled_blocks_are_told_from_the_rest() {
        assert!(has_compiled_rust("```rust\nfn main() {}\n```\n"));
        assert!(has_compiled_rust("```rust,no_run\n```\n"));
        assert!(has_compiled_rust("```\nuntagged is Rust to rustdoc\n```\n"));
        assert!(!has_compiled_rust(
            "```rust,ignore\n```\n```text\n```\n```json\n{}\n```\n"
        ));
        // A closing fence is not an opening one.
        assert!(!has_compiled_rust("```sh\nls\n```\n"));
    }

    #[test]
    fn an_include_is_matched_by_its_resolved_path() {
        let src = "#[doc = include_str!(\"../../../docs/llm.md\")]\npub struct D;";
        assert!(includes("crates/mux-llm/src", src, "docs/llm.md"));
        assert!(!includes("crates/mux-llm/src", src, "docs/web.md"));
        assert!(includes(
            "crates/mux/src",
            "include_str!(\"../README.md\")",
            "crates/mux/README.md"
        ));
        assert_eq!(normalize("crates/a/src/../../../docs/x.md"), "docs/x.md");
    }

    /// The workspace itself passes.
    #[test]
    fn every_page_with_rust_code_is_compiled() {
        super::check().unwrap();
    }
}
