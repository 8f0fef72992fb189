//! The layering check: every dependency between mux crates points strictly downward. Crates
//! at one level are siblings: neither may depend on the other. Within each crate, no modules
//! depend on each other in a cycle ([`crate::module_cycles`]).

use std::path::{Path, PathBuf};

use crate::cargo::workspace_root;
use crate::metadata::{self, Package, is_library_crate};
use crate::module_cycles;

/// The layers, bottom first; the crates of one layer are siblings. The facade sits above
/// everything and may depend on all of them.
pub(crate) const LAYERS: &[&[&str]] = &[
    // Test helpers: no mux dependency, so any crate may dev-depend on them.
    &["mux-testkit"],
    // The base: mux-tool, mux-http (the door every HTTP server of mux shares), mux-macros.
    &["mux-tool", "mux-http", "mux-macros"],
    &["mux-llm"],
    // Permissions, and the stores of sessions and runs: siblings over mux-llm.
    &["mux-permission", "mux-store"],
    &["mux-mcp"],
    &["mux-orchestrator"],
    // The faces beside the agents: none depends on another.
    &[
        "mux-agents",
        "mux-acp",
        "mux-web",
        "mux-a2a",
        "mux-mcp-face",
    ],
    // Engines: evals, and agents on Temporal; over the loop and the agents, below nothing but
    // the facade.
    &["mux-eval", "mux-temporal"],
    &["mux"],
];

fn rank(name: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&name))
}

/// Runs the check on this workspace.
pub(crate) fn run() -> Result<(), String> {
    let packages = metadata::load()?;
    let problems = violations(&packages);
    let crates: Vec<(String, PathBuf)> = packages
        .iter()
        .filter(|p| is_library_crate(p))
        .map(|p| {
            let dir = Path::new(&p.manifest).parent().unwrap_or(Path::new(""));
            (p.name.clone(), dir.to_path_buf())
        })
        .collect();
    let cycles = module_cycles::run(&workspace_root(), &crates);
    match (problems.is_empty(), cycles) {
        (true, Ok(summary)) => {
            eprintln!(
                "layering: {} crates, every mux dependency points downward",
                crates.len()
            );
            eprintln!("layering: {summary}");
            Ok(())
        }
        (true, Err(cycles)) => Err(cycles),
        (false, cycles) => {
            let mut message = format!("layering violations:\n  {}", problems.join("\n  "));
            if let Err(cycles) = cycles {
                message.push('\n');
                message.push_str(&cycles);
            }
            Err(message)
        }
    }
}

/// Every violation, as a sentence. Dev- and build-dependencies count like normal ones.
pub(crate) fn violations(packages: &[Package]) -> Vec<String> {
    let mut problems = Vec::new();
    for package in packages.iter().filter(|p| is_library_crate(p)) {
        let Some(own) = rank(&package.name) else {
            problems.push(format!(
                "crate `{}` ({}) has no layer; add it to xtask's LAYERS",
                package.name, package.manifest
            ));
            continue;
        };
        for dep in &package.dependencies {
            if !(dep.name == "mux" || dep.name.starts_with("mux-")) {
                continue;
            }
            match rank(&dep.name) {
                None => problems.push(format!(
                    "`{}` depends on `{}`, which is not a library layer",
                    package.name, dep.name
                )),
                Some(theirs) if theirs >= own => problems.push(format!(
                    "`{}` (layer {}) has a {} dependency on `{}` (layer {}); dependencies must point strictly downward",
                    package.name,
                    own + 1,
                    dep.kind,
                    dep.name,
                    theirs + 1
                )),
                Some(_) => {}
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::parse;

    fn workspace(packages: &str) -> Vec<Package> {
        parse(&format!(
            r#"{{"workspace_root": "/w", "packages": [{packages}]}}"#
        ))
        .unwrap()
    }

    fn pkg(name: &str, deps: &[(&str, &str)]) -> String {
        let deps: Vec<String> = deps
            .iter()
            .map(|(d, kind)| {
                let kind = if *kind == "normal" {
                    "null".to_owned()
                } else {
                    format!("\"{kind}\"")
                };
                format!(r#"{{"name": "{d}", "kind": {kind}}}"#)
            })
            .collect();
        format!(
            r#"{{"name": "{name}", "manifest_path": "/w/crates/{name}/Cargo.toml", "features": {{}}, "dependencies": [{}]}}"#,
            deps.join(",")
        )
    }

    #[test]
    fn downward_dependencies_pass() {
        let ws = workspace(
            &[
                pkg("mux-tool", &[("serde", "normal")]),
                pkg("mux-llm", &[("mux-tool", "normal")]),
                pkg("mux", &[("mux-llm", "normal"), ("mux-tool", "normal")]),
            ]
            .join(","),
        );
        assert_eq!(violations(&ws), Vec::<String>::new());
    }

    #[test]
    fn an_upward_dependency_fails() {
        let ws = workspace(&pkg("mux-tool", &[("mux-llm", "normal")]));
        let problems = violations(&ws);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].contains("`mux-tool` (layer 2)"),
            "{}",
            problems[0]
        );
    }

    #[test]
    fn an_upward_dev_dependency_fails_too() {
        let ws = workspace(&pkg("mux-llm", &[("mux-permission", "dev")]));
        assert!(violations(&ws)[0].contains("dev dependency on `mux-permission`"));
    }

    #[test]
    fn a_same_level_dependency_fails() {
        let ws = workspace(&pkg("mux-tool", &[("mux-tool", "dev")]));
        assert_eq!(violations(&ws).len(), 1);
    }

    #[test]
    fn siblings_on_one_layer_may_not_depend_on_each_other() {
        let ws = workspace(
            &[
                pkg(
                    "mux-acp",
                    &[("mux-agents", "normal"), ("mux-orchestrator", "normal")],
                ),
                pkg("mux-agents", &[("mux-acp", "dev")]),
            ]
            .join(","),
        );
        let problems = violations(&ws);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0]
                .contains("`mux-acp` (layer 7) has a normal dependency on `mux-agents` (layer 7)")
        );
    }

    #[test]
    fn depending_on_the_facade_fails_for_every_layer() {
        let ws = workspace(&pkg("mux-agents", &[("mux", "normal")]));
        assert_eq!(violations(&ws).len(), 1);
    }

    #[test]
    fn a_crate_without_a_layer_fails() {
        let ws = workspace(&pkg("mux-extra", &[]));
        assert!(violations(&ws)[0].contains("has no layer"));
    }

    #[test]
    fn packages_outside_crates_are_not_layers() {
        let examples = r#"{"name": "mux-examples", "manifest_path": "/w/examples/Cargo.toml", "features": {}, "dependencies": [{"name": "mux", "kind": null}]}"#;
        assert!(violations(&workspace(examples)).is_empty());
    }
}
