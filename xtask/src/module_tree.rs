//! A crate's module tree as the module-cycle check needs it: for each module, the items it
//! defines, the `use` declarations it holds, and the paths its code names. Files are read
//! through a callback, so tests can give a crate as a map of sources.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{Spacing, TokenStream, TokenTree};
use syn::visit::{self, Visit};

/// A module of the crate: one file, or an inline `mod x { … }` within one.
#[derive(Debug)]
pub(crate) struct Module {
    /// Segments from the crate root (empty for the root).
    pub(crate) path: Vec<String>,
    pub(crate) parent: Option<usize>,
    /// The file-level module this one belongs to: itself for a file, the enclosing file's
    /// module for an inline one.
    pub(crate) file_module: usize,
    /// The source file, as given to the loader.
    pub(crate) file: PathBuf,
    pub(crate) children: BTreeMap<String, usize>,
    /// Names of the items defined here (types, functions, traits, constants, statics).
    pub(crate) items: BTreeSet<String>,
    pub(crate) imports: Vec<Import>,
    /// Paths named by the code of this module (outside its `use` declarations).
    pub(crate) refs: Vec<Ref>,
}

impl Module {
    /// The module's path as written in Rust (`crate` for the root).
    pub(crate) fn name(&self) -> String {
        if self.path.is_empty() {
            "crate".to_owned()
        } else {
            self.path.join("::")
        }
    }
}

/// One name a `use` declaration brings in.
#[derive(Debug)]
pub(crate) struct Import {
    /// The name bound (`None` for `as _` and for globs).
    pub(crate) name: Option<String>,
    /// The path imported; for a glob, the path before `::*`.
    pub(crate) path: Vec<String>,
    pub(crate) glob: bool,
    /// The declaration has a visibility (`pub`, `pub(crate)`, …): a re-export, which by
    /// itself uses nothing.
    pub(crate) reexport: bool,
    pub(crate) line: usize,
}

/// A path named by code.
#[derive(Debug)]
pub(crate) struct Ref {
    pub(crate) path: Vec<String>,
    pub(crate) line: usize,
}

/// A crate's modules; index 0 is the root.
#[derive(Debug)]
pub(crate) struct Tree {
    pub(crate) modules: Vec<Module>,
}

/// Reads a source file; `None` when it does not exist.
pub(crate) type Read<'a> = &'a dyn Fn(&Path) -> Option<String>;

/// Loads the crate whose root file is `root` (its `lib.rs`), following `mod x;` to
/// `x.rs` or `x/mod.rs` and `#[path = "…"]` attributes.
pub(crate) fn load(read: Read<'_>, root: &Path) -> Result<Tree, String> {
    let mut tree = Tree {
        modules: Vec::new(),
    };
    let dir = root.parent().unwrap_or(Path::new("")).to_path_buf();
    load_file(&mut tree, read, root, Vec::new(), None, dir)?;
    Ok(tree)
}

fn new_module(
    tree: &mut Tree,
    path: Vec<String>,
    parent: Option<usize>,
    file: &Path,
    inline_in: Option<usize>,
) -> usize {
    let id = tree.modules.len();
    tree.modules.push(Module {
        path,
        parent,
        file_module: inline_in.map_or(id, |m| tree.modules[m].file_module),
        file: file.to_path_buf(),
        children: BTreeMap::new(),
        items: BTreeSet::new(),
        imports: Vec::new(),
        refs: Vec::new(),
    });
    if let (Some(parent), Some(name)) = (parent, tree.modules[id].path.last().cloned()) {
        tree.modules[parent].children.insert(name, id);
    }
    id
}

/// Loads one file as a module; `child_dir` is where its `mod x;` children live.
fn load_file(
    tree: &mut Tree,
    read: Read<'_>,
    file: &Path,
    path: Vec<String>,
    parent: Option<usize>,
    child_dir: PathBuf,
) -> Result<usize, String> {
    let source = read(file).ok_or_else(|| format!("cannot read {}", file.display()))?;
    let parsed =
        syn::parse_file(&source).map_err(|err| format!("{}: {err}", describe(file, &err)))?;
    let id = new_module(tree, path, parent, file, None);
    load_items(tree, read, id, &parsed.items, &child_dir)?;
    Ok(id)
}

fn describe(file: &Path, err: &syn::Error) -> String {
    let start = err.span().start();
    format!("{}:{}:{}", file.display(), start.line, start.column + 1)
}

fn load_items(
    tree: &mut Tree,
    read: Read<'_>,
    id: usize,
    items: &[syn::Item],
    child_dir: &Path,
) -> Result<(), String> {
    for item in items {
        if item_attrs(item).is_some_and(test_only) {
            continue;
        }
        match item {
            syn::Item::Mod(m) => load_mod(tree, read, id, m, child_dir)?,
            syn::Item::Use(u) => {
                let reexport = !matches!(u.vis, syn::Visibility::Inherited);
                let line = u.use_token.span.start().line;
                flatten_use(
                    &u.tree,
                    &mut Vec::new(),
                    reexport,
                    line,
                    &mut tree.modules[id].imports,
                );
            }
            other => {
                if let Some(name) = item_name(other) {
                    tree.modules[id].items.insert(name);
                }
                let mut collector = Collector {
                    module: &mut tree.modules[id],
                };
                collector.visit_item(other);
            }
        }
    }
    Ok(())
}

fn load_mod(
    tree: &mut Tree,
    read: Read<'_>,
    parent: usize,
    m: &syn::ItemMod,
    child_dir: &Path,
) -> Result<(), String> {
    let name = m.ident.to_string();
    let mut path = tree.modules[parent].path.clone();
    path.push(name.clone());
    let explicit = path_attribute(&m.attrs);
    match &m.content {
        Some((_, items)) => {
            let file = tree.modules[parent].file.clone();
            let id = new_module(tree, path, Some(parent), &file, Some(parent));
            let dir = match explicit {
                Some(p) => child_dir.join(p),
                None => child_dir.join(&name),
            };
            load_items(tree, read, id, items, &dir)
        }
        None => {
            let (file, dir) = match explicit {
                Some(p) => {
                    // Beside the declaring file when it declares the module itself; under
                    // the inline module's folder when an inline module does.
                    let parent_module = &tree.modules[parent];
                    let base = if parent_module.file_module == parent {
                        parent_module.file.parent().unwrap_or(Path::new(""))
                    } else {
                        child_dir
                    };
                    let file = base.join(p);
                    // A file named by `#[path]` keeps its children beside it, as a `mod.rs`.
                    let dir = file.parent().unwrap_or(Path::new("")).to_path_buf();
                    (file, dir)
                }
                None => {
                    let flat = child_dir.join(format!("{name}.rs"));
                    let nested = child_dir.join(&name).join("mod.rs");
                    let file = if read(&flat).is_some() { flat } else { nested };
                    (file, child_dir.join(&name))
                }
            };
            load_file(tree, read, &file, path, Some(parent), dir).map(|_| ())
        }
    }
}

fn path_attribute(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| {
        if !attr.path().is_ident("path") {
            return None;
        }
        match &attr.meta {
            syn::Meta::NameValue(nv) => match &nv.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(s),
                    ..
                }) => Some(s.value()),
                _ => None,
            },
            _ => None,
        }
    })
}

fn item_attrs(item: &syn::Item) -> Option<&[syn::Attribute]> {
    Some(match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::ExternCrate(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::ForeignMod(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::TraitAlias(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => return None,
    })
}

/// `#[cfg(test)]` or `#[cfg(all(test, …))]`: code only the crate's own tests compile. Tests
/// may use the crate from above (an `Agent` to drive a low module), which is no cycle of the
/// modules themselves.
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        if !attr.path().is_ident("cfg") {
            return false;
        }
        let Ok(list) = attr.meta.require_list() else {
            return false;
        };
        let tokens: Vec<TokenTree> = list.tokens.clone().into_iter().collect();
        match tokens.as_slice() {
            [TokenTree::Ident(i)] => i == "test",
            [TokenTree::Ident(all), TokenTree::Group(g)] if all == "all" => g
                .stream()
                .into_iter()
                .any(|t| matches!(&t, TokenTree::Ident(i) if i == "test")),
            _ => false,
        }
    })
}

/// The name an item defines in its module's type or value namespace.
fn item_name(item: &syn::Item) -> Option<String> {
    let ident = match item {
        syn::Item::Const(i) => &i.ident,
        syn::Item::Enum(i) => &i.ident,
        syn::Item::Fn(i) => &i.sig.ident,
        syn::Item::Static(i) => &i.ident,
        syn::Item::Struct(i) => &i.ident,
        syn::Item::Trait(i) => &i.ident,
        syn::Item::TraitAlias(i) => &i.ident,
        syn::Item::Type(i) => &i.ident,
        syn::Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

/// Turns a use tree into one import per name bound.
fn flatten_use(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    reexport: bool,
    line: usize,
    out: &mut Vec<Import>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten_use(&p.tree, prefix, reexport, line, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let ident = n.ident.to_string();
            // `use a::{self}` binds `a`.
            let (name, path) = if ident == "self" {
                (prefix.last().cloned(), prefix.clone())
            } else {
                let mut path = prefix.clone();
                path.push(ident.clone());
                (Some(ident), path)
            };
            out.push(Import {
                name,
                path,
                glob: false,
                reexport,
                line,
            });
        }
        syn::UseTree::Rename(r) => {
            let ident = r.ident.to_string();
            let mut path = prefix.clone();
            if ident != "self" {
                path.push(ident);
            }
            let rename = r.rename.to_string();
            out.push(Import {
                name: (rename != "_").then_some(rename),
                path,
                glob: false,
                reexport,
                line,
            });
        }
        syn::UseTree::Glob(_) => out.push(Import {
            name: None,
            path: prefix.clone(),
            glob: true,
            reexport,
            line,
        }),
        syn::UseTree::Group(g) => {
            for tree in &g.items {
                flatten_use(tree, prefix, reexport, line, out);
            }
        }
    }
}

/// Collects the paths an item's code names, and the `use` declarations inside its blocks
/// (counted as private imports of the module).
struct Collector<'m> {
    module: &'m mut Module,
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            if let Some(first) = path.segments.first() {
                self.module.refs.push(Ref {
                    path: segments,
                    line: first.ident.span().start().line,
                });
            }
        }
        visit::visit_path(self, path);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let line = u.use_token.span.start().line;
        flatten_use(
            &u.tree,
            &mut Vec::new(),
            false,
            line,
            &mut self.module.imports,
        );
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.visit_path(&mac.path);
        macro_paths(mac.tokens.clone(), &mut self.module.refs);
    }
}

/// Paths in a macro's tokens: every `a::b::c` sequence, and single names that start with a
/// capital (types, variants, constants); single lower-case names are mostly local variables.
fn macro_paths(tokens: TokenStream, out: &mut Vec<Ref>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            TokenTree::Group(g) => {
                macro_paths(g.stream(), out);
                i += 1;
            }
            TokenTree::Ident(ident) => {
                let after_dot =
                    i > 0 && matches!(&tokens[i - 1], TokenTree::Punct(p) if p.as_char() == '.');
                let after_colons = i > 1 && is_path_sep(&tokens[i - 2], &tokens[i - 1]);
                let mut segments = vec![ident.to_string()];
                let line = ident.span().start().line;
                let mut j = i + 1;
                while j + 1 < tokens.len() {
                    if !is_path_sep(&tokens[j], &tokens[j + 1]) {
                        break;
                    }
                    match tokens.get(j + 2) {
                        Some(TokenTree::Ident(next)) => {
                            segments.push(next.to_string());
                            j += 3;
                        }
                        _ => break,
                    }
                }
                let capital = segments[0].starts_with(|c: char| c.is_ascii_uppercase());
                if !after_dot && !after_colons && (segments.len() > 1 || capital) {
                    out.push(Ref {
                        path: segments,
                        line,
                    });
                }
                i = j.max(i + 1);
            }
            TokenTree::Punct(_) | TokenTree::Literal(_) => i += 1,
        }
    }
}

fn is_path_sep(a: &TokenTree, b: &TokenTree) -> bool {
    matches!((a, b), (TokenTree::Punct(x), TokenTree::Punct(y))
        if x.as_char() == ':' && x.spacing() == Spacing::Joint && y.as_char() == ':')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> Tree {
        let files: BTreeMap<PathBuf, String> = files
            .iter()
            .map(|(p, s)| (PathBuf::from(p), (*s).to_owned()))
            .collect();
        load(&|p: &Path| files.get(p).cloned(), Path::new("src/lib.rs")).unwrap()
    }

    #[test]
    fn file_modules_nest_as_rust_finds_them() {
        let t = tree(&[
            ("src/lib.rs", "mod a; mod b; mod c { mod d; }"),
            ("src/a.rs", "mod inner;\n#[path = \"beside.rs\"] mod e;"),
            ("src/a/inner.rs", "pub struct S;"),
            ("src/beside.rs", ""),
            ("src/b/mod.rs", "#[path = \"other.rs\"] mod x;"),
            ("src/b/other.rs", "fn f() {}"),
            ("src/c/d.rs", ""),
        ]);
        let names: Vec<String> = t.modules.iter().map(Module::name).collect();
        assert_eq!(
            names,
            ["crate", "a", "a::inner", "a::e", "b", "b::x", "c", "c::d"]
        );
        assert_eq!(t.modules[3].file, Path::new("src/beside.rs"));
        assert!(t.modules[2].items.contains("S"));
        assert!(t.modules[5].items.contains("f"));
        // The inline module `c` belongs to lib.rs; `c::d` is a file of its own.
        assert_eq!(t.modules[6].file_module, 0);
        assert_eq!(t.modules[7].file_module, 7);
    }

    #[test]
    fn test_only_code_is_left_out() {
        let t = tree(&[(
            "src/lib.rs",
            "#[cfg(test)]\nmod tests;\n#[cfg(all(test, unix))]\nuse crate::a::B;\n\
             #[cfg(test)]\nfn helper() -> crate::a::C { todo!() }\n\
             #[cfg(not(test))]\nfn real() -> crate::a::D { todo!() }",
        )]);
        assert_eq!(
            t.modules.len(),
            1,
            "the test module's file is not even read"
        );
        assert!(t.modules[0].imports.is_empty());
        let refs: Vec<String> = t.modules[0]
            .refs
            .iter()
            .map(|r| r.path.join("::"))
            .collect();
        assert!(refs.contains(&"crate::a::D".to_owned()), "{refs:?}");
        assert!(!refs.contains(&"crate::a::C".to_owned()), "{refs:?}");
        assert!(!t.modules[0].items.contains("helper"));
    }

    #[test]
    fn a_missing_module_file_is_an_error() {
        let files = [(PathBuf::from("src/lib.rs"), "mod gone;".to_owned())];
        let files: BTreeMap<_, _> = files.into_iter().collect();
        let err = load(&|p: &Path| files.get(p).cloned(), Path::new("src/lib.rs")).unwrap_err();
        assert!(err.contains("src/gone/mod.rs"), "{err}");
    }

    #[test]
    fn use_groups_renames_and_globs_flatten() {
        let t = tree(&[(
            "src/lib.rs",
            "pub use crate::{a::{self, X as Y}, b::*};\nuse c::Z as _;",
        )]);
        let imports: Vec<(Option<&str>, String, bool, bool)> = t.modules[0]
            .imports
            .iter()
            .map(|i| (i.name.as_deref(), i.path.join("::"), i.glob, i.reexport))
            .collect();
        assert_eq!(
            imports,
            [
                (Some("a"), "crate::a".to_owned(), false, true),
                (Some("Y"), "crate::a::X".to_owned(), false, true),
                (None, "crate::b".to_owned(), true, true),
                (None, "c::Z".to_owned(), false, false),
            ]
        );
        assert_eq!(t.modules[0].imports[3].line, 2);
    }

    #[test]
    fn code_paths_and_macro_paths_are_collected() {
        let t = tree(&[(
            "src/lib.rs",
            "fn f() -> crate::a::T {\n    let v = vec![super::b::C, Upper, lower, x.Field];\n    \
             use d::E;\n    todo!()\n}",
        )]);
        let refs: Vec<String> = t.modules[0]
            .refs
            .iter()
            .map(|r| r.path.join("::"))
            .collect();
        for expected in ["crate::a::T", "super::b::C", "Upper"] {
            assert!(
                refs.contains(&expected.to_owned()),
                "{expected} in {refs:?}"
            );
        }
        assert!(!refs.contains(&"lower".to_owned()));
        assert!(!refs.contains(&"Field".to_owned()));
        assert_eq!(t.modules[0].imports[0].path, ["d", "E"]);
    }
}
