//! `cargo xtask conformance`: the official MCP conformance suite against mux-mcp.
//!
//! 1. `npm ci` in `tests/conformance`: the runner `@modelcontextprotocol/conformance` and the
//!    `node` package, which brings the Node 22 the runner needs (the machine may have only 20).
//! 2. Builds the example `mcp_conformance_client` once.
//! 3. Runs the runner's client suite for each requirement set (`--requirements 2025-11-25`,
//!    `--requirements 2026-07-28`) against that binary.
//! 4. Scores each scenario the way the runner's tier check does (at least one check passed,
//!    none failed) and compares the scored ones with `tests/conformance/expected-failures.json`.
//!
//! It fails on a scored scenario that fails without being listed, and on a listed one that
//! now passes, so the list stays honest. Unscored scenarios (extensions, added after the
//! revision shipped) are reported but never fail the step.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::Value;

use crate::cargo::{Cmd, workspace_root};
use crate::peers::{newer_or_same, run_in};

/// The requirement sets the suite runs, oldest first.
const REVISIONS: &[&str] = &["2025-11-25", "2026-07-28"];
/// The example the runner drives.
const CLIENT: &str = "mcp_conformance_client";
/// How long the runner lets the client run per scenario, in milliseconds.
const SCENARIO_TIMEOUT_MS: &str = "30000";

/// How one scenario went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Outcome {
    passed: bool,
    checks_passed: usize,
    checks_failed: usize,
}

/// Runs the suite and prints `N passed, N failed` over the scored scenarios.
pub(crate) fn run() -> Result<(), String> {
    let started = Instant::now();
    let dir = workspace_root().join("tests").join("conformance");
    install(&dir)?;
    let node = dir
        .join("node_modules")
        .join("node")
        .join("bin")
        .join("node");
    check_node(&node)?;
    let client = build_client()?;
    let expected = load_expected(&dir.join("expected-failures.json"))?;
    let results_root = results_dir(&client);
    let (mut passed, mut failed) = (0usize, 0usize);
    let mut problems = Vec::new();
    for revision in REVISIONS {
        let out = results_root.join(revision);
        run_runner(&dir, &node, &client, revision, &out)?;
        let outcomes = collect(&out)?;
        let requirements = Requirements::load(&dir, revision)?;
        let listed = expected.get(*revision).cloned().unwrap_or_default();
        let report = judge(revision, &requirements, &outcomes, &listed);
        println!("{}", report.text);
        passed += report.passed;
        failed += report.failed;
        problems.extend(report.problems);
    }
    let (server_passed, server_failed) =
        run_server_suite(&dir, &node, &results_root, &expected, &mut problems)?;
    passed += server_passed;
    failed += server_failed;
    eprintln!(
        "conformance: results in {}; took {:.1} s",
        results_root.display(),
        started.elapsed().as_secs_f64()
    );
    println!("conformance: {passed} passed, {failed} failed");
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// The example the runner's server suite calls.
const SERVER: &str = "mcp_conformance_server";

/// Runs the server suite for each revision against `mcp_conformance_server` on a free
/// loopback port, scored like the client suite (expected failures under `server:<revision>`).
fn run_server_suite(
    dir: &Path,
    node: &Path,
    results_root: &Path,
    expected: &Expected,
    problems: &mut Vec<String>,
) -> Result<(usize, usize), String> {
    let binary = build_example(SERVER)?;
    let (mut passed, mut failed) = (0, 0);
    for revision in REVISIONS {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(|err| format!("no free port for the conformance server: {err}"))?
            .port();
        let mut server = Command::new(&binary)
            .args(["--port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|err| format!("{SERVER} did not start: {err}"))?;
        // The first stdout line is the URL, printed once it listens.
        let mut line = String::new();
        if let Some(stdout) = server.stdout.take() {
            use std::io::BufRead as _;
            let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        }
        let url = line.trim().to_string();
        let out = results_root.join(format!("server-{revision}"));
        let ran = run_server_runner(dir, node, &url, revision, &out);
        let _ = server.kill();
        let _ = server.wait();
        ran?;
        let outcomes = server_outcomes(collect(&out)?);
        let requirements = Requirements::load_leg(dir, revision, "server")?;
        let listed = expected
            .get(&format!("server:{revision}"))
            .cloned()
            .unwrap_or_default();
        let report = judge(
            &format!("server {revision}"),
            &requirements,
            &outcomes,
            &listed,
        );
        println!("{}", report.text);
        passed += report.passed;
        failed += report.failed;
        problems.extend(report.problems);
    }
    Ok((passed, failed))
}

/// The runner names server result folders `server-<scenario>-<time>`; drop the `server-`.
fn server_outcomes(outcomes: BTreeMap<String, Outcome>) -> BTreeMap<String, Outcome> {
    outcomes
        .into_iter()
        .map(|(name, outcome)| match name.strip_prefix("server-") {
            Some(scenario) => (scenario.to_string(), outcome),
            None => (name, outcome),
        })
        .collect()
}

fn run_server_runner(
    dir: &Path,
    node: &Path,
    url: &str,
    revision: &str,
    out: &Path,
) -> Result<(), String> {
    if !url.starts_with("http://127.0.0.1:") {
        return Err(format!("{SERVER} printed no URL (got `{url}`)"));
    }
    let args = ["server", "--url", url, "--requirements", revision];
    let shown = format!("conformance server --url {url} --requirements {revision}");
    run_conformance(dir, node, &args.map(OsStr::new), &shown, out)
}

/// `npm ci` unless the installed tree matches the lockfile.
fn install(dir: &Path) -> Result<(), String> {
    let lock = dir.join("package-lock.json");
    let installed = dir.join("node_modules").join(".package-lock.json");
    let node = dir
        .join("node_modules")
        .join("node")
        .join("bin")
        .join("node");
    if newer_or_same(&installed, &lock) && node.exists() {
        eprintln!(
            "conformance: npm packages in {} are up to date",
            dir.display()
        );
        return Ok(());
    }
    run_in(
        dir,
        Command::new("npm").args(["ci", "--no-audit", "--no-fund", "--loglevel=error"]),
        "npm ci (is Node.js with npm installed?)",
    )
}

/// The `node` package fetches its binary in an install script; say so if it is missing.
fn check_node(node: &Path) -> Result<(), String> {
    let output = Command::new(node)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|err| {
            format!(
                "{} does not run ({err}); the `node` npm package installs it in a preinstall \
                 script, so npm must run install scripts",
                node.display()
            )
        })?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_string();
    if !version.starts_with("v22.") {
        return Err(format!(
            "{} is `{version}`, but the conformance runner needs Node 22",
            node.display()
        ));
    }
    Ok(())
}

/// Builds the client with the same flags as the test step (so their builds share artifacts)
/// and returns the binary's path.
fn build_client() -> Result<PathBuf, String> {
    build_example(CLIENT)
}

/// Builds example `name` as the test step does and returns its executable.
fn build_example(name: &str) -> Result<PathBuf, String> {
    let messages = Cmd::cargo([
        "build",
        "--workspace",
        "--all-features",
        "--example",
        name,
        "--message-format=json-render-diagnostics",
    ])
    .output()?;
    executable(&messages, name).ok_or_else(|| {
        format!("cargo built no executable for the example `{name}`; is it declared?")
    })
}

/// The executable cargo reported for target `name`, from `--message-format=json` lines.
fn executable(messages: &str, name: &str) -> Option<PathBuf> {
    messages
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["reason"] == "compiler-artifact")
        .filter(|message| message["target"]["name"] == name)
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
}

/// `<target>/conformance`, next to the profile directory the client was built in.
fn results_dir(client: &Path) -> PathBuf {
    // <target>/debug/examples/<client>
    client
        .ancestors()
        .nth(3)
        .map(|target| target.join("conformance"))
        .unwrap_or_else(|| workspace_root().join("target").join("conformance"))
}

/// Runs the runner's client suite for `--requirements revision`, saving results in `out` and
/// its output in `out.log`.
fn run_runner(
    dir: &Path,
    node: &Path,
    client: &Path,
    revision: &str,
    out: &Path,
) -> Result<(), String> {
    let args = [
        OsStr::new("client"),
        OsStr::new("--command"),
        client.as_os_str(),
        OsStr::new("--requirements"),
        OsStr::new(revision),
        OsStr::new("--timeout"),
        OsStr::new(SCENARIO_TIMEOUT_MS),
    ];
    let shown = format!("conformance client --requirements {revision}");
    run_conformance(dir, node, &args, &shown, out)
}

/// Runs the conformance runner with `args` and `-o out` in `dir`, after clearing `out`,
/// with its output in `out.log`; `shown` is the command as printed. The runner exits non-zero
/// when any scenario fails; the verdict is ours, from the checks it saved, so only a run that
/// saved nothing is an error.
fn run_conformance(
    dir: &Path,
    node: &Path,
    args: &[&OsStr],
    shown: &str,
    out: &Path,
) -> Result<(), String> {
    if out.exists() {
        std::fs::remove_dir_all(out)
            .map_err(|err| format!("cannot clear {}: {err}", out.display()))?;
    }
    let runner = dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let log = out.with_extension("log");
    if let Some(parent) = log.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|err| format!("cannot create {}: {err}", parent.display()))?;
    }
    let log_file = std::fs::File::create(&log)
        .map_err(|err| format!("cannot create {}: {err}", log.display()))?;
    let log_err = log_file
        .try_clone()
        .map_err(|err| format!("cannot reuse {}: {err}", log.display()))?;
    eprintln!("$ {shown} (log: {})", log.display());
    let status = Command::new(node)
        .arg(&runner)
        .args(args)
        .arg("-o")
        .arg(out)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err)
        .status()
        .map_err(|err| format!("the conformance runner did not start: {err}"))?;
    if !out.exists() {
        return Err(format!(
            "the conformance runner ({status}) saved no results; see {}",
            log.display()
        ));
    }
    Ok(())
}

/// Every scenario under `out`, by name, from its `checks.json`.
fn collect(out: &Path) -> Result<BTreeMap<String, Outcome>, String> {
    let mut outcomes = BTreeMap::new();
    let mut pending = vec![out.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|err| format!("cannot read {}: {err}", dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.file_name().is_some_and(|name| name == "checks.json") {
                let scenario_dir = path.parent().unwrap_or(out);
                let relative = scenario_dir
                    .strip_prefix(out)
                    .map(|p| p.to_string_lossy().replace('\\', "/"))
                    .unwrap_or_default();
                let text = std::fs::read_to_string(&path)
                    .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
                outcomes.insert(scenario_name(&relative), score(&text));
            }
        }
    }
    Ok(outcomes)
}

/// `auth/metadata-var1-2026-11-22T03-52-03-771Z` -> `auth/metadata-var1`.
fn scenario_name(dir: &str) -> String {
    // The runner appends `-` and an ISO timestamp with `:` and `.` replaced by `-`.
    let bytes = dir.as_bytes();
    let stamp = "-2026-11-22T03-52-03-771Z".len();
    if bytes.len() > stamp && bytes[bytes.len() - stamp] == b'-' && dir.ends_with('Z') {
        let candidate = &dir[bytes.len() - stamp + 1..];
        let digits = candidate.chars().filter(char::is_ascii_digit).count();
        if candidate.as_bytes().get(10) == Some(&b'T') && digits == 17 {
            return dir[..bytes.len() - stamp].to_string();
        }
    }
    dir.to_string()
}

/// The runner's tier-check verdict: at least one check succeeded and none failed. A file
/// that is not a list of checks is a failure.
fn score(checks_json: &str) -> Outcome {
    let Ok(Value::Array(checks)) = serde_json::from_str::<Value>(checks_json) else {
        return Outcome {
            passed: false,
            checks_passed: 0,
            checks_failed: 1,
        };
    };
    let count = |status: &str| checks.iter().filter(|c| c["status"] == status).count();
    let (checks_passed, checks_failed) = (count("SUCCESS"), count("FAILURE"));
    Outcome {
        passed: checks_failed == 0 && checks_passed > 0,
        checks_passed,
        checks_failed,
    }
}

/// The client scenarios a requirement set scores, and those it runs without scoring.
#[derive(Debug, Default, PartialEq)]
struct Requirements {
    scored: Vec<String>,
    unscored: BTreeMap<String, String>,
}

impl Requirements {
    /// Reads `requirements/<revision>.yaml` shipped with the runner.
    fn load(dir: &Path, revision: &str) -> Result<Self, String> {
        Self::load_leg(dir, revision, "client")
    }

    /// As [`Requirements::load`], for the `leg` (`client` or `server`) section.
    fn load_leg(dir: &Path, revision: &str, leg: &str) -> Result<Self, String> {
        let path = dir
            .join("node_modules")
            .join("@modelcontextprotocol")
            .join("conformance")
            .join("requirements")
            .join(format!("{revision}.yaml"));
        let text = std::fs::read_to_string(&path)
            .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
        let requirements = Self::parse_leg(&text, leg);
        if requirements.scored.is_empty() {
            return Err(format!("{} lists no {leg} scenarios", path.display()));
        }
        Ok(requirements)
    }

    /// The file's shape is fixed: top-level `client:` with `  - name` items, and
    /// `not_scored:` with `  - scenario: name` / `    leg: client` / `    reason: why` items.
    #[cfg(test)]
    fn parse(text: &str) -> Self {
        Self::parse_leg(text, "client")
    }

    /// The `leg` section's scored scenarios and the unscored ones of that leg.
    fn parse_leg(text: &str, wanted: &str) -> Self {
        let mut requirements = Self::default();
        let mut section = "";
        let mut entry: Option<(String, String, String)> = None;
        let finish = |entry: &mut Option<(String, String, String)>, out: &mut Self| {
            if let Some((scenario, leg, reason)) = entry.take()
                && leg == wanted
            {
                out.unscored.insert(scenario, reason);
            }
        };
        for line in text.lines() {
            let trimmed = line.trim();
            if trimmed.starts_with('#') || trimmed.is_empty() {
                continue;
            }
            if !line.starts_with(' ') && !line.starts_with('-') {
                finish(&mut entry, &mut requirements);
                section = trimmed.trim_end_matches(':');
                continue;
            }
            match section {
                _ if section == wanted => {
                    if let Some(name) = trimmed.strip_prefix("- ") {
                        requirements.scored.push(name.trim().to_string());
                    }
                }
                "not_scored" => {
                    if let Some(scenario) = trimmed.strip_prefix("- scenario:") {
                        finish(&mut entry, &mut requirements);
                        entry = Some((scenario.trim().to_string(), String::new(), String::new()));
                    } else if let Some((_, leg, reason)) = entry.as_mut() {
                        if let Some(value) = trimmed.strip_prefix("leg:") {
                            *leg = value.trim().to_string();
                        } else if let Some(value) = trimmed.strip_prefix("reason:") {
                            *reason = value.trim().to_string();
                        }
                    }
                }
                _ => {}
            }
        }
        finish(&mut entry, &mut requirements);
        requirements
    }
}

/// `{"<revision>": {"<scenario>": "<why it fails>"}}`.
type Expected = BTreeMap<String, BTreeMap<String, String>>;

fn load_expected(path: &Path) -> Result<Expected, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|err| format!("{} is not JSON: {err}", path.display()))?;
    let Value::Object(revisions) = value else {
        return Err(format!("{} must be an object of revisions", path.display()));
    };
    let mut expected = Expected::new();
    for (revision, scenarios) in revisions {
        if revision.starts_with('$') {
            // `$comment` and the like.
            continue;
        }
        let bare = revision.strip_prefix("server:").unwrap_or(&revision);
        if !REVISIONS.contains(&bare) {
            return Err(format!(
                "{}: unknown revision `{revision}` (known: {})",
                path.display(),
                REVISIONS.join(", ")
            ));
        }
        let Value::Object(scenarios) = scenarios else {
            return Err(format!(
                "{}: `{revision}` must map scenarios to reasons",
                path.display()
            ));
        };
        let mut listed = BTreeMap::new();
        for (scenario, reason) in scenarios {
            match reason.as_str() {
                Some(reason) if !reason.trim().is_empty() => {
                    listed.insert(scenario, reason.to_string());
                }
                _ => {
                    return Err(format!(
                        "{}: `{revision}` / `{scenario}` needs a reason (a non-empty string)",
                        path.display()
                    ));
                }
            }
        }
        expected.insert(revision, listed);
    }
    Ok(expected)
}

/// One revision's verdict.
#[derive(Debug, Default)]
struct Report {
    passed: usize,
    failed: usize,
    text: String,
    problems: Vec<String>,
}

fn judge(
    revision: &str,
    requirements: &Requirements,
    outcomes: &BTreeMap<String, Outcome>,
    listed: &BTreeMap<String, String>,
) -> Report {
    let mut report = Report::default();
    let mut lines = Vec::new();
    let missing = Outcome {
        passed: false,
        checks_passed: 0,
        checks_failed: 0,
    };
    for scenario in &requirements.scored {
        let outcome = outcomes.get(scenario).copied().unwrap_or(missing);
        let expected = listed.get(scenario);
        let mark = match (outcome.passed, expected) {
            (true, None) => "pass",
            (false, Some(_)) => "FAIL (expected)",
            (false, None) => {
                report.problems.push(format!(
                    "{revision}: `{scenario}` failed and is not in expected-failures.json"
                ));
                "FAIL (unexpected)"
            }
            (true, Some(_)) => {
                report.problems.push(format!(
                    "{revision}: `{scenario}` passes now; remove it from expected-failures.json"
                ));
                "pass (listed as failing)"
            }
        };
        if outcome.passed {
            report.passed += 1;
        } else {
            report.failed += 1;
        }
        lines.push(format!(
            "  {mark:<24} {scenario} ({} checks passed, {} failed)",
            outcome.checks_passed, outcome.checks_failed
        ));
    }
    let scored: BTreeSet<&String> = requirements.scored.iter().collect();
    for scenario in listed.keys().filter(|s| !scored.contains(s)) {
        report.problems.push(format!(
            "{revision}: expected-failures.json lists `{scenario}`, which {revision} does not score"
        ));
    }
    let mut unscored = Vec::new();
    for (scenario, reason) in &requirements.unscored {
        let verdict = match outcomes.get(scenario) {
            Some(outcome) if outcome.passed => "pass",
            Some(_) => "fail",
            None => "not run",
        };
        unscored.push(format!("  {verdict:<24} {scenario} (not scored: {reason})"));
    }
    report.text = format!(
        "conformance {revision}: {} passed, {} failed of {} scored scenarios\n{}\n{}",
        report.passed,
        report.failed,
        requirements.scored.len(),
        lines.join("\n"),
        unscored.join("\n")
    );
    report
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn scenario_names_lose_their_timestamp() {
        assert_eq!(
            scenario_name("auth/metadata-var1-2026-11-22T03-52-03-771Z"),
            "auth/metadata-var1"
        );
        assert_eq!(
            scenario_name("tools_call-2026-11-22T03-52-03-769Z"),
            "tools_call"
        );
        assert_eq!(scenario_name("tools_call"), "tools_call");
    }

    #[test]
    fn server_result_folders_lose_their_prefix() {
        let pass = Outcome {
            passed: true,
            checks_passed: 1,
            checks_failed: 0,
        };
        let found = BTreeMap::from([
            ("server-server-initialize".to_string(), pass),
            ("server-tools-list".to_string(), pass),
        ]);
        let names: Vec<String> = server_outcomes(found).into_keys().collect();
        assert_eq!(names, ["server-initialize", "tools-list"]);
    }

    #[test]
    fn a_scenario_passes_with_a_success_and_no_failure() {
        assert!(score(r#"[{"status":"SUCCESS"},{"status":"WARNING"}]"#).passed);
        assert!(!score(r#"[{"status":"SUCCESS"},{"status":"FAILURE"}]"#).passed);
        assert!(!score("[]").passed);
        assert!(!score("not json").passed);
    }

    #[test]
    fn requirements_list_scored_and_unscored_client_scenarios() {
        let text = "# comment\nserver:\n  - ping\n\nclient:\n  - initialize\n  - auth/basic-cimd\n\n\
                    not_scored:\n  - scenario: auth/dpop\n    leg: client\n    reason: extension\n  \
                    - scenario: tasks-lifecycle\n    leg: server\n    reason: extension\n    note: >-\n      long\n";
        let parsed = Requirements::parse(text);
        assert_eq!(parsed.scored, ["initialize", "auth/basic-cimd"]);
        assert_eq!(
            parsed.unscored,
            BTreeMap::from([("auth/dpop".to_string(), "extension".to_string())])
        );
    }

    #[test]
    fn unexpected_failures_and_stale_entries_are_problems() {
        let requirements = Requirements {
            scored: vec!["a".into(), "b".into(), "c".into()],
            unscored: BTreeMap::new(),
        };
        let pass = Outcome {
            passed: true,
            checks_passed: 1,
            checks_failed: 0,
        };
        let fail = Outcome {
            passed: false,
            checks_passed: 0,
            checks_failed: 1,
        };
        let outcomes = BTreeMap::from([("a".to_string(), pass), ("b".to_string(), fail)]);
        let listed = BTreeMap::from([
            ("a".to_string(), "why".to_string()),
            ("zzz".to_string(), "why".to_string()),
        ]);
        let report = judge("2026-07-28", &requirements, &outcomes, &listed);
        assert_eq!((report.passed, report.failed), (1, 2));
        let problems = report.problems.join("\n");
        assert!(problems.contains("`a` passes now"), "{problems}");
        assert!(problems.contains("`b` failed"), "{problems}");
        assert!(problems.contains("`c` failed"), "{problems}");
        assert!(problems.contains("lists `zzz`"), "{problems}");
    }
}
