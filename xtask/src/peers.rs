//! `cargo xtask peers`: installs the real peers the interop tests run against: MCP servers,
//! ACP clients and the AG-UI client.
//!
//! - npm: `tests/peers/package.json` (MCP servers), `tests/acp-peers/package.json` (ACP
//!   clients for mux-acp) and `tests/web-peers/package.json` (the AG-UI client, esbuild and
//!   playwright-core for mux-web) and `tests/inspector-peers/package.json` (the MCP Inspector
//!   CLI and the Node 22 it needs, for mux-mcp's server side), each with its committed
//!   lockfile, with `npm ci`.
//! - Python: `tests/peers/python/requirements.txt` (pinned) into the venv
//!   `target/mcp-peers-venv`, and `tests/web-peers/python/requirements.txt` (ag-ui-validate,
//!   pinned) into `target/web-peers-venv`, and `tests/otel-peers/requirements.txt` (Arize
//!   Phoenix, the OTLP receiver of the facade's `otel` test, pinned) into
//!   `target/otel-peers-venv`, and `tests/a2a-peers/python/requirements.txt` (the A2A Python
//!   SDK, pinned: mux-a2a's client peer and the A2A benchmark's baseline server) into
//!   `target/a2a-peers-venv`; npm `tests/a2a-peers/package.json` (`@a2a-js/sdk`).
//!
//! Both steps are idempotent: an install that matches its inputs is kept.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::cargo::workspace_root;

/// The Python venv the interop tests use, relative to the workspace root.
const VENV: &str = "target/mcp-peers-venv";

/// The Python venv of the web face's validator, relative to the workspace root.
const WEB_VENV: &str = "target/web-peers-venv";

/// The Python venv of the OpenTelemetry receiver (Arize Phoenix), relative to the workspace
/// root.
const OTEL_VENV: &str = "target/otel-peers-venv";

/// The Python venv of the A2A SDK (mux-a2a's peer and benchmark baseline), relative to the
/// workspace root.
const A2A_VENV: &str = "target/a2a-peers-venv";

/// Installs every set of peers.
pub(crate) fn run() -> Result<(), String> {
    for folder in NPM_FOLDERS {
        npm(folder)?;
    }
    python("tests/peers/python/requirements.txt", VENV)?;
    python("tests/web-peers/python/requirements.txt", WEB_VENV)?;
    python("tests/otel-peers/requirements.txt", OTEL_VENV)?;
    python("tests/a2a-peers/python/requirements.txt", A2A_VENV)
}

/// The npm peer folders under `tests/`.
const NPM_FOLDERS: [&str; 5] = [
    "peers",
    "acp-peers",
    "web-peers",
    "inspector-peers",
    "a2a-peers",
];

/// `npm ci` in `tests/<folder>`, unless its install matches its lockfile.
fn npm(folder: &str) -> Result<(), String> {
    npm_ci(&workspace_root().join("tests").join(folder))
}

/// `npm ci` in `dir`, unless its install matches its lockfile.
pub(crate) fn npm_ci(dir: &Path) -> Result<(), String> {
    let dir = dir.to_path_buf();
    let lock = dir.join("package-lock.json");
    let installed = dir.join("node_modules").join(".package-lock.json");
    if newer_or_same(&installed, &lock) {
        eprintln!("peers: npm packages in {} are up to date", dir.display());
        return Ok(());
    }
    let ci = run_in(
        &dir,
        Command::new("npm").args(["ci", "--no-audit", "--no-fund", "--loglevel=error"]),
        "npm ci (is Node.js installed?)",
    );
    if ci.is_ok() || !dir.join("package-lock.json").exists() {
        return ci;
    }
    // `npm ci` refuses a lockfile that lacks some platform's optional package (acpx's
    // fs-safe binaries for other systems are not on every registry mirror). `npm install`
    // with the lockfile installs the same pinned versions and leaves the lockfile as it is.
    eprintln!(
        "peers: npm ci refused the lockfile in {}; installing from it with npm install --no-save",
        dir.display()
    );
    run_in(
        &dir,
        Command::new("npm").args([
            "install",
            "--no-save",
            "--no-audit",
            "--no-fund",
            "--loglevel=error",
        ]),
        "npm install --no-save",
    )
}

/// `pip install -r requirements` into `venv` (both relative to the workspace root), unless
/// the venv was made from the same requirements.
fn python(requirements: &str, venv: &str) -> Result<(), String> {
    let root = workspace_root();
    let requirements = root.join(requirements);
    let venv = root.join(venv);
    let marker = venv.join("mux-requirements.txt");
    let wanted = std::fs::read_to_string(&requirements)
        .map_err(|err| format!("cannot read {}: {err}", requirements.display()))?;
    if std::fs::read_to_string(&marker).is_ok_and(|have| have == wanted) {
        eprintln!("peers: Python venv {} is up to date", venv.display());
        return Ok(());
    }
    let python = std::env::var_os("PYTHON").unwrap_or_else(|| "python3".into());
    run_in(
        &root,
        Command::new(&python).arg("-m").arg("venv").arg(&venv),
        "python3 -m venv",
    )?;
    let pip: PathBuf = venv.join("bin").join("pip");
    run_in(
        &root,
        Command::new(&pip)
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements),
        "pip install",
    )?;
    std::fs::write(&marker, wanted)
        .map_err(|err| format!("cannot write {}: {err}", marker.display()))
}

/// Runs `command` in `dir` with stdin closed (nothing it installs may wait for an answer).
pub(crate) fn run_in(dir: &Path, command: &mut Command, what: &str) -> Result<(), String> {
    eprintln!("$ {what} (in {})", dir.display());
    let status = command
        .current_dir(dir)
        .stdin(Stdio::null())
        .status()
        .map_err(|err| format!("`{what}` did not start: {err}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{what}` in {} exited with {status}",
            dir.display()
        ))
    }
}

/// Whether `path` exists and was modified no earlier than `than`.
pub(crate) fn newer_or_same(path: &Path, than: &Path) -> bool {
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    match (modified(path), modified(than)) {
        (Some(path), Some(than)) => path >= than,
        _ => false,
    }
}
