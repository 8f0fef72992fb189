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

/// What the command line asks for.
struct Request {
    root: String,
    tool: String,
    args: Value,
}

fn parse(args: &[String]) -> Result<Request, String> {
    let [flag, root, tool, json] = args else {
        return Err(format!("expected 4 arguments, got {}", args.len()));
    };
    if flag != "--root" {
        return Err(format!("expected --root first, got {flag:?}"));
    }
    let args: Value =
        serde_json::from_str(json).map_err(|err| format!("JSON_ARGS is not valid JSON: {err}"))?;
    Ok(Request {
        root: root.clone(),
        tool: tool.clone(),
        args,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let request = match parse(&args) {
        Ok(request) => request,
        Err(problem) => {
            eprintln!("{problem}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let sandbox = match Sandbox::new(&request.root) {
        Ok(sandbox) => sandbox,
        Err(err) => {
            eprintln!("{err}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let registry = Registry::new();
    if let Err(err) = builtin::register(&registry, &sandbox) {
        eprintln!("cannot set up the built-in tools: {err}");
        return ExitCode::FAILURE;
    }
    // Running this program is the approval: no gate asks again.
    let executor = Executor::builder(registry)
        .approval_policy(ApprovalPolicy::Never)
        .build();
    let call = ToolCall::new("cli", request.tool, request.args);
    let output = executor
        .execute(call, &CallScope::default())
        .await
        .into_output();
    match serde_json::to_string_pretty(&output) {
        Ok(json) => {
            println!("{json}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("cannot print the output: {err}");
            ExitCode::FAILURE
        }
    }
}
