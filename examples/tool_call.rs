//! Runs one built-in tool, sandboxed to a root directory, and prints its `ToolOutput` as JSON.
//!
//! Run: `cargo run --example tool_call -- --root DIR TOOL_NAME 'JSON_ARGS'`, e.g.
//! `cargo run --example tool_call -- --root . grep '{"pattern": "fn main"}'`
//!
//! A refused or failed call prints an output with `is_error: true` and exits 0; bad usage
//! (missing arguments, a root that is not a directory, arguments that are not JSON) exits 2.

use std::process::ExitCode;

use mux::prelude::*;
use mux::tool::ApprovalPolicy;
use mux::tool::builtin::{self, Sandbox};
use serde_json::Value;

const USAGE: &str = "usage: tool_call --root DIR TOOL_NAME 'JSON_ARGS'";

/// Why the program could not run a call.
enum Failure {
    /// The command line is wrong: exit 2.
    Usage(String),
    /// Something else went wrong: exit 1.
    Setup(String),
}

/// Parses the command line, runs the call through an executor and returns its output.
async fn run(args: &[String]) -> Result<ToolOutput, Failure> {
    let [flag, root, tool, json] = args else {
        return Err(Failure::Usage(format!(
            "expected 4 arguments, got {}",
            args.len()
        )));
    };
    if flag != "--root" {
        return Err(Failure::Usage(format!(
            "expected --root first, got {flag:?}"
        )));
    }
    let input: Value = serde_json::from_str(json)
        .map_err(|err| Failure::Usage(format!("JSON_ARGS is not valid JSON: {err}")))?;
    let sandbox = Sandbox::new(root).map_err(|err| Failure::Usage(err.to_string()))?;
    let registry = Registry::new();
    builtin::register(&registry, &sandbox)
        .map_err(|err| Failure::Setup(format!("cannot set up the built-in tools: {err}")))?;
    // Running this program is the approval: no gate asks again.
    let executor = Executor::builder(registry)
        .approval_policy(ApprovalPolicy::Never)
        .build();
    let call = ToolCall::new("cli", tool.clone(), input);
    Ok(executor
        .execute(call, &CallScope::default())
        .await
        .into_output())
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args).await {
        Ok(output) => match serde_json::to_string_pretty(&output) {
            Ok(json) => {
                println!("{json}");
                ExitCode::SUCCESS
            }
            Err(err) => {
                eprintln!("cannot print the output: {err}");
                ExitCode::FAILURE
            }
        },
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

    fn args(root: &std::path::Path, tool: &str, json: &str) -> Vec<String> {
        vec![
            "--root".into(),
            root.to_string_lossy().into_owned(),
            tool.into(),
            json.into(),
        ]
    }

    #[tokio::test]
    async fn a_call_returns_its_output_and_a_refusal_is_an_error_output() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "hello\n").unwrap();
        let Ok(out) = run(&args(dir.path(), "read_file", r#"{"path": "a.txt"}"#)).await else {
            panic!("the call ran");
        };
        assert_eq!(out.to_text(), "     1\thello");
        let Ok(out) = run(&args(dir.path(), "read_file", r#"{"path": "../x"}"#)).await else {
            panic!("a refused call is still an output");
        };
        assert!(out.is_error && out.to_text().contains("`..`"));
    }

    #[tokio::test]
    async fn bad_usage_is_reported_as_usage() {
        let dir = tempfile::tempdir().unwrap();
        for bad in [
            vec!["read_file".to_owned()],
            args(dir.path(), "read_file", "not json"),
            args(&dir.path().join("missing"), "read_file", "{}"),
        ] {
            assert!(matches!(run(&bad).await, Err(Failure::Usage(_))), "{bad:?}");
        }
    }
}
