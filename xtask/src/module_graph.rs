//! The graph of a crate's file-level modules: an edge A → B when A's code names an item
//! that B defines, found by resolving paths the way rustc does (through `crate::`, `super::`,
//! `self::`, child modules, and every `use`, re-exports included, to the defining module).
//!
//! Declaring a module (`mod x;`) is not an edge, and neither is a re-export (`pub use x::Y;`)
//! by itself: a `mod.rs` or `lib.rs` that only declares and re-exports its children depends on
//! none of them, and a child naming `crate::Y` depends on `x`, not on the root. A module using
//! an item of its parent's *own* (defined there) does depend on the parent. Inline modules
//! count as part of their file. Names that resolve outside the crate are not edges, and code
//! under `#[cfg(test)]` is left out (tests may drive a low module through a high one).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::module_tree::{Module, Tree};

/// Where a path resolves.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    Module(usize),
    /// An item defined in this module.
    Item(usize),
}

/// Where an edge comes from in the source.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Site {
    pub(crate) file: PathBuf,
    pub(crate) line: usize,
}

/// Edges between file-level modules (indices into the tree), each with the first site that
/// makes it.
pub(crate) type Edges = BTreeMap<(usize, usize), Site>;

/// Resolution through chains of re-exports and globs stops at this depth (a cycle of globs
/// would otherwise recurse forever; rustc rejects real import cycles).
const MAX_DEPTH: usize = 32;

/// The module graph's edges.
pub(crate) fn edges(tree: &Tree) -> Edges {
    let mut edges = Edges::new();
    for (id, module) in tree.modules.iter().enumerate() {
        let from = module.file_module;
        let mut add = |target: Option<Target>, line: usize| {
            if let Some(Target::Item(defining)) = target {
                let to = tree.modules[defining].file_module;
                if to != from {
                    edges.entry((from, to)).or_insert_with(|| Site {
                        file: module.file.clone(),
                        line,
                    });
                }
            }
        };
        for import in module.imports.iter().filter(|i| !i.reexport && !i.glob) {
            add(resolve(tree, id, &import.path, 0), import.line);
        }
        for r in &module.refs {
            add(resolve(tree, id, &r.path, 0), r.line);
        }
    }
    edges
}

/// Resolves a path written in module `from`.
fn resolve(tree: &Tree, from: usize, path: &[String], depth: usize) -> Option<Target> {
    if depth > MAX_DEPTH {
        return None;
    }
    let (first, rest) = path.split_first()?;
    let (mut current, rest) = match first.as_str() {
        "crate" => (0, rest),
        "self" => (from, rest),
        "super" => {
            let mut current = tree.modules[from].parent?;
            let mut rest = rest;
            while let Some((next, tail)) = rest.split_first() {
                if next != "super" {
                    break;
                }
                current = tree.modules[current].parent?;
                rest = tail;
            }
            (current, rest)
        }
        "Self" => return None,
        name => match member(tree, from, name, !rest.is_empty(), depth)? {
            Target::Item(defining) => return Some(Target::Item(defining)),
            Target::Module(child) => (child, rest),
        },
    };
    for (i, segment) in rest.iter().enumerate() {
        let more = i + 1 < rest.len();
        match member(tree, current, segment, more, depth)? {
            // What follows an item (a variant, an associated item) belongs to it.
            Target::Item(defining) => return Some(Target::Item(defining)),
            Target::Module(child) => current = child,
        }
    }
    Some(Target::Module(current))
}

/// Looks `name` up among the members of `module`: its children, its own items, and the
/// names its `use` declarations bring in (private ones too: they are visible to the
/// module's descendants). `more` says a path continues after the name, which prefers a
/// module over a function of the same name.
fn member(tree: &Tree, module: usize, name: &str, more: bool, depth: usize) -> Option<Target> {
    let m: &Module = &tree.modules[module];
    let child = m.children.get(name).map(|&c| Target::Module(c));
    if more && child.is_some() {
        return child;
    }
    if m.items.contains(name) {
        return Some(Target::Item(module));
    }
    if child.is_some() {
        return child;
    }
    for import in m.imports.iter().filter(|i| i.name.as_deref() == Some(name)) {
        if let Some(target) = resolve(tree, module, &import.path, depth + 1) {
            return Some(target);
        }
    }
    for import in m.imports.iter().filter(|i| i.glob) {
        if let Some(Target::Module(source)) = resolve(tree, module, &import.path, depth + 1)
            && let Some(target) = member(tree, source, name, more, depth + 1)
        {
            return Some(target);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::module_tree::load;

    /// The edges of a crate given as (file, source) pairs, as "from -> to @ file:line".
    pub(crate) fn edge_list(files: &[(&str, &str)]) -> Vec<String> {
        let files: BTreeMap<PathBuf, String> = files
            .iter()
            .map(|(p, s)| (PathBuf::from(p), (*s).to_owned()))
            .collect();
        let tree = load(&|p: &Path| files.get(p).cloned(), Path::new("src/lib.rs")).unwrap();
        edges(&tree)
            .iter()
            .map(|((a, b), site)| {
                format!(
                    "{} -> {} @ {}:{}",
                    tree.modules[*a].name(),
                    tree.modules[*b].name(),
                    site.file.display(),
                    site.line
                )
            })
            .collect()
    }

    #[test]
    fn a_name_re_exported_by_lib_rs_resolves_to_its_definer() {
        let edges = edge_list(&[
            ("src/lib.rs", "mod a; mod b;\npub use b::Thing;"),
            ("src/a.rs", "use crate::Thing;"),
            ("src/b.rs", "pub struct Thing;"),
        ]);
        assert_eq!(edges, ["a -> b @ src/a.rs:1"]);
    }

    #[test]
    fn chains_of_re_exports_and_globs_are_followed() {
        let edges = edge_list(&[
            ("src/lib.rs", "mod a; mod b;\npub use b::*;"),
            ("src/a.rs", "fn f(_: crate::Deep) {}"),
            ("src/b/mod.rs", "mod c;\npub(crate) use c::Deep as Deep;"),
            ("src/b/c.rs", "pub struct Deep;"),
        ]);
        assert_eq!(edges, ["a -> b::c @ src/a.rs:1"]);
    }

    #[test]
    fn super_and_self_and_use_groups_resolve() {
        let edges = edge_list(&[
            ("src/lib.rs", "mod a; mod b; mod c;"),
            (
                "src/a.rs",
                "use crate::{b, c::{self}};\nfn f() { b::g(); c::K; }",
            ),
            (
                "src/b.rs",
                "pub fn g() {}\nfn h() { self::g(); super::c::K; }",
            ),
            ("src/c.rs", "pub const K: u8 = 0;"),
        ]);
        assert_eq!(
            edges,
            [
                "a -> b @ src/a.rs:2",
                "a -> c @ src/a.rs:2",
                "b -> c @ src/b.rs:2"
            ]
        );
    }

    #[test]
    fn a_parent_that_only_declares_and_re_exports_has_no_edges() {
        let edges = edge_list(&[
            ("src/lib.rs", "pub mod p;"),
            (
                "src/p/mod.rs",
                "mod x; mod y;\npub use x::X;\npub use y::Y;",
            ),
            ("src/p/x.rs", "pub struct X;"),
            ("src/p/y.rs", "pub struct Y(pub super::X);"),
        ]);
        assert_eq!(edges, ["p::y -> p::x @ src/p/y.rs:1"]);
    }

    #[test]
    fn a_re_export_the_parent_also_uses_is_an_edge() {
        let edges = edge_list(&[
            (
                "src/lib.rs",
                "mod x;\npub use x::X;\npub fn make() -> X { X }",
            ),
            ("src/x.rs", "pub struct X;"),
        ]);
        assert_eq!(edges, ["crate -> x @ src/lib.rs:3"]);
    }

    #[test]
    fn using_a_parents_own_item_is_an_edge_to_it() {
        let edges = edge_list(&[
            ("src/lib.rs", "mod child;\npub struct Shared;"),
            ("src/child.rs", "use super::*;\nfn f(_: Shared) {}"),
        ]);
        assert_eq!(edges, ["child -> crate @ src/child.rs:2"]);
    }

    #[test]
    fn inline_modules_belong_to_their_file() {
        let edges = edge_list(&[
            ("src/lib.rs", "mod a; mod b;"),
            (
                "src/a.rs",
                "pub struct A;\nmod inner {\n    use super::*;\n    fn f(_: A, _: crate::b::B) {}\n}",
            ),
            ("src/b.rs", "pub struct B;"),
        ]);
        assert_eq!(edges, ["a -> b @ src/a.rs:4"]);
    }

    #[test]
    fn names_from_other_crates_are_not_edges() {
        let edges = edge_list(&[
            (
                "src/lib.rs",
                "mod a; mod b;\npub use other_crate::session;\npub use other_crate::Store;\n\
                 pub mod runs {\n    pub use other_crate::runs::*;\n}",
            ),
            (
                "src/a.rs",
                "use crate::Store;\nfn f(_: crate::session::S, _: crate::runs::R) -> crate::b::B {}",
            ),
            ("src/b.rs", "pub struct B;"),
        ]);
        assert_eq!(edges, ["a -> b @ src/a.rs:2"]);
    }
}
