//! The logic of the `tool_call` example, kept here so tests can drive it.
//!
//! `tool_call --root DIR [--settings FILE]... [--mode MODE] [--decide] TOOL 'JSON'`
//!
//! - With `--decide`, prints the verdict as one JSON line,
//!   `{"verdict":"allow|ask|deny","reason":…,"rule":…,"scope":…}`, and runs nothing.
//! - Without it, runs the call through an executor and prints its `ToolOutput`. With settings
//!   or a mode, the call is gated by that policy and a call that would ask is refused, as no
//!   one is there to answer; a search's withheld paths show in its output. Without either,
//!   running the program is the approval.

use std::path::PathBuf;

use mux::permission::{Mode, PermissionGate};
use mux::tool::builtin::{self, Sandbox};
use mux::tool::{ApprovalPolicy, CallScope, Executor, Registry, ToolCall};
use serde_json::Value;

use crate::permission_check::policy;

/// The usage line.
pub const USAGE: &str = "usage: tool_call --root DIR [--settings FILE]... [--mode MODE] [--decide] TOOL_NAME 'JSON_ARGS'";

/// Why the program could not run a call.
#[derive(Debug)]
pub enum Failure {
    /// The command line is wrong: exit 2.
    Usage(String),
    /// Something else went wrong: exit 1.
    Setup(String),
}

struct Args {
    root: PathBuf,
    settings: Vec<PathBuf>,
    mode: Option<Mode>,
    decide: bool,
    tool: String,
    input: Value,
}

fn parse(args: &[String]) -> Result<Args, Failure> {
    let usage = |problem: String| Failure::Usage(problem);
    let (mut root, mut settings, mut mode, mut decide) = (None, Vec::new(), None, false);
    let mut positional = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = || {
            args.next()
                .cloned()
                .ok_or_else(|| usage(format!("`{arg}` needs a value")))
        };
        match arg.as_str() {
            "--root" => root = Some(PathBuf::from(value()?)),
            "--settings" => settings.push(PathBuf::from(value()?)),
            "--mode" => mode = Some(value()?.parse::<Mode>().map_err(|e| usage(e.to_string()))?),
            "--decide" => decide = true,
            flag if flag.starts_with("--") => return Err(usage(format!("unknown flag `{flag}`"))),
            _ => positional.push(arg.clone()),
        }
    }
    let [tool, json] = <[String; 2]>::try_from(positional).map_err(|rest| {
        usage(format!(
            "expected TOOL_NAME and JSON_ARGS, got {} positional arguments",
            rest.len()
        ))
    })?;
    let input = serde_json::from_str(&json)
        .map_err(|err| usage(format!("JSON_ARGS is not valid JSON: {err}")))?;
    Ok(Args {
        root: root.ok_or_else(|| usage("`--root DIR` is required".into()))?,
        settings,
        mode,
        decide,
        tool,
        input,
    })
}

/// Runs the command line (without the program name) and returns the JSON to print.
pub async fn run(args: &[String]) -> Result<Value, Failure> {
    let args = parse(args)?;
    let sandbox = Sandbox::new(&args.root).map_err(|err| Failure::Usage(err.to_string()))?;
    let gated = !args.settings.is_empty() || args.mode.is_some();
    let registry = Registry::new();
    builtin::register(&registry, &sandbox)
        .map_err(|err| Failure::Setup(format!("cannot set up the built-in tools: {err}")))?;
    let permissions = if gated || args.decide {
        Some(policy(&args.root, &args.settings, args.mode).map_err(Failure::Usage)?)
    } else {
        None
    };
    if args.decide {
        let tool = registry
            .get(&args.tool)
            .ok_or_else(|| Failure::Usage(format!("no built-in tool is named `{}`", args.tool)))?;
        let permissions = permissions.ok_or_else(|| Failure::Setup("no policy".into()))?;
        let verdict = permissions.check(tool.spec(), &tool.subject(&args.input));
        return serde_json::to_value(verdict).map_err(|err| Failure::Setup(err.to_string()));
    }
    let executor = match permissions.filter(|_| gated) {
        Some(permissions) => Executor::builder(registry)
            .gate(PermissionGate::without_asker(permissions))
            .build(),
        // Running this program is the approval: no gate asks again.
        None => Executor::builder(registry)
            .approval_policy(ApprovalPolicy::Never)
            .build(),
    };
    let call = ToolCall::new("cli", args.tool, args.input);
    let output = executor
        .execute(call, &CallScope::default())
        .await
        .into_output();
    serde_json::to_value(output).map_err(|err| Failure::Setup(err.to_string()))
}
