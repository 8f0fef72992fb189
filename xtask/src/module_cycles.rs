//! The module-cycle check: within each crate, no file-level modules depend on each other in
//! a circle. Cycles are the strongly connected components (Tarjan) of the graph that
//! [`crate::module_graph`] builds.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use crate::module_graph::{Edges, edges};
use crate::module_tree::{Tree, load};

/// A cycle: its modules, and one shortest circle through the first of them with the site of
/// each edge (the last edge closes it).
#[derive(Debug)]
pub(crate) struct Cycle {
    pub(crate) modules: Vec<String>,
    /// `from -> to (file:line)`, in order around the circle.
    pub(crate) circle: Vec<String>,
}

impl Cycle {
    /// The cycle as lines of a report.
    pub(crate) fn describe(&self, crate_name: &str) -> String {
        format!(
            "{crate_name}: cycle of {} modules: {}\n    for example: {}\n    closed by {}",
            self.modules.len(),
            self.modules.join(", "),
            self.circle.join(", "),
            self.circle.last().map_or("", String::as_str)
        )
    }
}

/// The cycles among the file-level modules of `tree`: each strongly connected component of
/// more than one module.
fn cycles(tree: &Tree, edges: &Edges) -> Vec<Cycle> {
    let mut adjacency: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &(a, b) in edges.keys() {
        adjacency.entry(a).or_default().push(b);
    }
    let nodes: Vec<usize> = (0..tree.modules.len())
        .filter(|&m| tree.modules[m].file_module == m)
        .collect();
    strongly_connected(&nodes, &adjacency)
        .into_iter()
        .filter(|component| component.len() > 1)
        .filter_map(|component| {
            let mut names: Vec<String> =
                component.iter().map(|&m| tree.modules[m].name()).collect();
            names.sort();
            let &start = component.iter().min_by_key(|&&m| tree.modules[m].name())?;
            let members: BTreeSet<usize> = component.iter().copied().collect();
            let circle = shortest_circle(start, &members, &adjacency)
                .windows(2)
                .filter_map(|pair| {
                    let site = edges.get(&(pair[0], pair[1]))?;
                    Some(format!(
                        "{} -> {} ({}:{})",
                        tree.modules[pair[0]].name(),
                        tree.modules[pair[1]].name(),
                        site.file.display(),
                        site.line
                    ))
                })
                .collect();
            Some(Cycle {
                modules: names,
                circle,
            })
        })
        .collect()
}

/// The nodes of a shortest circle from `start` back to it within `members`, `start` first
/// and last.
fn shortest_circle(
    start: usize,
    members: &BTreeSet<usize>,
    adjacency: &BTreeMap<usize, Vec<usize>>,
) -> Vec<usize> {
    let mut previous: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for &next in adjacency.get(&node).into_iter().flatten() {
            if !members.contains(&next) {
                continue;
            }
            if next == start {
                let mut path = vec![start, node];
                let mut at = node;
                while at != start {
                    at = previous[&at];
                    path.push(at);
                }
                path.reverse();
                return path;
            }
            if let std::collections::btree_map::Entry::Vacant(e) = previous.entry(next) {
                e.insert(node);
                queue.push_back(next);
            }
        }
    }
    vec![start]
}

/// Tarjan's algorithm: the strongly connected components of the graph.
fn strongly_connected(nodes: &[usize], adjacency: &BTreeMap<usize, Vec<usize>>) -> Vec<Vec<usize>> {
    struct State<'a> {
        adjacency: &'a BTreeMap<usize, Vec<usize>>,
        index: BTreeMap<usize, usize>,
        low: BTreeMap<usize, usize>,
        stack: Vec<usize>,
        on_stack: BTreeSet<usize>,
        components: Vec<Vec<usize>>,
    }
    fn visit(state: &mut State<'_>, node: usize) {
        let index = state.index.len();
        state.index.insert(node, index);
        state.low.insert(node, index);
        state.stack.push(node);
        state.on_stack.insert(node);
        for &next in state.adjacency.get(&node).into_iter().flatten() {
            if !state.index.contains_key(&next) {
                visit(state, next);
                let low = state.low[&node].min(state.low[&next]);
                state.low.insert(node, low);
            } else if state.on_stack.contains(&next) {
                let low = state.low[&node].min(state.index[&next]);
                state.low.insert(node, low);
            }
        }
        if state.low[&node] == state.index[&node] {
            let mut component = Vec::new();
            while let Some(member) = state.stack.pop() {
                state.on_stack.remove(&member);
                component.push(member);
                if member == node {
                    break;
                }
            }
            state.components.push(component);
        }
    }
    let mut state = State {
        adjacency,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for &node in nodes {
        if !state.index.contains_key(&node) {
            visit(&mut state, node);
        }
    }
    state.components
}

/// Runs the check on crates given as (name, directory relative to `root`): `Ok` with a
/// summary line, or every cycle found.
pub(crate) fn run(root: &Path, crates: &[(String, PathBuf)]) -> Result<String, String> {
    let read = |p: &Path| std::fs::read_to_string(root.join(p)).ok();
    let mut report = Vec::new();
    let mut modules = 0;
    for (name, dir) in crates {
        let tree = load(&read, &dir.join("src/lib.rs"))?;
        modules += (0..tree.modules.len())
            .filter(|&m| tree.modules[m].file_module == m)
            .count();
        for cycle in cycles(&tree, &edges(&tree)) {
            report.push(cycle.describe(name));
        }
    }
    if report.is_empty() {
        Ok(format!(
            "module cycles: none in {} crates ({modules} file modules)",
            crates.len()
        ))
    } else {
        Err(format!(
            "module cycles ({}):\n  {}",
            report.len(),
            report.join("\n  ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cycles of the crate whose root file is `root`.
    fn crate_cycles(read: crate::module_tree::Read<'_>, root: &Path) -> Result<Vec<Cycle>, String> {
        let tree = load(read, root)?;
        let edges = edges(&tree);
        Ok(cycles(&tree, &edges))
    }

    fn cycles_of(files: &[(&str, &str)]) -> Vec<Cycle> {
        let files: BTreeMap<PathBuf, String> = files
            .iter()
            .map(|(p, s)| (PathBuf::from(p), (*s).to_owned()))
            .collect();
        crate_cycles(&|p: &Path| files.get(p).cloned(), Path::new("src/lib.rs")).unwrap()
    }

    #[test]
    fn a_cycle_through_a_lib_rs_re_export_is_found() {
        let found = cycles_of(&[
            (
                "src/lib.rs",
                "mod error; mod builder;\npub use builder::BuildError;\npub use error::LoopError;",
            ),
            (
                "src/error.rs",
                "use crate::BuildError;\npub enum LoopError { Agent(BuildError) }",
            ),
            (
                "src/builder.rs",
                "pub struct BuildError;\n\nfn build() -> Result<(), crate::LoopError> { todo!() }",
            ),
        ]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].modules, ["builder", "error"]);
        assert_eq!(
            found[0].circle,
            [
                "builder -> error (src/builder.rs:3)",
                "error -> builder (src/error.rs:1)"
            ]
        );
        let text = found[0].describe("demo");
        assert!(
            text.contains("demo: cycle of 2 modules: builder, error"),
            "{text}"
        );
        assert!(
            text.contains("closed by error -> builder (src/error.rs:1)"),
            "{text}"
        );
    }

    #[test]
    fn a_parent_mod_rs_re_exporting_its_children_is_not_a_cycle() {
        let found = cycles_of(&[
            ("src/lib.rs", "pub mod p;\npub use p::{X, Y};"),
            (
                "src/p/mod.rs",
                "mod x; mod y;\npub use x::X;\npub use y::*;",
            ),
            ("src/p/x.rs", "pub struct X;\nfn f(_: crate::Y) {}"),
            ("src/p/y.rs", "pub struct Y;"),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_child_using_its_parents_own_item_while_the_parent_uses_it_is_a_cycle() {
        let found = cycles_of(&[
            (
                "src/lib.rs",
                "mod child;\npub struct Shared;\nfn f() { child::g() }",
            ),
            ("src/child.rs", "pub fn g() { let _ = super::Shared; }"),
        ]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].modules, ["child", "crate"]);
    }

    #[test]
    fn a_three_module_cycle_through_cousins_is_one_component() {
        let found = cycles_of(&[
            ("src/lib.rs", "mod a; mod b; mod leaf;"),
            ("src/a/mod.rs", "mod x;"),
            ("src/a/x.rs", "pub struct X(crate::b::y::Y);"),
            ("src/b/mod.rs", "pub mod y;"),
            ("src/b/y.rs", "pub struct Y(Box<crate::leaf::L>);"),
            (
                "src/leaf.rs",
                "pub struct L(Box<crate::a::x::X>);\npub struct M;",
            ),
        ]);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].modules, ["a::x", "b::y", "leaf"]);
        assert_eq!(found[0].circle.len(), 3);
    }

    #[test]
    fn a_chain_is_not_a_cycle() {
        let found = cycles_of(&[
            ("src/lib.rs", "mod a; mod b; mod c;"),
            ("src/a.rs", "use crate::b::B; pub struct A(B);"),
            ("src/b.rs", "use crate::c::C; pub struct B(C);"),
            ("src/c.rs", "pub struct C;"),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }
}
