//! The feature check: every crate builds with no default features and with all features, the
//! facade builds with each of its features alone, and its `full` feature enables every other.

use crate::cargo::Cmd;
use crate::metadata::{self, Package, is_library_crate};

/// The facade crate's name.
const FACADE: &str = "mux";

/// Runs the check on this workspace.
pub(crate) fn run() -> Result<(), String> {
    let packages = metadata::load()?;
    if let Some(facade) = packages.iter().find(|p| p.name == FACADE) {
        let missing = missing_from_full(facade);
        if !missing.is_empty() {
            return Err(format!(
                "the facade's `full` feature does not enable: {}",
                missing.join(", ")
            ));
        }
    }
    for (package, flags) in matrix(&packages) {
        let mut cmd = Cmd::cargo(["check", "--quiet", "--package", package.as_str()]);
        for flag in &flags {
            cmd = cmd.arg(flag);
        }
        cmd.run()?;
    }
    Ok(())
}

/// The `cargo check` flag sets to try, per library crate.
pub(crate) fn matrix(packages: &[Package]) -> Vec<(String, Vec<String>)> {
    let mut builds = Vec::new();
    for package in packages.iter().filter(|p| is_library_crate(p)) {
        let name = package.name.clone();
        builds.push((name.clone(), vec!["--no-default-features".to_owned()]));
        builds.push((name.clone(), vec!["--all-features".to_owned()]));
        if package.name == FACADE {
            for feature in package.features.keys().filter(|f| *f != "default") {
                let flags = ["--no-default-features", "--features", feature];
                builds.push((name.clone(), flags.map(str::to_owned).to_vec()));
            }
        }
    }
    builds
}

/// The facade features that `full` does not enable (directly or through another feature).
pub(crate) fn missing_from_full(facade: &Package) -> Vec<String> {
    let mut enabled = std::collections::BTreeSet::new();
    let mut pending = vec!["full".to_owned()];
    while let Some(feature) = pending.pop() {
        for next in facade.features.get(&feature).into_iter().flatten() {
            if facade.features.contains_key(next) && enabled.insert(next.clone()) {
                pending.push(next.clone());
            }
        }
    }
    facade
        .features
        .keys()
        .filter(|f| !matches!(f.as_str(), "default" | "full") && !enabled.contains(*f))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata::parse;

    fn facade(features: &str) -> Vec<Package> {
        parse(&format!(
            r#"{{"workspace_root": "/w", "packages": [
                {{"name": "mux-tool", "manifest_path": "/w/crates/mux-tool/Cargo.toml", "features": {{"default": []}}, "dependencies": []}},
                {{"name": "mux", "manifest_path": "/w/crates/mux/Cargo.toml", "features": {features}, "dependencies": []}},
                {{"name": "xtask", "manifest_path": "/w/xtask/Cargo.toml", "features": {{}}, "dependencies": []}}
            ]}}"#
        ))
        .unwrap()
    }

    #[test]
    fn the_matrix_covers_each_crate_and_each_facade_feature_alone() {
        let packages =
            facade(r#"{"default": ["tool"], "tool": ["dep:mux-tool"], "full": ["tool"]}"#);
        let builds: Vec<String> = matrix(&packages)
            .into_iter()
            .map(|(p, flags)| format!("{p} {}", flags.join(" ")))
            .collect();
        assert_eq!(
            builds,
            [
                "mux-tool --no-default-features",
                "mux-tool --all-features",
                "mux --no-default-features",
                "mux --all-features",
                "mux --no-default-features --features full",
                "mux --no-default-features --features tool",
            ]
        );
    }

    #[test]
    fn full_must_enable_every_feature() {
        let ok = facade(r#"{"tool": [], "llm": ["tool"], "full": ["llm"]}"#);
        assert!(missing_from_full(&ok[1]).is_empty());
        let broken = facade(r#"{"tool": [], "llm": [], "full": ["tool"]}"#);
        assert_eq!(missing_from_full(&broken[1]), ["llm"]);
    }
}
