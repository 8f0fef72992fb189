//! `cargo xtask peers`: installs the real MCP servers the interop tests run against, from
//! `tests/peers/package.json` and its committed lockfile, with `npm ci`. Idempotent: an
//! install whose lockfile copy matches is kept.

use std::path::Path;
use std::process::Command;

use crate::cargo::workspace_root;

/// Installs the npm peers unless the installed tree already matches the lockfile.
pub(crate) fn run() -> Result<(), String> {
    let dir = workspace_root().join("tests").join("peers");
    let lock = dir.join("package-lock.json");
    let installed = dir.join("node_modules").join(".package-lock.json");
    if up_to_date(&lock, &installed) {
        eprintln!("peers: {} is up to date", dir.display());
        return Ok(());
    }
    eprintln!("$ npm ci (in {})", dir.display());
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(&dir)
        .status()
        .map_err(|err| format!("`npm ci` did not start (is Node.js installed?): {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "`npm ci` in {} exited with {status}",
            dir.display()
        ))
    }
}

/// npm writes `node_modules/.package-lock.json` on install; it is at least as new as the
/// lockfile when the tree was installed from it.
fn up_to_date(lock: &Path, installed: &Path) -> bool {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    match (modified(lock), modified(installed)) {
        (Some(lock), Some(installed)) => installed >= lock,
        _ => false,
    }
}
