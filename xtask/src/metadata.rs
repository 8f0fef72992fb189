//! The parts of `cargo metadata` the checks read.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::cargo::Cmd;

/// A workspace package.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Package {
    pub(crate) name: String,
    /// Path of `Cargo.toml`, relative to the workspace root when it lies inside it.
    pub(crate) manifest: String,
    pub(crate) features: BTreeMap<String, Vec<String>>,
    pub(crate) dependencies: Vec<Dependency>,
}

/// A dependency edge.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Dependency {
    pub(crate) name: String,
    /// `normal`, `dev` or `build`.
    pub(crate) kind: String,
}

/// Runs `cargo metadata --no-deps` and parses it.
pub(crate) fn load() -> Result<Vec<Package>, String> {
    let json = Cmd::cargo(["metadata", "--format-version", "1", "--no-deps"]).output()?;
    parse(&json)
}

/// Parses `cargo metadata` output.
pub(crate) fn parse(json: &str) -> Result<Vec<Package>, String> {
    let root: Value =
        serde_json::from_str(json).map_err(|err| format!("cargo metadata is not JSON: {err}"))?;
    let workspace_root = root["workspace_root"].as_str().unwrap_or_default();
    let packages = root["packages"]
        .as_array()
        .ok_or("cargo metadata has no `packages` list")?;
    packages
        .iter()
        .map(|p| package(p, workspace_root))
        .collect()
}

fn package(p: &Value, workspace_root: &str) -> Result<Package, String> {
    let name = p["name"]
        .as_str()
        .ok_or("a package without a name")?
        .to_owned();
    let manifest_path = p["manifest_path"].as_str().unwrap_or_default();
    let manifest = manifest_path
        .strip_prefix(workspace_root)
        .map(|rest| rest.trim_start_matches('/'))
        .unwrap_or(manifest_path)
        .to_owned();
    let features = p["features"]
        .as_object()
        .map(|map| {
            map.iter()
                .map(|(feature, enables)| {
                    let enables = enables
                        .as_array()
                        .map(|list| {
                            list.iter()
                                .filter_map(|v| v.as_str().map(str::to_owned))
                                .collect()
                        })
                        .unwrap_or_default();
                    (feature.clone(), enables)
                })
                .collect()
        })
        .unwrap_or_default();
    let dependencies = p["dependencies"]
        .as_array()
        .map(|deps| {
            deps.iter()
                .filter_map(|d| {
                    Some(Dependency {
                        name: d["name"].as_str()?.to_owned(),
                        kind: d["kind"].as_str().unwrap_or("normal").to_owned(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Package {
        name,
        manifest,
        features,
        dependencies,
    })
}

/// Whether the package is one of the library crates under `crates/`.
pub(crate) fn is_library_crate(package: &Package) -> bool {
    package.manifest.starts_with("crates/")
}
