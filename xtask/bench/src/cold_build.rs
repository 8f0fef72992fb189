//! Cold builds: how long a new user waits for a first `cargo build`.
//!
//! Three programs, each built from nothing (a fresh target directory, sources already
//! downloaded) in the same run, one after another:
//! - the baseline: a bare tokio + reqwest program (what any networked Rust program pays);
//! - the README's first agent (`mux` with `orchestrator`, `anthropic` and `testing`: an agent,
//!   a real provider and the scripted model), as a user would add it;
//! - a program with every feature (`full`).
//!
//! Debug builds with the machine's default jobs, as `cargo build` runs for a newcomer. Seconds
//! of wall time; ratios against the baseline.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::report::Row;

/// The baseline program's manifest dependencies.
const BARE: &str = r#"tokio = { version = "1", features = ["rt-multi-thread", "macros"] }
reqwest = { version = "0.12", default-features = false, features = ["rustls-tls"] }"#;

/// The README's first agent.
const FIRST_AGENT: &str = r#"use mux::prelude::*;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = ScriptedClient::new().reply_text("Paris.");
    let agent = Agent::builder(model, "claude-sonnet-4-5").instructions("Be brief.").build()?;
    println!("{}", agent.prompt("What is the capital of France?").await?);
    Ok(())
}
"#;

/// The bare program: one request built, not sent.
const BARE_MAIN: &str = r#"#[tokio::main]
async fn main() {
    let client = reqwest::Client::new();
    let request = client.get("https://example.com").build().unwrap();
    println!("{}", request.url());
}
"#;

pub(crate) fn run() -> Result<Vec<Row>, String> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mux = workspace
        .join("crates/mux")
        .canonicalize()
        .map_err(|err| format!("crates/mux: {err}"))?;
    let mux = mux.display();
    let dir = tempfile::tempdir().map_err(|err| err.to_string())?;

    let bare = build(dir.path(), "bare", BARE, BARE_MAIN)?;
    let first = build(
        dir.path(),
        "first-agent",
        &format!(
            "mux = {{ path = \"{mux}\", features = [\"orchestrator\", \"anthropic\", \"testing\"] }}\n\
             tokio = {{ version = \"1\", features = [\"rt-multi-thread\", \"macros\"] }}"
        ),
        FIRST_AGENT,
    )?;
    let full = build(
        dir.path(),
        "full",
        &format!(
            "mux = {{ path = \"{mux}\", features = [\"full\"] }}\n\
             tokio = {{ version = \"1\", features = [\"rt-multi-thread\", \"macros\"] }}"
        ),
        FIRST_AGENT,
    )?;
    let baseline = "cold build, bare tokio + reqwest program";
    Ok(vec![
        Row {
            name: "cold build, the README's first agent".into(),
            value: first,
            unit: "s",
            baseline: baseline.into(),
            baseline_value: bare,
        },
        Row {
            name: "cold build, a program with mux's `full`".into(),
            value: full,
            unit: "s",
            baseline: baseline.into(),
            baseline_value: bare,
        },
    ])
}

/// Writes a binary crate `name` in `dir` and builds it from an empty target directory;
/// returns the seconds `cargo build` took.
fn build(dir: &Path, name: &str, dependencies: &str, main: &str) -> Result<f64, String> {
    let root = dir.join(name);
    std::fs::create_dir_all(root.join("src")).map_err(|err| err.to_string())?;
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [dependencies]\n{dependencies}\n\n[workspace]\n"
    );
    std::fs::write(root.join("Cargo.toml"), manifest).map_err(|err| err.to_string())?;
    std::fs::write(root.join("src/main.rs"), main).map_err(|err| err.to_string())?;
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // Resolve (and fetch) first, so the timed build compiles only.
    let fetch = Command::new(&cargo)
        .arg("fetch")
        .current_dir(&root)
        .status()
        .map_err(|err| format!("cargo fetch did not start: {err}"))?;
    if !fetch.success() {
        return Err(format!("cargo fetch for {name} failed: {fetch}"));
    }
    let start = Instant::now();
    let status = Command::new(&cargo)
        .arg("build")
        .arg("--quiet")
        .env("CARGO_TARGET_DIR", root.join("target"))
        .env_remove("RUSTFLAGS")
        .env("CARGO_INCREMENTAL", "0")
        .current_dir(&root)
        .status()
        .map_err(|err| format!("cargo build did not start: {err}"))?;
    let seconds = start.elapsed().as_secs_f64();
    // Gigabytes each: gone before the next build starts.
    let _ = std::fs::remove_dir_all(root.join("target"));
    if !status.success() {
        return Err(format!("cargo build for {name} failed: {status}"));
    }
    eprintln!("cold_build: {name} in {seconds:.1} s");
    Ok(seconds)
}
