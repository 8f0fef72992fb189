//! The executor's pipeline order: validation, pre-hooks, approval gate, post-hooks.

use crate::common;

use std::sync::{Arc, Mutex};

use mux_tool::approval::gate_fn;
use mux_tool::hooks::{post_hook_fn, pre_hook_fn};
use mux_tool::{
    ApprovalPolicy, BoxFuture, CallScope, ExecError, Executor, GateVerdict, HookError,
    PostHookAction, PreHook, PreHookAction, Subject, ToolCall, ToolOutput, ToolSpec,
};
use serde_json::json;

fn call(name: &str, input: serde_json::Value) -> ToolCall {
    ToolCall::new("call-1", name, input)
}

type Log = Arc<Mutex<Vec<String>>>;

fn logging_pre(log: &Log, name: &'static str, action: PreHookAction) -> impl PreHook {
    let log = Arc::clone(log);
    pre_hook_fn(name, move |call, _| {
        log.lock()
            .unwrap()
            .push(format!("pre:{name}:{}", call.input));
        action.clone()
    })
}

#[tokio::test]
async fn hooks_run_in_order_around_the_gate() {
    let log: Log = Log::default();
    let gate_log = Arc::clone(&log);
    let post_log = Arc::clone(&log);
    let executor = Executor::builder(common::registry())
        .pre_hook(logging_pre(&log, "first", PreHookAction::Continue))
        .pre_hook(logging_pre(&log, "second", PreHookAction::Continue))
        .gate(gate_fn(move |request| {
            gate_log
                .lock()
                .unwrap()
                .push(format!("gate:{}", request.call.name));
            async { GateVerdict::allow() }
        }))
        .post_hook(post_hook_fn("after", move |call, result| {
            let text = result.as_ref().unwrap().to_text();
            post_log
                .lock()
                .unwrap()
                .push(format!("post:{}:{text}", call.name));
            PostHookAction::Keep
        }))
        .build();

    let outcome = executor
        .execute(call("echo", json!({"text": "hi"})), &CallScope::default())
        .await;

    assert_eq!(outcome.output().to_text(), "hi");
    assert_eq!(
        *log.lock().unwrap(),
        [
            r#"pre:first:{"text":"hi"}"#,
            r#"pre:second:{"text":"hi"}"#,
            "gate:echo",
            "post:echo:hi"
        ]
    );
}

#[tokio::test]
async fn a_blocking_hook_stops_the_call_and_later_hooks() {
    let log: Log = Log::default();
    let executor = Executor::builder(common::registry())
        .pre_hook(logging_pre(&log, "guard", PreHookAction::deny("not today")))
        .pre_hook(logging_pre(&log, "never", PreHookAction::Continue))
        .build();

    let outcome = executor
        .execute(call("echo", json!({"text": "hi"})), &CallScope::default())
        .await;

    let err = outcome.result.as_ref().unwrap_err();
    assert!(
        matches!(err, ExecError::Blocked { hook, reason, .. } if hook == "guard" && reason == "not today")
    );
    assert_eq!(
        outcome.output().to_text(),
        "tool `echo` was blocked by hook `guard`: not today"
    );
    assert_eq!(log.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_rewrite_changes_what_later_hooks_the_gate_and_the_tool_see() {
    let log: Log = Log::default();
    let seen_by_gate: Arc<Mutex<Option<Subject>>> = Arc::default();
    let gate_seen = Arc::clone(&seen_by_gate);
    let executor = Executor::builder(common::registry())
        .pre_hook(pre_hook_fn("safer", |call, _| {
            let command = call.input["command"].as_str().unwrap_or_default();
            PreHookAction::Rewrite(json!({"command": format!("{command} --dry-run")}))
        }))
        .pre_hook(logging_pre(&log, "observer", PreHookAction::Continue))
        .gate(gate_fn(move |request| {
            *gate_seen.lock().unwrap() = Some(request.subject.clone());
            async { GateVerdict::allow() }
        }))
        .build();

    let outcome = executor
        .execute(
            call("run", json!({"command": "deploy"})),
            &CallScope::default(),
        )
        .await;

    assert_eq!(outcome.output().to_text(), "ran deploy --dry-run");
    assert_eq!(outcome.call.input, json!({"command": "deploy --dry-run"}));
    assert_eq!(
        *log.lock().unwrap(),
        [r#"pre:observer:{"command":"deploy --dry-run"}"#]
    );
    assert_eq!(
        *seen_by_gate.lock().unwrap(),
        Some(Subject::command("deploy --dry-run"))
    );
}

#[tokio::test]
async fn an_invalid_rewrite_is_refused() {
    let executor = Executor::builder(common::registry())
        .pre_hook(pre_hook_fn("breaker", |_, _| {
            PreHookAction::Rewrite(json!({"command": 5}))
        }))
        .approval_policy(ApprovalPolicy::Never)
        .build();
    let outcome = executor
        .execute(call("run", json!({"command": "ls"})), &CallScope::default())
        .await;
    let text = outcome.output().to_text();
    assert!(
        text.starts_with("hook `breaker` rewrote the arguments of tool `run` into invalid ones"),
        "{text}"
    );
    assert!(text.contains("at `/command`"), "{text}");
}

#[tokio::test]
async fn denial_reason_reaches_the_output() {
    let executor = Executor::builder(common::registry())
        .gate(gate_fn(|request| async move {
            match request.subject {
                Subject::Command(c) if c.contains("rm") => {
                    GateVerdict::deny(format!("`{c}` deletes files"))
                }
                _ => GateVerdict::allow(),
            }
        }))
        .build();
    let output = common::failed(&executor, call("run", json!({"command": "rm -rf /"}))).await;
    assert_eq!(
        output.to_text(),
        "permission to run tool `run` was denied: `rm -rf /` deletes files"
    );
    assert_eq!(output.metadata["mux.error"], "denied");
}

#[tokio::test]
async fn without_a_gate_a_call_that_needs_approval_is_refused_with_a_typed_error() {
    let executor = Executor::new(common::registry());
    let refused = executor
        .execute(call("run", json!({"command": "ls"})), &CallScope::default())
        .await;
    assert!(
        matches!(refused.result, Err(ExecError::ApprovalRequired { ref tool }) if tool == "run")
    );

    // Read-only tools run under the default policy.
    let echoed = executor
        .execute(call("echo", json!({"text": "ok"})), &CallScope::default())
        .await;
    assert_eq!(echoed.output().to_text(), "ok");

    // Under `Always`, even read-only tools need a gate.
    let strict = Executor::builder(common::registry())
        .approval_policy(ApprovalPolicy::Always)
        .build();
    let refused = strict
        .execute(call("echo", json!({"text": "ok"})), &CallScope::default())
        .await;
    assert!(matches!(
        refused.result,
        Err(ExecError::ApprovalRequired { .. })
    ));
}

#[tokio::test]
async fn a_pre_approving_hook_is_passed_to_the_gate_and_suffices_without_one() {
    let allow = || pre_hook_fn("trusted", |_, _| PreHookAction::Allow);
    let no_gate = Executor::builder(common::registry())
        .pre_hook(allow())
        .build();
    let ran = no_gate
        .execute(call("run", json!({"command": "ls"})), &CallScope::default())
        .await;
    assert_eq!(ran.output().to_text(), "ran ls");

    // With a gate, the gate still decides: a deny rule holds over a hook's approval.
    let with_gate = Executor::builder(common::registry())
        .pre_hook(allow())
        .gate(gate_fn(|request| async move {
            assert_eq!(request.pre_approved_by.as_deref(), Some("trusted"));
            GateVerdict::deny("denied by rule")
        }))
        .build();
    let denied = with_gate
        .execute(call("run", json!({"command": "ls"})), &CallScope::default())
        .await;
    assert!(matches!(denied.result, Err(ExecError::Denied { .. })));
}

/// A hook that asks: the request carries it to the gate (no side channel), it wins over
/// another hook's approval, it may rewrite the arguments too, and with no gate to ask the
/// call is refused as needing approval.
#[tokio::test]
async fn a_hook_that_asks_is_carried_to_the_gate_and_refuses_without_one() {
    let ask = |input: Option<serde_json::Value>| {
        pre_hook_fn("careful", move |_, _| PreHookAction::Ask {
            input: input.clone(),
        })
    };
    let no_gate = Executor::builder(common::registry())
        .pre_hook(pre_hook_fn("trusted", |_, _| PreHookAction::Allow))
        .pre_hook(ask(None))
        .build();
    let refused = no_gate
        .execute(call("run", json!({"command": "ls"})), &CallScope::default())
        .await;
    assert!(
        matches!(refused.result, Err(ExecError::ApprovalRequired { .. })),
        "{:?}",
        refused.result
    );

    let with_gate = Executor::builder(common::registry())
        .pre_hook(pre_hook_fn("trusted", |_, _| PreHookAction::Allow))
        .pre_hook(ask(Some(json!({"command": "ls -la"}))))
        .gate(gate_fn(|request| async move {
            assert_eq!(request.ask_requested_by.as_deref(), Some("careful"));
            assert_eq!(request.pre_approved_by.as_deref(), Some("trusted"));
            assert_eq!(request.call.input, json!({"command": "ls -la"}));
            GateVerdict::allow()
        }))
        .build();
    let ran = with_gate
        .execute(call("run", json!({"command": "ls"})), &CallScope::default())
        .await;
    assert_eq!(ran.output().to_text(), "ran ls -la");

    // The rewrite an asking hook brings is validated like any other.
    let bad = Executor::builder(common::registry())
        .pre_hook(ask(Some(json!({"command": 5}))))
        .gate(gate_fn(|_| async { GateVerdict::allow() }))
        .build();
    let refused = bad
        .execute(call("run", json!({"command": "ls"})), &CallScope::default())
        .await;
    assert!(matches!(
        refused.result,
        Err(ExecError::InvalidRewrite { .. })
    ));
}

#[tokio::test]
async fn a_gate_left_asking_refuses_the_call_with_its_reason() {
    let executor = Executor::builder(common::registry())
        .gate(gate_fn(|_| async { GateVerdict::ask("no one to ask") }))
        .build();
    let outcome = executor
        .execute(call("run", json!({"command": "ls"})), &CallScope::default())
        .await;
    assert!(
        matches!(&outcome.result, Err(ExecError::Denied { reason, .. }) if reason == "no one to ask"),
        "{:?}",
        outcome.result
    );
}

#[test]
fn a_gate_verdict_reads_its_json_and_the_key_of_earlier_releases() {
    let now = serde_json::to_value(GateVerdict::deny("no")).unwrap();
    assert_eq!(now, json!({"verdict": "deny", "reason": "no"}));
    let old: GateVerdict =
        serde_json::from_value(json!({"decision": "deny", "reason": "no"})).unwrap();
    assert_eq!(old, GateVerdict::deny("no"));
    let allow: GateVerdict = serde_json::from_value(json!({"decision": "allow"})).unwrap();
    assert!(allow.is_allow());
    assert!(serde_json::from_value::<GateVerdict>(json!({"verdict": "maybe"})).is_err());
}

#[tokio::test]
async fn invalid_arguments_say_which_field_and_why_and_skip_hooks() {
    let log: Log = Log::default();
    let executor = Executor::builder(common::registry())
        .pre_hook(logging_pre(&log, "never", PreHookAction::Continue))
        .build();
    let outcome = executor
        .execute(
            call("sleep", json!({"ms": "soon", "tag": 7})),
            &CallScope::default(),
        )
        .await;
    let ExecError::InvalidArguments { tool, problems } = outcome.result.as_ref().unwrap_err()
    else {
        panic!("expected invalid arguments, got {:?}", outcome.result);
    };
    assert_eq!(tool, "sleep");
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["/ms", "/tag"]);
    let text = outcome.output().to_text();
    assert!(
        text.contains(r#"at `/ms`: "soon" is not of type "integer""#),
        "{text}"
    );
    assert!(log.lock().unwrap().is_empty());
}

#[tokio::test]
async fn an_unknown_tool_suggests_the_closest_names() {
    let executor = Executor::new(common::registry());
    let outcome = executor
        .execute(call("ecco", json!({})), &CallScope::default())
        .await;
    assert_eq!(
        outcome.output().to_text(),
        "unknown tool `ecco`; did you mean `echo`?"
    );
    let nothing_close = executor
        .execute(call("zzzzzz", json!({})), &CallScope::default())
        .await;
    assert_eq!(nothing_close.output().to_text(), "unknown tool `zzzzzz`");
}

#[tokio::test]
async fn a_filtered_view_hides_tools_from_the_executor() {
    let registry = common::registry();
    let executor = Executor::new(registry.view(mux_tool::ToolFilter::names(["echo"])));
    let outcome = executor
        .execute(call("sleep", json!({"ms": 1})), &CallScope::default())
        .await;
    assert!(matches!(outcome.result, Err(ExecError::UnknownTool { .. })));
}

struct PanickingPreHook;

impl PreHook for PanickingPreHook {
    fn name(&self) -> &str {
        "panicky"
    }
    fn before<'a>(
        &'a self,
        _: &'a ToolCall,
        _: &'a ToolSpec,
    ) -> BoxFuture<'a, Result<PreHookAction, HookError>> {
        Box::pin(async { panic!("hook exploded") })
    }
}

#[tokio::test]
async fn a_panicking_pre_hook_blocks_its_call_and_the_executor_survives() {
    let executor = Executor::builder(common::registry())
        .pre_hook(PanickingPreHook)
        .build();
    let outcome = executor
        .execute(call("echo", json!({"text": "x"})), &CallScope::default())
        .await;
    assert_eq!(
        outcome.output().to_text(),
        "hook `panicky` failed before tool `echo` could run, so it did not run: panicked: hook exploded"
    );
    // The same executor keeps serving calls.
    let again = executor
        .execute(call("echo", json!({"text": "y"})), &CallScope::default())
        .await;
    assert!(matches!(again.result, Err(ExecError::HookFailed { .. })));
}

#[tokio::test]
async fn a_panicking_post_hook_is_reported_and_the_result_stands() {
    let executor = Executor::builder(common::registry())
        .post_hook(post_hook_fn("bad-post", |_, _| panic!("post exploded")))
        .post_hook(post_hook_fn("good-post", |_, result| {
            let text = result.as_ref().map(ToolOutput::to_text).unwrap_or_default();
            PostHookAction::Replace(ToolOutput::text(format!("[{text}]")))
        }))
        .build();
    let outcome = executor
        .execute(call("echo", json!({"text": "kept"})), &CallScope::default())
        .await;
    assert_eq!(outcome.output().to_text(), "[kept]");
    assert_eq!(outcome.hook_failures.len(), 1);
    assert_eq!(outcome.hook_failures[0].hook, "bad-post");
    assert_eq!(outcome.hook_failures[0].message, "panicked: post exploded");
}

#[tokio::test]
async fn a_panicking_gate_counts_as_a_denial() {
    let executor = Executor::builder(common::registry())
        .gate(gate_fn(|_| async { panic!("gate exploded") }))
        .build();
    let outcome = executor
        .execute(call("echo", json!({"text": "x"})), &CallScope::default())
        .await;
    assert!(
        matches!(outcome.result, Err(ExecError::GateFailed { ref message, .. }) if message == "panicked: gate exploded")
    );
}

#[tokio::test]
async fn post_hooks_observe_failures_too() {
    let seen: Log = Log::default();
    let seen_in_hook = Arc::clone(&seen);
    let executor = Executor::builder(common::registry())
        .post_hook(post_hook_fn("audit", move |call, result| {
            let kind = result.as_ref().err().map_or("ok", ExecError::kind);
            seen_in_hook
                .lock()
                .unwrap()
                .push(format!("{}:{kind}", call.name));
            PostHookAction::Keep
        }))
        .build();
    executor
        .execute(call("nope", json!({})), &CallScope::default())
        .await;
    executor
        .execute(call("run", json!({"command": "ls"})), &CallScope::default())
        .await;
    assert_eq!(
        *seen.lock().unwrap(),
        ["nope:unknown_tool", "run:approval_required"]
    );
}
