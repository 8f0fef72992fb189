//! `cargo xtask outdated`: what is behind its latest release (not a step of `ci`; it asks the
//! registries).
//!
//! - Rust: the workspace's direct dependencies that `cargo update` would not move to their
//!   newest release (a new major version, or one that needs a newer Rust than the declared
//!   `rust-version`), from `cargo update --dry-run --verbose`.
//! - npm: each committed `package.json` (the test peers and mux-web's page), from
//!   `npm outdated --json` (it reads the lockfile and the registry).
//! - PyPI: each pin (`name==version`) of each committed `requirements*.txt`, against
//!   `pip index versions`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::cargo::workspace_root;

pub(crate) fn run() -> Result<(), String> {
    let mut behind = Vec::new();
    behind.extend(rust()?);
    for folder in tracked(|path| path.ends_with("package.json"))? {
        behind.extend(npm(&folder)?);
    }
    for file in tracked(|path| {
        Path::new(path)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("requirements") && n.ends_with(".txt"))
    })? {
        behind.extend(pypi(&file)?);
    }
    if behind.is_empty() {
        println!("outdated: everything is on its latest release");
    } else {
        println!("outdated: {} behind", behind.len());
        for line in behind {
            println!("  {line}");
        }
    }
    Ok(())
}

/// Committed files the predicate accepts, outside `node_modules`.
fn tracked(keep: impl Fn(&str) -> bool) -> Result<Vec<String>, String> {
    let out = Command::new("git")
        .args(["ls-files"])
        .current_dir(workspace_root())
        .output()
        .map_err(|err| format!("git ls-files did not start: {err}"))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|path| !path.contains("node_modules/") && keep(path))
        .map(str::to_owned)
        .collect())
}

/// The direct dependencies `cargo update` leaves behind.
fn rust() -> Result<Vec<String>, String> {
    let manifest = std::fs::read_to_string(workspace_root().join("Cargo.toml"))
        .map_err(|err| format!("cannot read Cargo.toml: {err}"))?;
    let direct = workspace_dependencies(&manifest);
    let out = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["update", "--dry-run", "--verbose"])
        .current_dir(workspace_root())
        .output()
        .map_err(|err| format!("cargo update did not start: {err}"))?;
    if !out.status.success() {
        return Err(format!(
            "cargo update --dry-run failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(cargo_behind(&String::from_utf8_lossy(&out.stderr), &direct))
}

/// The names under `[workspace.dependencies]`.
fn workspace_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut inside = false;
    let mut names = BTreeSet::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            inside = line == "[workspace.dependencies]";
            continue;
        }
        if inside && let Some((name, _)) = line.split_once('=') {
            let name = name.trim();
            if !name.is_empty() && !name.starts_with('#') {
                names.insert(name.to_owned());
            }
        }
    }
    names
}

/// `Unchanged NAME vX (available: vY…)` lines of `cargo update --verbose` for `direct` names.
fn cargo_behind(report: &str, direct: &BTreeSet<String>) -> Vec<String> {
    report
        .lines()
        .filter_map(|line| {
            let rest = line.trim().strip_prefix("Unchanged ")?;
            let (name, rest) = rest.split_once(' ')?;
            let (current, available) = rest.split_once(" (available: ")?;
            direct.contains(name).then(|| {
                format!(
                    "crates.io {name} {current} → {}",
                    available.trim_end_matches(')')
                )
            })
        })
        .collect()
}

/// `npm outdated` in the folder of `package_json`.
fn npm(package_json: &str) -> Result<Vec<String>, String> {
    let dir = workspace_root().join(package_json);
    let dir = dir.parent().unwrap_or(&dir);
    let out = Command::new("npm")
        .args(["outdated", "--json"])
        .current_dir(dir)
        .output()
        .map_err(|err| format!("npm did not start (is Node.js installed?): {err}"))?;
    // `npm outdated` exits 1 when something is outdated; its JSON says what.
    let text = String::from_utf8_lossy(&out.stdout);
    if text.trim().is_empty() {
        return Ok(Vec::new());
    }
    let json: Value = serde_json::from_str(&text)
        .map_err(|err| format!("npm outdated in {}: not JSON: {err}", dir.display()))?;
    Ok(npm_behind(package_json, &json))
}

fn npm_behind(package_json: &str, json: &Value) -> Vec<String> {
    json.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(name, v)| {
            let current = v["current"].as_str().or(v["wanted"].as_str())?;
            let latest = v["latest"].as_str()?;
            (current != latest).then(|| format!("npm {name} {current} → {latest} ({package_json})"))
        })
        .collect()
}

/// The pins of `requirements` that PyPI has a newer release of.
fn pypi(requirements: &str) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(workspace_root().join(requirements))
        .map_err(|err| format!("cannot read {requirements}: {err}"))?;
    let mut behind = Vec::new();
    for (name, pinned) in pins(&text) {
        let out = Command::new("python3")
            .args(["-m", "pip", "index", "versions", &name])
            .output()
            .map_err(|err| format!("pip did not start: {err}"))?;
        let shown = String::from_utf8_lossy(&out.stdout);
        // `NAME (LATEST)` on the first line.
        let latest = shown
            .lines()
            .next()
            .and_then(|l| l.rsplit_once('('))
            .map(|(_, v)| v.trim_end_matches(')').to_owned());
        match latest {
            Some(latest) if latest != pinned => {
                behind.push(format!("PyPI {name} {pinned} → {latest} ({requirements})"));
            }
            Some(_) => {}
            None => eprintln!("outdated: PyPI did not answer for {name}"),
        }
    }
    Ok(behind)
}

/// `name==version` lines (extras and markers dropped).
fn pins(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter_map(|l| {
            let (name, version) = l.split_once("==")?;
            let name = name.split('[').next()?.trim();
            let version = version.split([';', ' ']).next()?.trim();
            Some((name.to_owned(), version.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_direct_dependencies_left_behind_are_listed() {
        let direct = workspace_dependencies(
            "[workspace]\nmembers = []\n[workspace.dependencies]\nrmcp = { version = \"3\" }\n# a comment\nsqlx = \"0.8\"\n[workspace.lints.rust]\nx = 1\n",
        );
        assert_eq!(
            direct.iter().map(String::as_str).collect::<Vec<_>>(),
            ["rmcp", "sqlx"]
        );
        let report = "   Unchanged sqlx v0.8.6 (available: v0.9.1, requires Rust 1.94.0)\n   Unchanged syn v2.0.1 (available: v3.0.0)\n    Updating rmcp v3.9.0 -> v3.11.0\n";
        assert_eq!(
            cargo_behind(report, &direct),
            ["crates.io sqlx v0.8.6 → v0.9.1, requires Rust 1.94.0"]
        );
    }

    #[test]
    fn npm_and_pypi_reports_are_read() {
        let json: Value = serde_json::json!({
            "a": {"current": "1.0.0", "wanted": "1.0.0", "latest": "2.0.0"},
            "b": {"current": "3.0.0", "wanted": "3.0.0", "latest": "3.0.0"},
        });
        assert_eq!(
            npm_behind("x/package.json", &json),
            ["npm a 1.0.0 → 2.0.0 (x/package.json)"]
        );
        assert_eq!(
            pins("# c\nmcp==1.2.3\nuvicorn[standard]==0.3 ; python_version > '3'\nfree>=1\n"),
            [
                ("mcp".to_owned(), "1.2.3".to_owned()),
                ("uvicorn".to_owned(), "0.3".to_owned())
            ]
        );
    }
}
