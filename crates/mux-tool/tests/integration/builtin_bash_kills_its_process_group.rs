//! `bash` against real child processes: the root as working directory, exit codes, streamed
//! output, head-and-tail caps, and the whole process group killed on timeout, cancel, drop and
//! exit, checked by the grandchild's pid.
#![cfg(all(feature = "builtin", target_os = "linux"))]

use std::path::Path;
use std::time::Duration;

use mux_tool::builtin::{Bash, BashArgs, Sandbox};

use crate::common::{is_gone, wait_gone};
use mux_tool::{
    ApprovalPolicy, CallScope, ProgressSender, Registry, ToolCall, ToolContext, ToolError,
    ToolOutput, ToolUpdate, TypedTool,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// A command whose grandchild (`sleep`, started by the shell) writes its pid and lives long.
const SLEEPING_GRANDCHILD: &str = "sleep 1000 & echo $! > sleep.pid; wait";

fn args(command: &str, timeout_ms: Option<u64>) -> BashArgs {
    serde_json::from_value(json!({"command": command, "timeout_ms": timeout_ms})).unwrap()
}

async fn run(bash: &Bash, command: &str) -> ToolOutput {
    bash.call(args(command, None), ToolContext::new("c"))
        .await
        .unwrap()
}

/// Waits (at most 10 s) for the grandchild to write its pid.
async fn grandchild_pid(root: &Path) -> u32 {
    for _ in 0..200 {
        if let Ok(text) = std::fs::read_to_string(root.join("sleep.pid"))
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the grandchild never wrote its pid");
}

fn setup() -> (tempfile::TempDir, Bash) {
    let dir = tempfile::tempdir().unwrap();
    let bash = Bash::new(Sandbox::new(dir.path()).unwrap());
    (dir, bash)
}

#[tokio::test]
async fn runs_in_the_root_and_reports_the_exit_code() {
    let (dir, bash) = setup();
    let out = run(&bash, "pwd").await;
    assert!(!out.is_error);
    assert_eq!(
        out.to_text().trim(),
        dir.path().canonicalize().unwrap().to_str().unwrap()
    );
    assert_eq!(out.metadata["exit_code"], json!(0));

    let out = run(&bash, "echo oops >&2; exit 3").await;
    assert!(out.is_error);
    assert_eq!(out.to_text(), "oops\n[exit code 3]");
    assert_eq!(out.metadata["exit_code"], json!(3));

    let out = run(&bash, "true").await;
    assert_eq!(out.to_text(), "(no output)");
}

#[tokio::test]
async fn output_is_streamed_through_the_progress_sender() {
    let (_dir, bash) = setup();
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let cx = ToolContext::new("c").with_progress(ProgressSender::new(tx));
    let out = bash
        .call(
            args(
                "echo one; sleep 0.1; echo two >&2; printf 'thr\\xc3'; printf '\\xa9e'",
                None,
            ),
            cx,
        )
        .await
        .unwrap();
    let mut streamed = String::new();
    while let Ok(event) = rx.try_recv() {
        if let ToolUpdate::Output { text } = event.update {
            assert!(
                !text.contains('\u{FFFD}'),
                "a character split across chunks is held back"
            );
            streamed.push_str(&text);
        }
    }
    assert_eq!(streamed, "one\ntwo\nthrée");
    assert_eq!(out.to_text(), "one\ntwo\nthrée");
}

#[tokio::test]
async fn long_multibyte_output_keeps_head_and_tail() {
    let (_dir, bash) = setup();
    let bash = bash.max_output_bytes(200);
    let out = run(&bash, "for i in $(seq 1 2000); do echo \"行$i\"; done").await;
    let text = out.to_text();
    assert!(text.starts_with("行1\n行2\n"), "{text}");
    assert!(text.ends_with("行1999\n行2000\n"), "{text}");
    assert!(text.contains("bytes of output omitted"), "{text}");
    assert!(!text.contains('\u{FFFD}'), "{text}");
    let omitted = out.metadata["omitted_bytes"].as_u64().unwrap();
    let total: usize = (1..=2000).map(|i| format!("行{i}\n").len()).sum();
    assert_eq!(omitted as usize, total - 200);
}

#[tokio::test]
async fn a_timeout_kills_the_grandchild() {
    let (dir, bash) = setup();
    let call = bash.call(args(SLEEPING_GRANDCHILD, Some(1500)), ToolContext::new("c"));
    let (out, pid) = tokio::join!(call, grandchild_pid(dir.path()));
    let out = out.unwrap();
    assert!(out.is_error);
    assert!(
        out.to_text().contains("timed out after 1500 ms"),
        "{}",
        out.to_text()
    );
    assert_eq!(out.metadata["timed_out"], json!(true));
    assert!(
        wait_gone(pid).await,
        "grandchild {pid} survived the timeout"
    );
}

#[tokio::test]
async fn a_cancelled_call_kills_the_grandchild() {
    let (dir, bash) = setup();
    let cancel = CancellationToken::new();
    let cx = ToolContext::new("c").with_cancellation(cancel.clone());
    let call = tokio::spawn(async move { bash.call(args(SLEEPING_GRANDCHILD, None), cx).await });
    let pid = grandchild_pid(dir.path()).await;
    assert!(!is_gone(pid), "the grandchild runs before the cancel");
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the call stops after the cancel")
        .unwrap();
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    assert!(wait_gone(pid).await, "grandchild {pid} survived the cancel");
}

#[tokio::test]
async fn a_dropped_call_kills_the_grandchild() {
    let (dir, bash) = setup();
    let call = tokio::spawn(async move {
        bash.call(args(SLEEPING_GRANDCHILD, None), ToolContext::new("c"))
            .await
    });
    let pid = grandchild_pid(dir.path()).await;
    assert!(!is_gone(pid));
    call.abort();
    let _ = call.await;
    assert!(
        wait_gone(pid).await,
        "grandchild {pid} survived the aborted task"
    );
}

#[tokio::test]
async fn the_executor_timeout_kills_the_grandchild_within_the_grace_period() {
    let dir = tempfile::tempdir().unwrap();
    let registry = Registry::new();
    registry
        .register_typed(Bash::new(Sandbox::new(dir.path()).unwrap()))
        .unwrap();
    let executor = mux_tool::Executor::builder(registry)
        .approval_policy(ApprovalPolicy::Never)
        .timeout(Duration::from_millis(1500))
        .build();
    let scope = CallScope::default();
    let call = executor.execute(
        ToolCall::new("1", "bash", json!({"command": SLEEPING_GRANDCHILD})),
        &scope,
    );
    let (outcome, pid) = tokio::join!(call, grandchild_pid(dir.path()));
    assert!(outcome.is_error());
    assert!(
        wait_gone(pid).await,
        "grandchild {pid} survived the executor timeout"
    );
}

#[tokio::test]
async fn background_jobs_are_killed_when_the_command_exits() {
    let (dir, bash) = setup();
    let out = run(&bash, "sleep 1000 & echo $! > sleep.pid; echo started").await;
    assert_eq!(out.to_text(), "started\n");
    let pid = grandchild_pid(dir.path()).await;
    assert!(
        wait_gone(pid).await,
        "background job {pid} outlived its command"
    );
}

#[tokio::test]
async fn the_environment_is_an_allow_list() {
    let (_dir, bash) = setup();
    // Cargo sets CARGO_PKG_NAME for the test process; a command gets it only when passed on.
    let probe = "echo \"${CARGO_PKG_NAME-unset} ${PATH:+path} ${HOME:+home}\"";
    assert_eq!(run(&bash, probe).await.to_text(), "unset path home\n");
    let passed = bash.clone().pass_env("CARGO_PKG_NAME");
    assert_eq!(run(&passed, probe).await.to_text(), "mux-tool path home\n");
    let scrubbed = bash.scrub_env(["PATH"]);
    assert_eq!(run(&scrubbed, probe).await.to_text(), "unset path \n");
}

#[tokio::test]
async fn a_command_gets_its_calls_effect_key() {
    let (_dir, bash) = setup();
    let probe = "printf '%s %s' \"$MUX_EFFECT_KEY\" \"$MUX_EFFECT_ATTEMPT\"";
    let keyed = ToolContext::new("c9").with_effect_key(mux_tool::EffectKey::new("s:3:c9", 2));
    let out = bash.call(args(probe, None), keyed).await.unwrap();
    assert_eq!(out.to_text(), "s:3:c9 2");
    // Without a scope, the call id is the key.
    let out = bash
        .call(args(probe, None), ToolContext::new("c1"))
        .await
        .unwrap();
    assert_eq!(out.to_text(), "c1 1");
    // A key no environment can hold is left out; the command still runs.
    let hostile = ToolContext::new("c\0x").with_effect_key(mux_tool::EffectKey::new("a\0b", 1));
    let out = bash.call(args(probe, None), hostile).await.unwrap();
    assert_eq!(out.to_text(), " ");
}

#[tokio::test]
async fn bad_arguments_and_a_missing_shell_are_errors() {
    let (_dir, bash) = setup();
    let err = bash
        .call(args("echo", Some(0)), ToolContext::new("c"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("at least 1"), "{err}");
    let err = bash
        .call(args("echo", Some(700_000)), ToolContext::new("c"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("maximum"), "{err}");
    let err = bash
        .call(args("  ", None), ToolContext::new("c"))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("empty"), "{err}");
    let missing = bash.shell("/nonexistent/shell");
    let err = missing
        .call(args("echo", None), ToolContext::new("c"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("cannot start /nonexistent/shell"),
        "{err}"
    );
}
