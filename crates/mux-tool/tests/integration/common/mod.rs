//! Tools and helpers shared by the integration tests.
#![allow(dead_code, unreachable_pub)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mux_tool::{Registry, Subject, ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;

#[cfg(feature = "builtin")]
pub mod git;

#[path = "../../support/tools.rs"]
mod tools;
pub use tools::*;

#[derive(Deserialize, JsonSchema)]
pub struct SleepArgs {
    /// Milliseconds to sleep.
    pub ms: u64,
    /// Echoed back after the sleep.
    #[serde(default)]
    pub tag: String,
}

/// Sleeps, then returns its tag; read-only. Counts how many calls noticed cancellation.
#[derive(Default, Clone)]
pub struct Sleep {
    pub saw_cancel: Arc<AtomicUsize>,
}

impl TypedTool for Sleep {
    type Args = SleepArgs;
    const NAME: &'static str = "sleep";
    fn description(&self) -> String {
        "Sleeps".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, args: SleepArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(args.ms)) => Ok(ToolOutput::text(args.tag)),
            () = cx.cancellation().cancelled() => {
                self.saw_cancel.fetch_add(1, Ordering::SeqCst);
                Err(ToolError::Cancelled)
            }
        }
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct RunArgs {
    /// A shell command.
    pub command: String,
}

/// Pretends to run a command; not read-only, so it needs approval.
pub struct Run;

impl TypedTool for Run {
    type Args = RunArgs;
    const NAME: &'static str = "run";
    fn description(&self) -> String {
        "Runs a command".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::destructive()
    }
    fn subject(&self, args: &RunArgs) -> Subject {
        Subject::command(&args.command)
    }
    async fn call(&self, args: RunArgs, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text(format!("ran {}", args.command)))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct NoArgs {}

/// Panics when called.
pub struct Explode;

impl TypedTool for Explode {
    type Args = NoArgs;
    const NAME: &'static str = "explode";
    fn description(&self) -> String {
        "Panics".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, _args: NoArgs, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        panic!("boom in the tool")
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct BigArgs {
    /// The text to repeat.
    pub unit: String,
    /// How many times.
    pub times: usize,
}

/// Returns a large text; read-only.
pub struct Big;

impl TypedTool for Big {
    type Args = BigArgs;
    const NAME: &'static str = "big";
    fn description(&self) -> String {
        "Returns big output".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, args: BigArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        cx.output("starting").await;
        cx.progress(1.0, Some(2.0), Some("halfway".into())).await;
        Ok(ToolOutput::text(args.unit.repeat(args.times)))
    }
}

/// Runs `call` on `executor` in the default scope; its output, which must be an error.
pub async fn failed(executor: &mux_tool::Executor, call: mux_tool::ToolCall) -> ToolOutput {
    let outcome = executor
        .execute(call, &mux_tool::CallScope::default())
        .await;
    let output = outcome.into_output();
    assert!(output.is_error, "{output:?}");
    output
}

/// A registry holding every test tool.
pub fn registry() -> Registry {
    let registry = Registry::new();
    registry.register_typed(Echo).unwrap();
    registry.register_typed(Sleep::default()).unwrap();
    registry.register_typed(Run).unwrap();
    registry.register_typed(Explode).unwrap();
    registry.register_typed(Big).unwrap();
    registry
}

/// Whether the process is gone (or a zombie waiting for a reaper: dead all the same).
pub fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with(['Z', 'X'])),
    }
}

/// Waits (at most 10 s) for the process to be gone.
pub async fn wait_gone(pid: u32) -> bool {
    for _ in 0..200 {
        if is_gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// `bash` confined to `root` under `policy`.
#[cfg(feature = "builtin")]
pub fn bash(
    root: &std::path::Path,
    policy: mux_tool::builtin::SandboxPolicy,
) -> mux_tool::builtin::Bash {
    mux_tool::builtin::Bash::new(mux_tool::builtin::Sandbox::new(root).unwrap())
        .sandbox_policy(policy)
}

/// Runs `command` through `bash` and returns its output (a refusal is an output, not an error).
#[cfg(feature = "builtin")]
pub async fn run(bash: &mux_tool::builtin::Bash, command: &str) -> ToolOutput {
    let args: mux_tool::builtin::BashArgs =
        serde_json::from_value(serde_json::json!({"command": command})).unwrap();
    bash.call(args, ToolContext::new("c")).await.unwrap()
}

/// A temp dir holding a sandbox root and a sibling folder outside it (paths canonical).
pub struct Layout {
    pub _dir: tempfile::TempDir,
    pub root: std::path::PathBuf,
    pub outside: std::path::PathBuf,
}

/// A new [`Layout`], both folders empty.
pub fn layout() -> Layout {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("root");
    let outside = base.join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    Layout {
        _dir: dir,
        root,
        outside,
    }
}
