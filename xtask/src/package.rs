//! `cargo xtask package`: every published crate would publish.
//!
//! - Each has what crates.io and docs.rs need: a description, a license, the repository, a
//!   readme that exists, keywords and categories (within crates.io's limits), the workspace's
//!   `rust-version`, and `[package.metadata.docs.rs]`.
//! - The declared `rust-version` is honest: no dependency a published crate builds with (every
//!   feature on) declares a newer one. No older toolchain can be installed from the registries
//!   these machines reach, so this, with clippy's `incompatible_msrv` lint (on, and denied, in
//!   the `clippy` step), is the check.
//! - `cargo package` of them all, each unpacked and checked as crates.io would build it (so a
//!   file outside a crate's directory, or a path dependency without a version, fails here;
//!   see `package_check`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::Value;

use crate::cargo::{Cmd, workspace_root};
use crate::package_check::{self, Packaged};

/// crates.io's limits on keywords.
const MAX_KEYWORDS: usize = 5;
const MAX_KEYWORD_LEN: usize = 20;

pub(crate) fn run() -> Result<(), String> {
    let json = Cmd::cargo([
        "metadata",
        "--format-version",
        "1",
        "--all-features",
        "--locked",
    ])
    .output()?;
    let root: Value =
        serde_json::from_str(&json).map_err(|err| format!("cargo metadata is not JSON: {err}"))?;
    let published = published(&root)?;
    let mut problems = Vec::new();
    let workspace_msrv = workspace_msrv(&published, &mut problems);
    for package in &published {
        problems.extend(metadata_problems(package));
    }
    if let Some(msrv) = &workspace_msrv {
        let (newest, newer) = dependencies_newer_than(&root, &published, msrv)?;
        problems.extend(newer);
        if let Some((version, name)) = newest {
            eprintln!(
                "xtask: rust-version {msrv}; the newest any dependency asks for is {version} ({name})"
            );
        }
    }
    if !problems.is_empty() {
        return Err(format!(
            "{} problem(s):\n  {}",
            problems.len(),
            problems.join("\n  ")
        ));
    }
    // The working tree as it is: what `ci` checks is what is about to be committed. Each
    // archive is then unpacked and checked as crates.io would build it (`package_check`).
    let mut cargo = Cmd::cargo(["package", "--locked", "--allow-dirty", "--no-verify"]);
    for package in &published {
        cargo = cargo.args(["-p", name_of(package)]);
    }
    cargo.run()?;
    let target = root["target_directory"]
        .as_str()
        .ok_or("cargo metadata has no `target_directory`")?;
    let crates: Vec<Packaged> = published
        .iter()
        .map(|p| Packaged {
            name: name_of(p).to_owned(),
            version: p["version"].as_str().unwrap_or("?").to_owned(),
        })
        .collect();
    package_check::check(
        std::path::Path::new(target),
        &workspace_root().join("Cargo.lock"),
        &crates,
    )?;
    eprintln!("xtask: {} crates package and build", published.len());
    Ok(())
}

/// The workspace members crates.io would accept (`publish` not `false`).
fn published(root: &Value) -> Result<Vec<&Value>, String> {
    let members: BTreeSet<&str> = root["workspace_members"]
        .as_array()
        .ok_or("cargo metadata has no `workspace_members`")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let packages = root["packages"]
        .as_array()
        .ok_or("cargo metadata has no `packages`")?;
    Ok(packages
        .iter()
        .filter(|p| p["id"].as_str().is_some_and(|id| members.contains(id)))
        .filter(|p| !matches!(&p["publish"], Value::Array(registries) if registries.is_empty()))
        .collect())
}

fn name_of(package: &Value) -> &str {
    package["name"].as_str().unwrap_or("?")
}

/// The one `rust-version` every published crate declares.
fn workspace_msrv(published: &[&Value], problems: &mut Vec<String>) -> Option<String> {
    let declared: BTreeSet<&str> = published
        .iter()
        .filter_map(|p| p["rust_version"].as_str())
        .collect();
    if declared.len() > 1 {
        problems.push(format!(
            "published crates declare different rust-versions: {declared:?}"
        ));
    }
    declared.into_iter().next().map(str::to_owned)
}

/// What a published crate's manifest lacks.
fn metadata_problems(package: &Value) -> Vec<String> {
    let name = name_of(package);
    let mut problems = Vec::new();
    for field in ["description", "license", "repository", "rust_version"] {
        if package[field].as_str().is_none_or(str::is_empty) {
            problems.push(format!("{name}: no `{}`", field.replace('_', "-")));
        }
    }
    match package["readme"].as_str() {
        None => problems.push(format!("{name}: no `readme`")),
        Some(readme) => {
            let manifest = package["manifest_path"].as_str().unwrap_or_default();
            let dir = std::path::Path::new(manifest)
                .parent()
                .unwrap_or(std::path::Path::new("."));
            if !dir.join(readme).is_file() {
                problems.push(format!("{name}: its readme `{readme}` does not exist"));
            }
        }
    }
    let keywords: Vec<&str> = list(&package["keywords"]);
    if keywords.is_empty() {
        problems.push(format!("{name}: no `keywords`"));
    }
    if keywords.len() > MAX_KEYWORDS {
        problems.push(format!(
            "{name}: {} keywords (crates.io takes at most {MAX_KEYWORDS})",
            keywords.len()
        ));
    }
    for keyword in keywords {
        let valid = keyword.len() <= MAX_KEYWORD_LEN
            && keyword.starts_with(|c: char| c.is_ascii_alphabetic())
            && keyword
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+'));
        if !valid {
            problems.push(format!(
                "{name}: keyword `{keyword}` is not one crates.io accepts"
            ));
        }
    }
    if list(&package["categories"]).is_empty() {
        problems.push(format!("{name}: no `categories`"));
    }
    if package["metadata"]["docs"]["rs"].is_null() {
        problems.push(format!("{name}: no `[package.metadata.docs.rs]`"));
    }
    problems
}

fn list(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A dependency's `rust-version` and name.
type Newest = Option<(String, String)>;

/// The newest `rust-version` among the dependencies the published crates build with (normal
/// and build edges, every feature), and a problem for each newer than `msrv`.
fn dependencies_newer_than(
    root: &Value,
    published: &[&Value],
    msrv: &str,
) -> Result<(Newest, Vec<String>), String> {
    let limit = version(msrv).ok_or_else(|| format!("rust-version `{msrv}` is not a version"))?;
    let packages: BTreeMap<&str, &Value> = root["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p["id"].as_str()?, p)))
        .collect();
    let nodes: BTreeMap<&str, &Value> = root["resolve"]["nodes"]
        .as_array()
        .ok_or("cargo metadata has no `resolve` graph")?
        .iter()
        .filter_map(|n| Some((n["id"].as_str()?, n)))
        .collect();
    let ours: BTreeSet<&str> = published.iter().filter_map(|p| p["id"].as_str()).collect();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut queue: VecDeque<&str> = ours.iter().copied().collect();
    let mut newest: Option<((u64, u64, u64), String, String)> = None;
    let mut problems = Vec::new();
    while let Some(id) = queue.pop_front() {
        if !seen.insert(id) {
            continue;
        }
        if !ours.contains(id)
            && let Some(package) = packages.get(id)
            && let Some(declared) = package["rust_version"].as_str()
            && let Some(parsed) = version(declared)
        {
            if newest.as_ref().is_none_or(|(v, _, _)| parsed > *v) {
                newest = Some((parsed, declared.to_owned(), name_of(package).to_owned()));
            }
            if parsed > limit {
                problems.push(format!(
                    "{} {} needs Rust {declared}, newer than the declared rust-version {msrv}",
                    name_of(package),
                    package["version"].as_str().unwrap_or("?")
                ));
            }
        }
        let Some(node) = nodes.get(id) else { continue };
        for dep in node["deps"].as_array().into_iter().flatten() {
            let builds_with = dep["dep_kinds"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|kind| kind["kind"].as_str() != Some("dev"));
            if builds_with && let Some(dep_id) = dep["pkg"].as_str() {
                queue.push_back(dep_id);
            }
        }
    }
    Ok((newest.map(|(_, v, name)| (v, name)), problems))
}

/// `1.88` or `1.88.0` as a comparable triple.
fn version(text: &str) -> Option<(u64, u64, u64)> {
    let mut parts = text.split('.').map(str::parse::<u64>);
    let major = parts.next()?.ok()?;
    let minor = parts.next().unwrap_or(Ok(0)).ok()?;
    let patch = parts.next().unwrap_or(Ok(0)).ok()?;
    Some((major, minor, patch))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::json;

    fn complete() -> Value {
        json!({
            "name": "mux-x",
            "description": "d",
            "license": "MIT",
            "repository": "https://example.com",
            "rust_version": "1.88",
            "readme": "Cargo.toml",
            "manifest_path": concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"),
            "keywords": ["llm", "agent"],
            "categories": ["asynchronous"],
            "metadata": {"docs": {"rs": {"all-features": true}}},
        })
    }

    #[test]
    fn a_complete_manifest_has_no_problem() {
        assert_eq!(metadata_problems(&complete()), Vec::<String>::new());
    }

    #[test]
    fn each_missing_field_is_named() {
        for (field, says) in [
            ("description", "no `description`"),
            ("license", "no `license`"),
            ("repository", "no `repository`"),
            ("rust_version", "no `rust-version`"),
            ("readme", "no `readme`"),
            ("keywords", "no `keywords`"),
            ("categories", "no `categories`"),
            ("metadata", "no `[package.metadata.docs.rs]`"),
        ] {
            let mut package = complete();
            package.as_object_mut().unwrap().remove(field);
            let problems = metadata_problems(&package);
            assert!(
                problems.iter().any(|p| p.contains(says)),
                "{field}: {problems:?}"
            );
        }
    }

    #[test]
    fn keywords_crates_io_refuses_are_named() {
        let mut package = complete();
        package["keywords"] = json!(["a", "b", "c", "d", "e", "f"]);
        assert!(metadata_problems(&package)[0].contains("6 keywords"));
        package["keywords"] = json!(["has space", "x".repeat(21), "9lives"]);
        assert_eq!(metadata_problems(&package).len(), 3);
        package["readme"] = json!("NOPE.md");
        assert!(
            metadata_problems(&package)
                .iter()
                .any(|p| p.contains("does not exist"))
        );
    }

    #[test]
    fn a_dependency_needing_a_newer_rust_is_named_and_dev_edges_are_not_followed() {
        let root = json!({
            "packages": [
                {"id": "a", "name": "a", "version": "1.0.0", "rust_version": "1.88"},
                {"id": "b", "name": "b", "version": "2.0.0", "rust_version": "1.90.1"},
                {"id": "c", "name": "c", "version": "3.0.0", "rust_version": "1.99"},
            ],
            "resolve": {"nodes": [
                {"id": "a", "deps": [
                    {"pkg": "b", "dep_kinds": [{"kind": null}]},
                    {"pkg": "c", "dep_kinds": [{"kind": "dev"}]},
                ]},
                {"id": "b", "deps": []},
                {"id": "c", "deps": []},
            ]},
        });
        let a = &root["packages"][0];
        let (newest, problems) = dependencies_newer_than(&root, &[a], "1.88").unwrap();
        assert_eq!(newest, Some(("1.90.1".to_owned(), "b".to_owned())));
        assert_eq!(problems.len(), 1);
        assert!(problems[0].starts_with("b 2.0.0 needs Rust 1.90.1"));
        let (_, problems) = dependencies_newer_than(&root, &[a], "1.91").unwrap();
        assert!(problems.is_empty());
    }
}
