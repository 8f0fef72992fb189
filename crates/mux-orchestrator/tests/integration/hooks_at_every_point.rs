//! Loop hooks: prompt, pre- and post-tool-use, stop, failures and panics, and registering a
//! hook from inside a hook.

use crate::common;

use std::sync::{Arc, Mutex};

use common::*;
use mux_orchestrator::hooks::{
    CompactAction, Hook, HookError, PostToolAction, PreToolAction, PromptAction, StopAction,
};
use mux_orchestrator::{CompactionConfig, Hooks, LoopError, LoopEvent};
use mux_tool::{BoxFuture, ToolCall, ToolOutput};
use serde_json::json;

type HookResult<'a, T> = BoxFuture<'a, Result<T, HookError>>;

#[derive(Default)]
struct Scripted {
    prompt: Option<PromptAction>,
    pre: Option<PreToolAction>,
    post: Option<PostToolAction>,
    stop: Option<StopAction>,
    fail_pre: bool,
    panic_post: bool,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Hook for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn session_start<'a>(&'a self, _: &'a str) -> HookResult<'a, ()> {
        self.seen.lock().unwrap().push("session_start".into());
        Box::pin(async { Ok(()) })
    }
    fn user_prompt_submit<'a>(&'a self, prompt: &'a str) -> HookResult<'a, PromptAction> {
        self.seen.lock().unwrap().push(format!("prompt {prompt}"));
        let action = self.prompt.clone().unwrap_or(PromptAction::Continue);
        Box::pin(async move { Ok(action) })
    }
    fn pre_tool_use<'a>(&'a self, call: &'a ToolCall) -> HookResult<'a, PreToolAction> {
        self.seen
            .lock()
            .unwrap()
            .push(format!("pre {} {}", call.name, call.input));
        let fail = self.fail_pre;
        let action = self.pre.clone().unwrap_or(PreToolAction::Continue);
        Box::pin(async move {
            if fail {
                Err(HookError::new("policy service down"))
            } else {
                Ok(action)
            }
        })
    }
    fn post_tool_use<'a>(
        &'a self,
        call: &'a ToolCall,
        output: &'a ToolOutput,
    ) -> HookResult<'a, PostToolAction> {
        self.seen
            .lock()
            .unwrap()
            .push(format!("post {} {}", call.name, output.to_text()));
        if self.panic_post {
            panic!("post hook bug");
        }
        let action = self.post.clone().unwrap_or(PostToolAction::Keep);
        Box::pin(async move { Ok(action) })
    }
    fn stop<'a>(&'a self, text: &'a str) -> HookResult<'a, StopAction> {
        self.seen.lock().unwrap().push(format!("stop {text}"));
        let action = self.stop.clone().unwrap_or(StopAction::Stop);
        Box::pin(async move { Ok(action) })
    }
}

impl Scripted {
    fn prompt(action: PromptAction) -> Self {
        Self {
            prompt: Some(action),
            ..Self::default()
        }
    }
    fn pre(action: PreToolAction) -> Self {
        Self {
            pre: Some(action),
            ..Self::default()
        }
    }
    fn post(action: PostToolAction) -> Self {
        Self {
            post: Some(action),
            ..Self::default()
        }
    }
    fn fail_pre() -> Self {
        Self {
            fail_pre: true,
            ..Self::default()
        }
    }
    fn panic_post() -> Self {
        Self {
            panic_post: true,
            ..Self::default()
        }
    }
}

/// A model that calls echo with `a` once, then answers `ok`.
fn echo_a_then_ok() -> mux_llm::testing::ScriptedClient {
    scripted()
        .reply(tool_calls(&[("c1", "echo", json!({"text": "a"}))]))
        .reply(text("ok"))
}

fn agent_with(
    model: mux_llm::testing::ScriptedClient,
    hook: Scripted,
) -> mux_orchestrator::Orchestrator {
    let hooks = Hooks::new();
    hooks.add(hook);
    agent_with_hooks(model, hooks)
}

/// A conversation of `model` with the test tools and `hooks`.
fn agent_with_hooks(
    model: mux_llm::testing::ScriptedClient,
    hooks: Hooks,
) -> mux_orchestrator::Orchestrator {
    loop_agent(model, mux_orchestrator::OrchestratorConfig::new("m"))
        .tools(registry().list())
        .hooks(hooks)
        .conversation()
}

#[tokio::test]
async fn a_prompt_can_be_rewritten_or_blocked() {
    let model = scripted().reply(text("ok"));
    let agent = agent_with(
        model.clone(),
        Scripted::prompt(PromptAction::Rewrite("polite".into())),
    );
    agent.run_to_completion("rude").await.unwrap();
    assert_eq!(model.requests()[0].messages[0].text(), "polite");

    let blocked = agent_with(
        scripted(),
        Scripted::prompt(PromptAction::Block {
            reason: "secrets".into(),
        }),
    );
    let err = blocked
        .run_to_completion("my password is hunter2")
        .await
        .unwrap_err();
    assert!(matches!(err, LoopError::PromptBlocked { ref reason, .. } if reason == "secrets"));
    assert!(
        blocked.messages().is_empty(),
        "a blocked prompt is not recorded"
    );
}

#[tokio::test]
async fn pre_tool_use_can_deny_or_rewrite() {
    let model = echo_a_then_ok();
    let agent = agent_with(
        model,
        Scripted::pre(PreToolAction::Deny {
            reason: "no echo".into(),
        }),
    );
    let summary = agent.run_to_completion("go").await.unwrap();
    assert_eq!(
        summary.tool_calls[0].output.to_text(),
        "tool `echo` was blocked by hook `pre_tool_use`: no echo"
    );

    let model = echo_a_then_ok();
    let agent = agent_with(
        model,
        Scripted::pre(PreToolAction::Rewrite(json!({"text": "b"}))),
    );
    let summary = agent.run_to_completion("go").await.unwrap();
    assert_eq!(summary.tool_calls[0].output.to_text(), "b");
    assert_eq!(summary.tool_calls[0].input, json!({"text": "b"}));
}

#[tokio::test]
async fn pre_tool_use_allow_skips_asking_and_ask_forces_it() {
    // Bash is not read-only: without a policy it would ask; Allow pre-approves it.
    let model = scripted()
        .reply(tool_calls(&[("c1", "Bash", json!({"command": "ls"}))]))
        .reply(text("ok"));
    let agent = agent_with(model, Scripted::pre(PreToolAction::Allow));
    let (events, outcome) = drain(agent.run("go").unwrap()).await;
    assert_eq!(outcome.unwrap().tool_calls[0].output.to_text(), "ran: ls");
    assert!(
        !labels(&events)
            .iter()
            .any(|l| l.starts_with("approval_required"))
    );

    // echo is read-only and would run; Ask makes the face decide.
    let model = echo_a_then_ok();
    let agent = agent_with(model, Scripted::pre(PreToolAction::Ask));
    let summary = agent.run_to_completion("go").await.unwrap();
    assert!(
        summary.tool_calls[0]
            .output
            .to_text()
            .contains("no one is available to approve")
    );
}

#[tokio::test]
async fn post_tool_use_can_replace_a_result() {
    let model = scripted()
        .reply(tool_calls(&[(
            "c1",
            "echo",
            json!({"text": "secret-token-123"}),
        )]))
        .reply(text("ok"));
    let redacted = ToolOutput::text("[redacted]");
    let agent = agent_with(
        model.clone(),
        Scripted::post(PostToolAction::Replace(redacted)),
    );
    let summary = agent.run_to_completion("go").await.unwrap();
    assert_eq!(summary.tool_calls[0].output.to_text(), "[redacted]");
    let results = serde_json::to_string(&model.requests()[1].messages.last().unwrap()).unwrap();
    assert!(
        results.contains("[redacted]") && !results.contains("secret-token-123"),
        "{results}"
    );
}

#[tokio::test]
async fn a_stop_hook_may_continue_once() {
    let model = scripted()
        .reply(text("draft"))
        .reply(text("final"))
        .reply(text("never"));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = agent_with(
        model.clone(),
        Scripted {
            stop: Some(StopAction::Continue("check your work".into())),
            seen: Arc::clone(&seen),
            ..Default::default()
        },
    );
    let summary = agent.run_to_completion("write").await.unwrap();
    assert_eq!(summary.text, "final");
    assert_eq!(model.requests().len(), 2);
    assert_eq!(
        model.requests()[1].messages.last().unwrap().text(),
        "check your work"
    );
    assert_eq!(
        *seen.lock().unwrap(),
        ["session_start", "prompt write", "stop draft"]
    );
}

#[tokio::test]
async fn a_failing_pre_hook_blocks_its_call_and_a_panicking_post_hook_is_reported() {
    let model = echo_a_then_ok();
    let agent = agent_with(model, Scripted::fail_pre());
    let (events, outcome) = drain(agent.run("go").unwrap()).await;
    let summary = outcome.unwrap();
    assert!(
        summary.tool_calls[0]
            .output
            .to_text()
            .contains("hook `scripted` failed: policy service down")
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, LoopEvent::HookFailed { point, .. } if point == "pre_tool_use"))
    );

    let model = echo_a_then_ok();
    let agent = agent_with(model, Scripted::panic_post());
    let (events, outcome) = drain(agent.run("go").unwrap()).await;
    assert_eq!(
        outcome.unwrap().tool_calls[0].output.to_text(),
        "a",
        "the result stands"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, LoopEvent::HookFailed { message, .. } if message == "panicked"))
    );
}

/// Registers another hook the first time it runs.
struct Registrar {
    hooks: Hooks,
}

impl Hook for Registrar {
    fn name(&self) -> &str {
        "registrar"
    }
    fn pre_tool_use<'a>(&'a self, _: &'a ToolCall) -> HookResult<'a, PreToolAction> {
        if self.hooks.len() == 1 {
            self.hooks.add(Scripted::pre(PreToolAction::Deny {
                reason: "added later".into(),
            }));
        }
        Box::pin(async { Ok(PreToolAction::Continue) })
    }
}

#[tokio::test]
async fn a_hook_that_registers_a_hook_does_not_deadlock() {
    let model = scripted()
        .reply(tool_calls(&[("c1", "echo", json!({"text": "a"}))]))
        .reply(tool_calls(&[("c2", "echo", json!({"text": "b"}))]))
        .reply(text("ok"));
    let hooks = Hooks::new();
    hooks.add(Registrar {
        hooks: hooks.clone(),
    });
    let agent = agent_with_hooks(model, hooks);
    let summary = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        agent.run_to_completion("go"),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        summary.tool_calls[0].output.to_text(),
        "a",
        "the new hook applies from the next call"
    );
    assert!(
        summary.tool_calls[1]
            .output
            .to_text()
            .contains("added later")
    );
}

/// Panics at one hook point before it returns its future (a bug in the hook's synchronous
/// part), and does nothing at the others.
struct PanicsAt(&'static str);

impl PanicsAt {
    fn maybe_panic(&self, point: &str) {
        if self.0 == point {
            panic!("hook bug at {point}");
        }
    }
}

impl Hook for PanicsAt {
    fn name(&self) -> &str {
        "panics"
    }
    fn session_start<'a>(&'a self, _: &'a str) -> HookResult<'a, ()> {
        self.maybe_panic("session_start");
        Box::pin(async { Ok(()) })
    }
    fn user_prompt_submit<'a>(&'a self, _: &'a str) -> HookResult<'a, PromptAction> {
        self.maybe_panic("user_prompt_submit");
        Box::pin(async { Ok(PromptAction::Continue) })
    }
    fn pre_tool_use<'a>(&'a self, _: &'a ToolCall) -> HookResult<'a, PreToolAction> {
        self.maybe_panic("pre_tool_use");
        Box::pin(async { Ok(PreToolAction::Continue) })
    }
    fn post_tool_use<'a>(
        &'a self,
        _: &'a ToolCall,
        _: &'a ToolOutput,
    ) -> HookResult<'a, PostToolAction> {
        self.maybe_panic("post_tool_use");
        Box::pin(async { Ok(PostToolAction::Keep) })
    }
    fn pre_compact<'a>(&'a self, _: &'a [mux_llm::Message]) -> HookResult<'a, CompactAction> {
        self.maybe_panic("pre_compact");
        Box::pin(async { Ok(CompactAction::Continue) })
    }
    fn stop<'a>(&'a self, _: &'a str) -> HookResult<'a, StopAction> {
        self.maybe_panic("stop");
        Box::pin(async { Ok(StopAction::Stop) })
    }
}

#[tokio::test]
async fn a_hook_that_panics_at_any_point_is_reported_and_the_run_goes_on() {
    for point in [
        "session_start",
        "user_prompt_submit",
        "pre_tool_use",
        "post_tool_use",
        "pre_compact",
        "stop",
    ] {
        // Summaries for compaction; otherwise one echo call, then the answer.
        let model = scripted().respond_with(|request| {
            if request
                .system
                .as_deref()
                .is_some_and(|s| s.contains("summaries"))
            {
                return Ok(text("SUMMARY"));
            }
            let answered = request
                .messages
                .iter()
                .flat_map(|m| &m.content)
                .any(|b| matches!(b, mux_llm::ContentBlock::ToolResult { .. }));
            Ok(if answered {
                text("done")
            } else {
                tool_calls(&[("c1", "echo", json!({"text": "a"}))])
            })
        });
        // A seeded older turn and a budget of one token: the run compacts before its first turn.
        let config = mux_orchestrator::OrchestratorConfig::new("m").compaction(CompactionConfig {
            token_budget: 1,
            keep_last_turns: 1,
            ..Default::default()
        });
        let agent = loop_agent(model, config)
            .tools(registry().list())
            .hook(PanicsAt(point))
            .conversation()
            .new_session_from(vec![
                mux_llm::Message::user("earlier"),
                mux_llm::Message::assistant("earlier answer"),
            ]);
        let (events, outcome) = drain(agent.run("go").unwrap()).await;
        let summary = outcome.unwrap_or_else(|err| panic!("{point}: {err}"));
        assert_eq!(summary.text, "done", "{point}");
        let failed: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                LoopEvent::HookFailed {
                    hook,
                    point,
                    message,
                } => {
                    assert_eq!((hook.as_str(), message.as_str()), ("panics", "panicked"));
                    Some(point.as_str())
                }
                _ => None,
            })
            .collect();
        assert_eq!(failed, [point]);
        let echo = summary.tool_calls[0].output.to_text();
        if point == "pre_tool_use" {
            assert!(echo.contains("panicked"), "an unchecked call must not run");
        } else {
            assert_eq!(echo, "a", "{point}");
        }
        assert!(
            events
                .iter()
                .any(|e| matches!(e, LoopEvent::Compacted { .. })),
            "{point}"
        );
    }
}

/// Holds the run in its stop hook, after the loop's last look at the message queue, until
/// the test releases it.
struct HoldsStop {
    reached: Mutex<Option<tokio::sync::oneshot::Sender<()>>>,
    release: Arc<tokio::sync::Notify>,
}

impl Hook for HoldsStop {
    fn name(&self) -> &str {
        "holds-stop"
    }
    fn stop<'a>(&'a self, _: &'a str) -> HookResult<'a, StopAction> {
        if let Some(reached) = self.reached.lock().unwrap().take() {
            let _ = reached.send(());
        }
        Box::pin(async move {
            self.release.notified().await;
            Ok(StopAction::Stop)
        })
    }
}

#[tokio::test]
async fn a_message_the_loop_can_no_longer_read_is_rejected_not_dropped() {
    let (reached_tx, reached) = tokio::sync::oneshot::channel();
    let release = Arc::new(tokio::sync::Notify::new());
    let hooks = Hooks::new();
    hooks.add(HoldsStop {
        reached: Mutex::new(Some(reached_tx)),
        release: Arc::clone(&release),
    });
    let agent = loop_agent(
        scripted().reply(text("done")),
        mux_orchestrator::OrchestratorConfig::new("m"),
    )
    .hooks(hooks)
    .conversation();
    let run = agent.run("go").unwrap();
    reached.await.unwrap();
    let late = mux_orchestrator::LoopInput::UserMessage {
        text: "one more thing".into(),
    };
    assert!(run.input.send(late).await);
    release.notify_one();
    let (events, outcome) = drain(run).await;
    assert_eq!(outcome.unwrap().text, "done");
    let rejected: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            LoopEvent::InputRejected { message } => Some(message.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(rejected.len(), 1, "{events:?}");
    assert!(rejected[0].contains("one more thing"), "{rejected:?}");
}
