//! No conversation keeps a tool call without a result, and a paused run outlives its process.
//!
//! - A process killed while its tools run leaves the session ending in calls without results;
//!   the next run on the session (in a fresh process) answers them before its prompt: a call
//!   that returned gives its recorded output, a started one that is not read-only or idempotent
//!   gets an "outcome unknown" error and is never run twice.
//! - A process killed while its run waits for an approval: a fresh process lists the pending
//!   approval, answers it and continues the run; or, unanswered, asks again; or, given a new
//!   prompt instead, stores it at once and runs nothing of the old turn.
//!
//! The child process is this test binary, re-run with `child_process_role` selected by an
//! environment variable.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mux_llm::testing::ScriptedClient;
use mux_llm::{ContentBlock, Message, Role};
use mux_orchestrator::session::{FileSessionStore, SessionStore};
use mux_orchestrator::{LoopError, LoopEvent, LoopInput, OrchestratorConfig};
use mux_permission::Answer;
use mux_tool::{
    ApprovalPolicy, Registry, ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::common::{Conversation, answer_approvals, drain, loop_agent, tool_calls};

const ROLE: &str = "MUX_UNANSWERED_CHILD";
/// `mid-call` (killed while `deploy` runs) or `paused` (killed while `deploy` waits for its
/// approval).
const ROLE_KIND: &str = "MUX_UNANSWERED_ROLE";
const CHILD_TEST: &str = "unanswered_calls::child_process_role";

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// Counts its runs in `dir/look`; read-only, so it may run again.
struct Look(PathBuf);

/// Counts its runs in `dir/deploy`; when `slow`, then says it started and takes a minute. Not
/// read-only nor idempotent, so it must never run twice.
struct Deploy(PathBuf, bool);

fn count(path: &Path) -> usize {
    std::fs::read_to_string(path).map_or(0, |text| text.lines().count())
}

fn tally(path: &Path) {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    writeln!(file, "ran").unwrap();
}

impl TypedTool for Look {
    type Args = NoArgs;
    const NAME: &'static str = "look";
    fn description(&self) -> String {
        "Looks".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, _: NoArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        tally(&self.0.join("look"));
        Ok(ToolOutput::text("all quiet"))
    }
}

impl TypedTool for Deploy {
    type Args = NoArgs;
    const NAME: &'static str = "deploy";
    fn description(&self) -> String {
        "Deploys".into()
    }
    async fn call(&self, _: NoArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        tally(&self.0.join("deploy"));
        if self.1 {
            std::fs::write(self.0.join("started"), "").unwrap();
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        Ok(ToolOutput::text("deployed"))
    }
}

fn registry(dir: &Path, slow: bool) -> Registry {
    let tools = Registry::new();
    tools.register_typed(Look(dir.to_path_buf())).unwrap();
    tools
        .register_typed(Deploy(dir.to_path_buf(), slow))
        .unwrap();
    tools
}

/// Runs every call unasked; `deploy` is slow.
fn builder(dir: &Path, model: ScriptedClient) -> mux_orchestrator::AgentBuilder {
    asking_builder(dir, model, true).configure(|config| config.approval(ApprovalPolicy::Never))
}

/// The default policy: `look` runs, `deploy` asks.
fn asking_builder(dir: &Path, model: ScriptedClient, slow: bool) -> mux_orchestrator::AgentBuilder {
    let store: Arc<dyn SessionStore> = Arc::new(FileSessionStore::new(dir.join("sessions")));
    loop_agent(model, OrchestratorConfig::new("test-model"))
        .tools(registry(dir, slow).list())
        .session_store(store)
}

fn look_then_deploy() -> ScriptedClient {
    ScriptedClient::new().reply(tool_calls(&[
        ("call-look", "look", json!({})),
        ("call-deploy", "deploy", json!({})),
    ]))
}

/// Starts this test binary as a child playing `role` in `dir`, and waits until it has
/// written `marker`; the caller kills it.
fn child_until(role: &str, dir: &Path, marker: &str) -> std::process::Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, dir)
        .env(ROLE_KIND, role)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dir.join(marker).exists() {
        assert!(Instant::now() < deadline, "the child never wrote {marker}");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the child exited early"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// [`child_until`], then kills the child (SIGKILL: no destructor, no last write) and
/// returns the id of the session it was running.
fn killed_child(role: &str, dir: &Path, marker: &str) -> String {
    let mut child = child_until(role, dir, marker);
    child.kill().unwrap();
    child.wait().unwrap();
    std::fs::read_to_string(dir.join("session")).unwrap()
}

/// Runs a child in `role` until it writes `marker` and kills it (SIGKILL: no destructor,
/// no last write), then runs `test` with the directory and the child's session id on a
/// runtime of its own, as another process would.
fn after_killing<Fut>(role: &str, marker: &str, test: impl FnOnce(PathBuf, String) -> Fut)
where
    Fut: std::future::Future<Output = ()>,
{
    let dir = tempfile::tempdir().unwrap();
    let id = killed_child(role, dir.path(), marker);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(test(dir.path().to_owned(), id));
}

/// A conversation of `builder`'s agent resuming session `id`.
async fn resumed(
    builder: mux_orchestrator::AgentBuilder,
    id: &str,
) -> mux_orchestrator::Orchestrator {
    builder.open().resume(id).await.unwrap()
}

/// A conversation of the asking agent on `model` resuming session `id`.
async fn asking_resumed(
    dir: &Path,
    model: ScriptedClient,
    id: &str,
) -> mux_orchestrator::Orchestrator {
    resumed(asking_builder(dir, model, false), id).await
}

/// Session `id` as stored under `dir`, after checking every call in it has its result.
async fn stored_all_answered(dir: &Path, id: &str) -> mux_orchestrator::session::Session {
    let stored = FileSessionStore::new(dir.join("sessions"))
        .load(id)
        .await
        .unwrap();
    every_call_answered(&stored.messages);
    stored
}

/// Not a test of its own: the child's role, chosen by `MUX_UNANSWERED_CHILD` (the directory
/// to work in); without it, this returns at once. It starts a run whose model calls `look`
/// and `deploy`, and is killed while `deploy` runs.
#[test]
fn child_process_role() {
    let Ok(dir) = std::env::var(ROLE) else {
        return;
    };
    let dir = PathBuf::from(dir);
    crate::common::runtime().block_on(async {
        match std::env::var(ROLE_KIND).unwrap().as_str() {
            "mid-call" => {
                let orchestrator = builder(&dir, look_then_deploy()).conversation();
                std::fs::write(dir.join("session"), &orchestrator.session().id).unwrap();
                // Never returns: the parent kills this process while `deploy` sleeps.
                let _ = orchestrator.run_to_completion("ship it").await;
            }
            "paused" => {
                let orchestrator = asking_builder(&dir, look_then_deploy(), false).conversation();
                std::fs::write(dir.join("session"), &orchestrator.session().id).unwrap();
                let mut run = orchestrator.run("ship it").unwrap();
                while let Some(event) = run.events.recv().await {
                    if matches!(event, LoopEvent::ApprovalRequired { .. }) {
                        std::fs::write(dir.join("paused"), "").unwrap();
                    }
                }
            }
            other => panic!("no role {other}"),
        }
    });
}

/// Every tool call in `messages` has a result in the next message.
fn every_call_answered(messages: &[Message]) {
    for (i, message) in messages.iter().enumerate() {
        for block in &message.content {
            if let ContentBlock::ToolUse { id, .. } = block {
                let next = messages.get(i + 1).map_or(&[][..], |m| &m.content[..]);
                assert!(
                    next.iter().any(|b| matches!(
                        b,
                        ContentBlock::ToolResult { tool_use_id, .. } if tool_use_id == id
                    )),
                    "call {id} has no result right after it: {messages:#?}"
                );
            }
        }
    }
}

#[test]
fn a_process_killed_mid_call_leaves_no_call_without_a_result() {
    after_killing("mid-call", "started", |dir, id| async move {
        assert_eq!(count(&dir.join("deploy")), 1);
        let model = ScriptedClient::new().reply_text("I checked.");
        let orchestrator = resumed(builder(&dir, model.clone()), &id).await;
        // The stored session ends in the two calls, unanswered.
        let before = orchestrator.messages();
        assert_eq!(before.last().unwrap().role, Role::Assistant);

        let (events, outcome) = drain(orchestrator.run("Did it ship?").unwrap()).await;
        let summary = outcome.unwrap();
        assert_eq!(summary.text, "I checked.");

        // Each ran once in all, in the dead child: `look` returned there (its output was
        // recorded), `deploy` started and is not run again.
        assert_eq!(count(&dir.join("deploy")), 1);
        assert_eq!(count(&dir.join("look")), 1);

        // The model read both results, in call order, before the new prompt, in one message.
        let request = &model.requests()[0];
        let last = request.messages.last().unwrap();
        assert_eq!(last.role, Role::User);
        let [look, deploy, prompt] = &last.content[..] else {
            panic!("expected two results and the prompt: {last:#?}");
        };
        let ContentBlock::ToolResult {
            tool_use_id,
            is_error: false,
            ..
        } = look
        else {
            panic!("look's result: {look:?}");
        };
        assert_eq!(tool_use_id, "call-look");
        assert!(
            format!("{look:?}").contains("all quiet"),
            "the recorded output: {look:?}"
        );
        let text = deploy_error(deploy);
        assert!(text.contains("outcome unknown"), "{text}");
        assert_eq!(prompt, &ContentBlock::text("Did it ship?"));

        // The faces saw each call and its result.
        for id in ["call-look", "call-deploy"] {
            assert!(
                events.iter().any(
                    |e| matches!(e, LoopEvent::ToolCallStarted { call_id, .. } if call_id == id)
                )
            );
            assert!(
                events
                    .iter()
                    .any(|e| matches!(e, LoopEvent::ToolResult { call_id, .. } if call_id == id))
            );
        }
        assert_eq!(summary.tool_calls.len(), 2);

        // What is stored now is a history a provider accepts, read back by a fresh store.
        stored_all_answered(&dir, &id).await;
        // A further run has nothing left to resolve.
        let model = ScriptedClient::new().reply_text("Still fine.");
        let orchestrator = resumed(builder(&dir, model.clone()), &id).await;
        orchestrator.run_to_completion("And now?").await.unwrap();
        let last = model.requests()[0].messages.last().unwrap().clone();
        assert_eq!(last.content, vec![ContentBlock::text("And now?")]);
        assert_eq!(count(&dir.join("deploy")), 1);
        assert_eq!(count(&dir.join("look")), 1);
    });
}

/// The content of `deploy`'s result, which must be an error result of `call-deploy`.
fn deploy_error(deploy: &ContentBlock) -> String {
    let ContentBlock::ToolResult {
        tool_use_id,
        content,
        is_error: true,
    } = deploy
    else {
        panic!("deploy's result: {deploy:?}");
    };
    assert_eq!(tool_use_id, "call-deploy");
    format!("{content:?}")
}

/// The last message of the first request `model` saw.
fn last_sent(model: &ScriptedClient) -> Message {
    model.requests()[0].messages.last().unwrap().clone()
}

#[test]
fn a_paused_approval_outlives_its_process_and_is_answered_in_another() {
    after_killing("paused", "paused", |dir, id| async move {
        // `look` ran before `deploy` asked; `deploy` never ran.
        assert_eq!(count(&dir.join("look")), 1);
        assert_eq!(count(&dir.join("deploy")), 0);
        // A fresh process sees the pending approval, answers it and continues the run.
        let model = ScriptedClient::new().reply_text("Deployed.");
        let orchestrator = asking_resumed(&dir, model.clone(), &id).await;
        let pending = orchestrator.pending_approvals();
        assert_eq!(pending.len(), 1, "{pending:?}");
        assert_eq!(
            (pending[0].call_id.as_str(), pending[0].name.as_str()),
            ("call-deploy", "deploy")
        );
        assert!(!pending[0].reason.is_empty());

        let answers = [("call-deploy".to_owned(), Answer::AllowOnce)];
        let (events, outcome) = drain(orchestrator.resume_run(answers).unwrap()).await;
        assert_eq!(outcome.unwrap().text, "Deployed.");
        assert_eq!(count(&dir.join("deploy")), 1);
        assert_eq!(
            count(&dir.join("look")),
            1,
            "look's recorded output is reused"
        );
        assert!(events.iter().any(
            |e| matches!(e, LoopEvent::ToolApproved { call_id, .. } if call_id == "call-deploy")
        ));
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, LoopEvent::ApprovalRequired { .. })),
            "answered in advance, not asked again"
        );
        // The results, and no new prompt, are what the model reads next.
        let sent = last_sent(&model);
        assert_eq!(sent.role, Role::User);
        let results: Vec<(String, String)> = sent
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } => (tool_use_id.clone(), format!("{content:?}")),
                other => panic!("only results: {other:?}"),
            })
            .collect();
        assert_eq!(results.len(), 2);
        assert_eq!(results[0].0, "call-look");
        assert!(results[0].1.contains("all quiet"));
        assert_eq!(results[1].0, "call-deploy");
        assert!(results[1].1.contains("deployed"));
        assert!(orchestrator.pending_approvals().is_empty());
        let stored = stored_all_answered(&dir, &id).await;
        assert!(stored.calls.is_empty());
        // Nothing is left to resume.
        let again = orchestrator.resume_run([]).unwrap();
        let (_, outcome) = drain(again).await;
        assert!(
            matches!(outcome, Err(LoopError::NothingToResume)),
            "{outcome:?}"
        );
    });
}

#[test]
fn a_new_prompt_after_a_paused_approval_is_stored_at_once_and_asks_nothing_again() {
    after_killing("paused", "paused", |dir, id| async move {
        // The person moved on: a new prompt instead of an answer. (A face that drops a loop
        // paused on an approval would drop a prompt held while the old approval is asked
        // again; it is stored first instead.)
        let model = ScriptedClient::new().reply_text("It is noon.");
        let orchestrator = asking_resumed(&dir, model.clone(), &id).await;
        let run = orchestrator.run("Never mind: what time is it?").unwrap();
        let stored = run.handle.prompt_stored();
        // Were the old approval asked again, it is denied (the run does not hang on it).
        let (events, outcome) = answer_approvals(run, || Some(Answer::deny("asked again"))).await;
        assert!(stored.await, "the prompt was stored");
        assert_eq!(outcome.unwrap().text, "It is noon.");
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, LoopEvent::ApprovalRequired { .. })),
            "the old approval was asked again: {events:#?}"
        );
        no_invalid_state(&events);
        assert_eq!(count(&dir.join("deploy")), 0, "never ran");
        assert_eq!(count(&dir.join("look")), 1, "not run again");

        // The model read the old calls' results, then the prompt, in one message: `look`'s
        // recorded output, and `deploy` not run.
        let last = last_sent(&model);
        let [look, deploy, prompt] = &last.content[..] else {
            panic!("expected two results and the prompt: {last:#?}");
        };
        assert!(format!("{look:?}").contains("all quiet"), "{look:?}");
        let text = deploy_error(deploy);
        assert!(
            text.contains("not run") && text.contains("new message"),
            "{text}"
        );
        assert_eq!(prompt, &ContentBlock::text("Never mind: what time is it?"));

        // Stored as the model read it; nothing is left open.
        stored_all_answered(&dir, &id).await;
        let resumed = asking_resumed(&dir, ScriptedClient::new(), &id).await;
        assert!(resumed.pending_approvals().is_empty());
    });
}

#[test]
fn a_pending_approval_left_unanswered_is_asked_again_on_resume() {
    after_killing("paused", "paused", |dir, id| async move {
        let model = ScriptedClient::new().reply_text("Not deployed.");
        let orchestrator = asking_resumed(&dir, model.clone(), &id).await;
        let mut run = orchestrator.resume_run([]).unwrap();
        let mut asked = false;
        let mut events = Vec::new();
        while let Some(event) = run.events.recv().await {
            events.push(event.clone());
            if let LoopEvent::ApprovalRequired { call_id, .. } = &event {
                assert_eq!(call_id, "call-deploy", "the same call, asked again");
                asked = true;
                run.input
                    .send(LoopInput::ToolApproval {
                        call_id: call_id.clone(),
                        answer: Answer::deny("not today"),
                    })
                    .await;
            }
        }
        assert!(asked);
        no_invalid_state(&events);
        assert_eq!(run.handle.wait().await.unwrap().text, "Not deployed.");
        assert_eq!(count(&dir.join("deploy")), 0, "denied: never ran");
        let sent = format!("{:?}", last_sent(&model));
        assert!(sent.contains("not today"), "{sent}");
    });
}

/// Every event a resumed run emits is valid: no `invalid_state` error from asking again
/// before the first model call.
fn no_invalid_state(events: &[LoopEvent]) {
    let errors: Vec<&LoopEvent> = events
        .iter()
        .filter(|e| matches!(e, LoopEvent::Error { .. }))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn a_question_outlives_its_process_and_is_asked_again_under_the_same_call_id() {
    let dir = tempfile::tempdir().unwrap();
    let id = {
        // A process whose run waits on `ask_user` when it ends: its runtime is dropped with
        // the run's task at that await, so nothing more is written.
        let first = tokio::runtime::Runtime::new().unwrap();
        let id = first.block_on(async {
            let model = ScriptedClient::new().reply(tool_calls(&[(
                "call-ask",
                "ask_user",
                json!({"question": "Which color?"}),
            )]));
            let orchestrator = asking_builder(dir.path(), model, false).conversation();
            let mut run = orchestrator.run("pick a color").unwrap();
            loop {
                match run.events.recv().await {
                    Some(LoopEvent::AwaitingInput { call_id, .. }) => {
                        assert_eq!(call_id, "call-ask");
                        break;
                    }
                    Some(_) => {}
                    None => panic!("the run ended without asking"),
                }
            }
            let id = orchestrator.session().id;
            std::mem::forget(run);
            std::mem::forget(orchestrator);
            id
        });
        first.shutdown_background();
        id
    };

    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let model = ScriptedClient::new().reply_text("You picked blue.");
        let orchestrator = asking_resumed(dir.path(), model.clone(), &id).await;
        let pending = orchestrator.pending_questions();
        assert_eq!(pending.len(), 1, "{pending:?}");
        assert_eq!(
            (pending[0].call_id.as_str(), pending[0].question.as_str()),
            ("call-ask", "Which color?")
        );
        assert!(orchestrator.pending_approvals().is_empty());
        let mut run = orchestrator.resume_run([]).unwrap();
        let mut events = Vec::new();
        while let Some(event) = run.events.recv().await {
            if let LoopEvent::AwaitingInput { call_id, question } = &event {
                assert_eq!(call_id, "call-ask", "the same call, asked again");
                assert_eq!(question, "Which color?");
                run.input
                    .send(LoopInput::UserResponse {
                        call_id: call_id.clone(),
                        text: "blue".into(),
                    })
                    .await;
            }
            events.push(event);
        }
        assert_eq!(run.handle.wait().await.unwrap().text, "You picked blue.");
        assert!(
            events
                .iter()
                .any(|e| matches!(e, LoopEvent::AwaitingInput { .. })),
            "{events:?}"
        );
        no_invalid_state(&events);
        let sent = format!("{:?}", last_sent(&model));
        assert!(sent.contains("blue"), "{sent}");
        stored_all_answered(dir.path(), &id).await;
        assert!(orchestrator.pending_questions().is_empty());
    });
}
