//! Runs one built-in tool, sandboxed to a root directory, and prints its `ToolOutput` as JSON;
//! or, with `--decide`, prints what a permission policy decides for the call and runs nothing.
//!
//! Run: `cargo run --example tool_call -- --root DIR [--settings FILE]... [--mode MODE]
//! [--decide] TOOL_NAME 'JSON_ARGS'`, e.g.
//! `cargo run --example tool_call -- --root . grep '{"pattern": "fn main"}'`, or
//! `cargo run --example tool_call -- --root . --settings .claude/settings.json --decide bash '{"command": "rm -rf x"}'`
//!
//! With settings or a mode, a call that would ask is refused (no one is there to answer).
//! A refused or failed call prints an output with `is_error: true` and exits 0; bad usage
//! (missing arguments, a root that is not a directory, arguments that are not JSON, a settings
//! file that does not load) exits 2.

use std::process::ExitCode;

use mux_examples::tool_call::{Failure, USAGE, run};

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args).await {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(Failure::Usage(problem)) => {
            eprintln!("{problem}\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Setup(problem)) => {
            eprintln!("{problem}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use super::*;
    use serde_json::Value;

    fn args(root: &std::path::Path, rest: &[&str]) -> Vec<String> {
        let mut all = vec!["--root".to_owned(), root.to_string_lossy().into_owned()];
        all.extend(rest.iter().map(|s| (*s).to_owned()));
        all
    }

    fn text(output: &Value) -> String {
        output["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|block| block["text"].as_str())
            .collect()
    }

    #[tokio::test]
    async fn a_call_returns_its_output_and_a_refusal_is_an_error_output() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
        let out = run(&args(dir.path(), &["read_file", r#"{"path": "a.txt"}"#]))
            .await
            .unwrap();
        assert_eq!(text(&out), "     1\thello");
        let out = run(&args(dir.path(), &["read_file", r#"{"path": "../x"}"#]))
            .await
            .unwrap();
        assert_eq!(out["is_error"], true);
        assert!(text(&out).contains("`..`"), "{out}");
    }

    #[tokio::test]
    async fn decide_prints_the_verdict_and_runs_nothing_and_a_search_withholds() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("secrets")).unwrap();
        std::fs::write(root.join("secrets/key"), "token hunter2\n").unwrap();
        std::fs::write(root.join("notes.txt"), "token public\n").unwrap();
        let settings = root.join("settings.json");
        std::fs::write(
            &settings,
            r#"{"permissions":{"allow":["Bash(git status)","Read(./**)"],"deny":["Bash(rm:*)","Read(./secrets/**)"]}}"#,
        )
        .unwrap();
        let settings = settings.to_string_lossy().into_owned();
        let decide = |tool: &'static str, json: &'static str, mode: &'static str| {
            let settings = settings.clone();
            let root = root.clone();
            async move {
                run(&args(
                    &root,
                    &[
                        "--settings",
                        &settings,
                        "--mode",
                        mode,
                        "--decide",
                        tool,
                        json,
                    ],
                ))
                .await
                .unwrap()
            }
        };
        let out = decide(
            "bash",
            r#"{"command": "rm -rf secrets"}"#,
            "bypassPermissions",
        )
        .await;
        assert_eq!(out["verdict"], "deny", "{out}");
        assert_eq!(out["rule"], "Bash(rm:*)", "{out}");
        assert!(root.join("secrets/key").exists());
        let out = decide("bash", r#"{"command": "git status"}"#, "default").await;
        assert_eq!(out["verdict"], "allow", "{out}");
        let out = decide("grep", r#"{"pattern": "k", "path": "secrets"}"#, "plan").await;
        assert_eq!(out["verdict"], "deny", "{out}");

        // Run for real: the search over the root leaves the secrets out and says so.
        let out = run(&args(
            &root,
            &["--settings", &settings, "grep", r#"{"pattern": "token"}"#],
        ))
        .await
        .unwrap();
        let shown = text(&out);
        assert!(shown.contains("notes.txt:1:token public"), "{shown}");
        assert!(
            !shown.contains("hunter2") && shown.contains("withheld"),
            "{shown}"
        );
        // A call that would ask is refused: nobody is there to answer.
        let out = run(&args(
            &root,
            &[
                "--settings",
                &settings,
                "write_file",
                r#"{"path": "n.txt", "content": "x"}"#,
            ],
        ))
        .await
        .unwrap();
        assert_eq!(out["is_error"], true, "{out}");
        assert!(!root.join("n.txt").exists());
    }

    #[tokio::test]
    async fn bad_usage_is_reported_as_usage() {
        let dir = tempfile::tempdir().unwrap();
        let settings = dir.path().join("bad.json");
        std::fs::write(&settings, r#"{"permissions":{"deny":["Bsh(rm:*)"]}}"#).unwrap();
        let settings = settings.to_string_lossy().into_owned();
        for bad in [
            vec!["read_file".to_owned()],
            args(dir.path(), &["read_file", "not json"]),
            args(&dir.path().join("missing"), &["read_file", "{}"]),
            args(
                dir.path(),
                &["--settings", &settings, "--decide", "bash", "{}"],
            ),
            args(dir.path(), &["--mode", "yolo", "bash", "{}"]),
        ] {
            assert!(matches!(run(&bad).await, Err(Failure::Usage(_))), "{bad:?}");
        }
    }
}
