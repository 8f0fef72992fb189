//! Part of the `doc` step: what the docs point at exists. In every page `doc_pages` lists
//! (README.md, docs/*.md and the crates' READMEs), every relative Markdown link names a file
//! or directory of the tree, a link's `#anchor` into a Markdown page names one of its
//! headings, and every code span that is a repository path (`crates/…`, `examples/…`,
//! `docs/…`, `xtask/…`) exists. Fenced blocks are not read.

use std::collections::HashSet;
use std::path::Path;

use crate::cargo::workspace_root;
use crate::doc_pages::{normalize, pages};

/// Where a code span that is a path starts.
const PATH_PREFIXES: [&str; 4] = ["crates/", "examples/", "docs/", "xtask/"];

/// Fails naming each link, anchor and path of the docs that names nothing.
pub(crate) fn check() -> Result<(), String> {
    let root = workspace_root();
    let tree = Tree { root: &root };
    let mut problems = Vec::new();
    for page in pages(&root)? {
        let text = std::fs::read_to_string(root.join(&page))
            .map_err(|err| format!("cannot read {page}: {err}"))?;
        problems.extend(check_page(&page, &text, &tree));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the docs name {} thing(s) that do not exist:\n  {}",
            problems.len(),
            problems.join("\n  ")
        ))
    }
}

/// What a page's links are checked against.
trait Files {
    /// Whether `path` (relative to the root, normalized) is a file or a directory.
    fn exists(&self, path: &str) -> bool;
    /// The text of the page at `path`, if it is one.
    fn read(&self, path: &str) -> Option<String>;
}

/// The working tree.
struct Tree<'a> {
    root: &'a Path,
}

impl Files for Tree<'_> {
    fn exists(&self, path: &str) -> bool {
        path.is_empty() || self.root.join(path).exists()
    }

    fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(path)).ok()
    }
}

/// The problems of `page` (its path relative to the root), each as `page:line: what`.
fn check_page(page: &str, text: &str, files: &dyn Files) -> Vec<String> {
    let dir = page.rsplit_once('/').map_or("", |(dir, _)| dir);
    let mut problems = Vec::new();
    for (number, line) in prose_lines(text) {
        let mut report = |what: String| problems.push(format!("{page}:{number}: {what}"));
        let targets = link_targets(line);
        for target in &targets {
            if let Some(what) = check_link(page, text, dir, target, files) {
                report(what);
            }
        }
        for span in code_spans(line) {
            if let Some(path) = repo_path(span)
                && !files.exists(&normalize(path))
            {
                report(format!("`{span}` names a path that does not exist"));
            }
        }
        // A reference definition's target is a word too: checked once, as a link.
        for word in bare_words(line)
            .into_iter()
            .filter(|w| !targets.iter().any(|t| t == w))
        {
            if let Some(path) = repo_path(word)
                && !files.exists(&normalize(path))
            {
                report(format!("{word} names a path that does not exist"));
            }
        }
    }
    problems
}

/// A problem with the link `target` on `page` (in `dir`, its text `own`), if it has one.
fn check_link(page: &str, own: &str, dir: &str, target: &str, files: &dyn Files) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (target, None),
    };
    let resolved = if path.is_empty() {
        page.to_owned()
    } else if let Some(absolute) = path.strip_prefix('/') {
        normalize(absolute)
    } else {
        normalize(&format!("{dir}/{path}"))
    };
    if !files.exists(&resolved) {
        return Some(format!(
            "link `{target}` names {resolved}, which does not exist"
        ));
    }
    let anchor = anchor.filter(|a| !a.is_empty())?;
    if !resolved.ends_with(".md") {
        return None;
    }
    let text = if resolved == page {
        own.to_owned()
    } else {
        files.read(&resolved)?
    };
    if anchors(&text).contains(anchor) {
        None
    } else {
        Some(format!(
            "link `{target}`: {resolved} has no heading whose anchor is `#{anchor}`"
        ))
    }
}

/// The lines outside fenced blocks, numbered from 1.
fn prose_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut fence: Option<&str> = None;
    text.lines().enumerate().filter_map(move |(i, line)| {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(marker)) => {
                fence = Some(marker);
                None
            }
            (Some(open), Some(marker)) if open == marker => {
                fence = None;
                None
            }
            (Some(_), _) => None,
            (None, None) => Some((i + 1, line)),
        }
    })
}

/// The code spans of a line (the pieces between pairs of backticks).
fn code_spans(line: &str) -> impl Iterator<Item = &str> {
    line.split('`').skip(1).step_by(2)
}

/// The words of a line outside code spans and link targets, without the punctuation around
/// them (`(docs/web.md),` → `docs/web.md`, `docs/web.md's` → `docs/web.md`).
fn bare_words(line: &str) -> Vec<&str> {
    let mut words = Vec::new();
    for text in line.split('`').step_by(2) {
        for word in text.split(|c: char| c.is_whitespace() || c == '(' || c == '[') {
            // A link's target is checked as a link; its text starts after `[`.
            let word = word.split("](").next().unwrap_or(word);
            let word = word.strip_suffix("'s").unwrap_or(word);
            let word = word.trim_end_matches(['.', ',', ';', ':', ')', ']', '"', '\'', '!', '?']);
            if !word.is_empty() {
                words.push(word);
            }
        }
    }
    words
}

/// The targets of a line's links (`[text](target)`, `[text](<target> "title")`) and of a
/// reference definition (`[name]: target`), outside code spans.
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    if let Some(rest) = line.trim_start().strip_prefix('[')
        && let Some((_, definition)) = rest.split_once("]:")
        && let Some(target) = definition.split_whitespace().next()
    {
        targets.push(target.trim_matches(['<', '>']).to_owned());
    }
    for text in line.split('`').step_by(2) {
        let mut rest = text;
        while let Some(start) = rest.find("](") {
            let after = &rest[start + 2..];
            let end = after.find(')').unwrap_or(after.len());
            let inside = after[..end].trim();
            let target = inside.split_whitespace().next().unwrap_or_default();
            targets.push(target.trim_matches(['<', '>']).to_owned());
            rest = &after[end..];
        }
    }
    targets
}

/// The repository path a code span (or a word of prose) names, without a `:line` or
/// `#anchor` after it, nor what follows a space; `None` when it is not a path (no known
/// prefix, or a pattern: `*`, `<id>`, `{a,b}`, `…`).
fn repo_path(span: &str) -> Option<&str> {
    // `examples/x.rs --port N`: the path is the first word.
    let span = span.split_whitespace().next().unwrap_or_default();
    if !PATH_PREFIXES.iter().any(|prefix| span.starts_with(prefix))
        || span.contains(['*', '<', '>', '{', '}', '…', '$', '|', '[', ']'])
        || span.contains("...")
    {
        return None;
    }
    let path = span.split(['#', ':']).next().unwrap_or(span);
    Some(path)
}

/// The anchors of a page: its headings' (as GitHub makes them, `-1`, `-2` after repeats) and
/// those of `<a id="…">` / `<a name="…">` tags.
fn anchors(text: &str) -> HashSet<String> {
    let mut found = HashSet::new();
    for (_, line) in prose_lines(text) {
        for attribute in ["id=\"", "name=\""] {
            for piece in line.split(attribute).skip(1) {
                if let Some(value) = piece.split('"').next() {
                    found.insert(value.to_owned());
                }
            }
        }
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim().trim_end_matches('#').trim());
        let mut anchor = base.clone();
        let mut repeat = 0;
        while found.contains(&anchor) {
            repeat += 1;
            anchor = format!("{base}-{repeat}");
        }
        found.insert(anchor);
    }
    found
}

/// GitHub's anchor of a heading: links reduced to their text, lower case, letters, digits,
/// `-` and `_` kept, spaces made `-`, the rest dropped.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // `[text](target)` → `text`.
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|i| open + i) else {
            break;
        };
        let Some(end) = rest[close..].find(')').map(|i| close + i) else {
            break;
        };
        text.push_str(&rest[..open]);
        text.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    text.push_str(rest);
    text.to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::collections::HashMap;

    use super::*;

    /// A tree of a few files, in memory.
    struct Fake(HashMap<&'static str, &'static str>);

    impl Files for Fake {
        fn exists(&self, path: &str) -> bool {
            path.is_empty()
                || self.0.contains_key(path)
                || self
                    .0
                    .keys()
                    .any(|file| file.starts_with(&format!("{path}/")))
        }

        fn read(&self, path: &str) -> Option<String> {
            self.0.get(path).map(|text| (*text).to_owned())
        }
    }

    fn tree() -> Fake {
        Fake(HashMap::from([
            ("README.md", "# mux\n"),
            (
                "docs/web.md",
                "# The web face\n## `AguiRouter::build()` and you\n## Setup\n## Setup\n<a id=\"pinned\"></a>\n```sh\n# not a heading\n```\n",
            ),
            ("crates/mux-web/src/lib.rs", ""),
        ]))
    }

    fn problems(page: &str, text: &str) -> Vec<String> {
        check_page(page, text, &tree())
    }

    #[test]
    fn a_link_to_a_missing_file_fails() {
        let found = problems(
            "docs/a.md",
            "See [the guide](gone.md) and [up](../README.md).\n",
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with("docs/a.md:1:") && found[0].contains("docs/gone.md"),
            "{found:?}"
        );
    }

    #[test]
    fn a_link_to_a_heading_that_is_not_there_fails() {
        let good = "[a](web.md#the-web-face) [b](web.md#aguirouterbuild-and-you) \
                    [c](web.md#setup-1) [d](web.md#pinned) [e](../crates/mux-web/src/lib.rs#L3)";
        assert_eq!(problems("docs/a.md", good), Vec::<String>::new());
        let bad = problems(
            "docs/a.md",
            "[a](web.md#setup-2) [b](web.md#not-a-heading)\n",
        );
        assert_eq!(bad.len(), 2, "{bad:?}");
        assert!(bad[0].contains("#setup-2"), "{bad:?}");
        // An anchor into the page itself.
        let own = problems("docs/web.md", "# Top\n[here](#top) [gone](#nowhere)\n");
        assert_eq!(own.len(), 1, "{own:?}");
        assert!(own[0].contains("#nowhere"), "{own:?}");
    }

    #[test]
    fn a_code_span_naming_a_missing_path_fails() {
        let text = "The page is `crates/mux-web/src/lib.rs:12`, the crate `crates/mux-web/`,\n\
                    the rest `crates/mux-web/src/page.rs` and `examples/src/gone.rs`.\n";
        let found = problems("README.md", text);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found[0].contains("`crates/mux-web/src/page.rs`"),
            "{found:?}"
        );
        assert!(found[1].starts_with("README.md:2:"), "{found:?}");
    }

    #[test]
    fn urls_patterns_and_fenced_blocks_are_not_paths() {
        let text = "[site](https://example.com/x.md) [mail](mailto:a@b) `crates/*/README.md`\n\
                    `crates/<name>/src` `docs/{a,b}.md` `docs/…` `cargo test -p docs/x`\n\
                    the docs/*.md pages, docs/web.md's guide, (see docs/web.md).\n\
                    ```text\n[in a block](missing.md) `crates/missing`\n```\n\
                    `[not a link](missing.md)`\n";
        assert_eq!(problems("README.md", text), Vec::<String>::new());
    }

    #[test]
    fn a_path_in_prose_or_before_arguments_is_checked() {
        let text =
            "See docs/gone.md, or (crates/mux-web/src/lib.rs); run `examples/x.rs --port 1`.\n";
        let found = problems("README.md", text);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(
            found.iter().any(|p| p.contains("docs/gone.md names")),
            "{found:?}"
        );
        assert!(
            found.iter().any(|p| p.contains("`examples/x.rs --port 1`")),
            "{found:?}"
        );
    }

    #[test]
    fn reference_definitions_are_links() {
        let found = problems("README.md", "[guide]: docs/gone.md\n[web]: docs/web.md\n");
        assert_eq!(found.len(), 1, "{found:?}");
    }

    #[test]
    fn headings_become_github_anchors() {
        assert_eq!(
            slug("Sessions and their stores, a guide"),
            "sessions-and-their-stores-a-guide"
        );
        assert_eq!(slug("`Store::open(url)`"), "storeopenurl");
        assert_eq!(
            slug("See [the web face](web.md) now"),
            "see-the-web-face-now"
        );
        assert_eq!(slug("Fast_path — 2×"), "fast_path--2");
    }

    /// The workspace itself passes.
    #[test]
    fn the_docs_name_only_what_exists() {
        check().unwrap();
    }
}
