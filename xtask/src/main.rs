//! `cargo xtask`: the project's checks, each a subcommand, and `ci`, which runs them all.
//!
//! ```text
//! cargo xtask ci          fmt, clippy, peers, page, test, doc, layering, features, deny, package, semver; then "N passed, N failed"
//! cargo xtask lint        fmt --check and clippy -D warnings
//! cargo xtask peers       the npm and PyPI peers the interop tests use (tests/peers, tests/acp-peers, tests/web-peers)
//! cargo xtask page        mux-web's committed chat page bundle is esbuild's output of its source
//! cargo xtask test        nextest (or cargo test) plus doctests (DATABASE_URL: a fresh database on a throw-away PostgreSQL)
//! cargo xtask conformance the official MCP conformance suite (client side) against mux-mcp
//! cargo xtask doc         every page with Rust code is included as doctests; links, anchors and paths in the docs exist; cargo doc with warnings denied
//! cargo xtask layering    every mux-* dependency points strictly downward; no module cycles in a crate
//! cargo xtask features    each crate builds with no and all features; the facade with each alone
//! cargo xtask deny        cargo deny check bans licenses sources (installs cargo-deny if missing)
//! cargo xtask package     every published crate has crates.io's and docs.rs' metadata, an honest rust-version, and packages and builds
//! cargo xtask semver      the published crates' API against the last release tag (cargo-semver-checks); passes while there is none
//! cargo xtask bench       every benchmark; writes target/bench-report.json
//! cargo xtask doctests    the doctests alone, as `test` runs them (not in ci: `test` has them)
//! cargo xtask outdated    what is behind its latest release: Rust dependencies, npm and PyPI peers (not in ci)
//! cargo xtask oracle      the shell analysis' differential oracle, full corpus (`--slice`: the fast slice)
//! cargo xtask oracle-slice  the oracle's fast slice (a step of `ci`)
//! ```

mod cargo;
mod conformance;
mod crate_env;
mod doc_database;
mod doc_links;
mod doc_pages;
mod features;
mod layering;
mod metadata;
mod module_cycles;
mod module_graph;
mod module_tree;
mod outdated;
mod package;
mod package_check;
mod page;
mod peers;
mod semver;

use std::process::ExitCode;

use cargo::{Cmd, workspace_root};

/// A named check that passes or fails with a message.
struct Step {
    name: &'static str,
    run: fn() -> Result<(), String>,
}

const CI_STEPS: &[Step] = &[
    Step {
        name: "fmt",
        run: fmt,
    },
    Step {
        name: "clippy",
        run: clippy,
    },
    Step {
        name: "peers",
        run: peers::run,
    },
    Step {
        name: "page",
        run: page::run,
    },
    Step {
        name: "test",
        run: test,
    },
    Step {
        name: "oracle-slice",
        run: oracle_slice,
    },
    Step {
        name: "conformance",
        run: conformance::run,
    },
    Step {
        name: "doc",
        run: doc,
    },
    Step {
        name: "layering",
        run: layering::run,
    },
    Step {
        name: "features",
        run: features::run,
    },
    Step {
        name: "deny",
        run: deny,
    },
    Step {
        name: "package",
        run: package::run,
    },
    Step {
        name: "semver",
        run: semver::run,
    },
];

/// Steps that run alone by name but are not part of `ci`.
const OTHER_STEPS: &[Step] = &[
    Step {
        name: "outdated",
        run: outdated::run,
    },
    Step {
        name: "doctests",
        run: doctests,
    },
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let command = args.first().map(String::as_str).unwrap_or("help");
    let steps: Vec<&Step> = match command {
        "ci" => CI_STEPS.iter().collect(),
        "lint" => CI_STEPS
            .iter()
            .filter(|s| matches!(s.name, "fmt" | "clippy"))
            .collect(),
        "bench" => return report("bench", bench()),
        "oracle" => return report("oracle", oracle(&args[1..])),
        "help" | "-h" | "--help" => {
            println!("{}", usage());
            return ExitCode::SUCCESS;
        }
        name => match CI_STEPS.iter().chain(OTHER_STEPS).find(|s| s.name == name) {
            Some(step) => vec![step],
            None => {
                eprintln!("unknown xtask command `{name}`\n\n{}", usage());
                return ExitCode::from(2);
            }
        },
    };
    run_steps(&steps)
}

/// Runs steps in order, stopping at the first failure, and ends with "N passed, N failed".
fn run_steps(steps: &[&Step]) -> ExitCode {
    let (mut passed, mut failed) = (0, 0);
    let mut times = Vec::new();
    for step in steps {
        eprintln!("\n==> xtask: {}", step.name);
        let started = std::time::Instant::now();
        let result = (step.run)();
        times.push(format!(
            "{} {:.0}s",
            step.name,
            started.elapsed().as_secs_f64()
        ));
        match result {
            Ok(()) => passed += 1,
            Err(message) => {
                eprintln!("xtask: step `{}` failed: {message}", step.name);
                failed += 1;
                break;
            }
        }
    }
    if steps.len() > 1 {
        eprintln!("xtask: step times: {}", times.join(", "));
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn report(name: &str, result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("xtask: `{name}` failed: {message}");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> &'static str {
    "usage: cargo xtask <ci|lint|fmt|clippy|peers|page|test|conformance|doc|layering|features|deny|package|semver|bench|outdated|doctests|oracle [--slice]|oracle-slice>"
}

fn fmt() -> Result<(), String> {
    Cmd::cargo(["fmt", "--all", "--", "--check"]).run()
}

fn clippy() -> Result<(), String> {
    Cmd::cargo([
        "clippy",
        "--workspace",
        "--all-targets",
        "--all-features",
        "--",
        "-D",
        "warnings",
    ])
    .run()
}

fn test() -> Result<(), String> {
    if Cmd::cargo(["nextest", "--version"]).quiet().run().is_ok() {
        Cmd::cargo([
            "nextest",
            "run",
            "--workspace",
            "--all-features",
            "--no-tests=warn",
            // Report every failing test, not only the first.
            "--no-fail-fast",
        ])
        .run()?;
    } else {
        eprintln!("xtask: cargo-nextest is not installed; using cargo test");
        Cmd::cargo([
            "test",
            "--workspace",
            "--all-features",
            "--lib",
            "--bins",
            "--tests",
            "--no-fail-fast",
        ])
        .run()?;
    }
    doctests()
}

/// The workspace's doctests, the docs pages' blocks among them; the blocks that need
/// PostgreSQL get a fresh database in `DATABASE_URL`.
fn doctests() -> Result<(), String> {
    let database = doc_database::start()?;
    Cmd::cargo(["test", "--workspace", "--all-features", "--doc"])
        .env(doc_database::DATABASE_URL, &database.url)
        .run()
}

fn doc() -> Result<(), String> {
    doc_pages::check()?;
    doc_links::check()?;
    Cmd::cargo(["doc", "--workspace", "--no-deps", "--all-features"])
        .env("RUSTDOCFLAGS", "-D warnings")
        .run()
}

fn deny() -> Result<(), String> {
    if Cmd::cargo(["deny", "--version"]).quiet().run().is_err() {
        eprintln!("xtask: cargo-deny is missing; installing it");
        Cmd::cargo(["install", "cargo-deny", "--locked"]).run()?;
    }
    Cmd::cargo(["deny", "check", "bans", "licenses", "sources"]).run()
}

/// Runs the differential oracle (`xtask/oracle`) with `args` (`--slice`, `--seed N`, ...).
fn oracle(args: &[String]) -> Result<(), String> {
    Cmd::cargo(["run", "--quiet", "--package", "xtask-oracle", "--"])
        .args(args)
        .run()
}

/// The oracle's fast slice: a few hundred allowed commands run; fails on any disagreement.
fn oracle_slice() -> Result<(), String> {
    oracle(&["--slice".to_owned()])
}

fn bench() -> Result<(), String> {
    let target = workspace_root().join("target");
    let report = target.join("bench-report.json");
    Cmd::cargo([
        "run",
        "--release",
        "--quiet",
        "--package",
        "xtask-bench",
        "--",
    ])
    .arg(report.to_string_lossy().as_ref())
    .run()?;
    // rig's loops are measured by a package outside the workspace, so CI never builds rig; its
    // rows join the same report. rig-agent 0.46 declares rust-version 1.97.1 but builds on the
    // workspace's toolchain, hence `--ignore-rust-version`.
    let rig_report = target.join("bench-rig-report.json");
    Cmd::cargo([
        "run",
        "--release",
        "--quiet",
        "--ignore-rust-version",
        "--manifest-path",
        "xtask/bench-rig/Cargo.toml",
        "--target-dir",
    ])
    .arg(target.join("bench-rig").to_string_lossy().as_ref())
    .arg("--")
    .arg(rig_report.to_string_lossy().as_ref())
    .run()?;
    merge_reports(&report, &rig_report)
}

/// Appends the rows of `extra` to the JSON list in `report`.
fn merge_reports(report: &std::path::Path, extra: &std::path::Path) -> Result<(), String> {
    let read = |path: &std::path::Path| -> Result<Vec<serde_json::Value>, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        serde_json::from_str(&text)
            .map_err(|e| format!("{} is not a JSON list: {e}", path.display()))
    };
    let mut rows = read(report)?;
    rows.extend(read(extra)?);
    let text = serde_json::to_string_pretty(&rows).map_err(|e| e.to_string())?;
    std::fs::write(report, text + "\n")
        .map_err(|e| format!("writing {}: {e}", report.display()))?;
    eprintln!("bench report: {} rows in {}", rows.len(), report.display());
    Ok(())
}
