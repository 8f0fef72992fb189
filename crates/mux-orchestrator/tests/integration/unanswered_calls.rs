//! No conversation keeps a tool call without a result: a process killed while its tools run
//! leaves the session ending in calls without results, and the next run on the session (in a
//! fresh process) answers them before its prompt. A read-only call runs again; any other gets
//! an "outcome unknown" error and is never run twice.
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
use mux_orchestrator::{LoopEvent, Orchestrator, OrchestratorConfig};
use mux_tool::{
    ApprovalPolicy, Registry, ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use crate::common::{drain, tool_calls};

const ROLE: &str = "MUX_UNANSWERED_CHILD";
const CHILD_TEST: &str = "unanswered_calls::child_process_role";

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

/// Counts its runs in `dir/look`; read-only, so it may run again.
struct Look(PathBuf);

/// Counts its runs in `dir/deploy`, then says it started and takes a minute: not read-only
/// nor idempotent, so it must never run twice.
struct Deploy(PathBuf);

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
        std::fs::write(self.0.join("started"), "").unwrap();
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok(ToolOutput::text("deployed"))
    }
}

fn registry(dir: &Path) -> Registry {
    let tools = Registry::new();
    tools.register_typed(Look(dir.to_path_buf())).unwrap();
    tools.register_typed(Deploy(dir.to_path_buf())).unwrap();
    tools
}

fn builder(dir: &Path, model: ScriptedClient) -> mux_orchestrator::OrchestratorBuilder {
    let store: Arc<dyn SessionStore> = Arc::new(FileSessionStore::new(dir.join("sessions")));
    Orchestrator::builder(Arc::new(model), OrchestratorConfig::new("test-model"))
        .tools(registry(dir))
        .session_store(store)
        .configure(|config| config.approval(ApprovalPolicy::Never))
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
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let model = ScriptedClient::new().reply(tool_calls(&[
            ("call-look", "look", json!({})),
            ("call-deploy", "deploy", json!({})),
        ]));
        let orchestrator = builder(&dir, model).build();
        std::fs::write(dir.join("session"), &orchestrator.session().id).unwrap();
        // Never returns: the parent kills this process while `deploy` sleeps.
        let _ = orchestrator.run_to_completion("ship it").await;
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
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dir.path().join("started").exists() {
        assert!(Instant::now() < deadline, "the child never started deploy");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the child exited early"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL: no destructor, no last write.
    child.wait().unwrap();
    let id = std::fs::read_to_string(dir.path().join("session")).unwrap();
    assert_eq!(count(&dir.path().join("deploy")), 1);

    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let model = ScriptedClient::new().reply_text("I checked.");
        let orchestrator = builder(dir.path(), model.clone())
            .resume(&id)
            .await
            .unwrap();
        // The stored session ends in the two calls, unanswered.
        let before = orchestrator.messages();
        assert_eq!(before.last().unwrap().role, Role::Assistant);

        let (events, outcome) = drain(orchestrator.run("Did it ship?").unwrap()).await;
        let summary = outcome.unwrap();
        assert_eq!(summary.text, "I checked.");

        // `deploy` ran once in all (in the dead child); `look` ran again here.
        assert_eq!(count(&dir.path().join("deploy")), 1);
        assert_eq!(count(&dir.path().join("look")), 2);

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
        let ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error: true,
        } = deploy
        else {
            panic!("deploy's result: {deploy:?}");
        };
        assert_eq!(tool_use_id, "call-deploy");
        let text = format!("{content:?}");
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
        let store = FileSessionStore::new(dir.path().join("sessions"));
        let stored = store.load(&id).await.unwrap();
        every_call_answered(&stored.messages);
        // A further run has nothing left to resolve.
        let model = ScriptedClient::new().reply_text("Still fine.");
        let orchestrator = builder(dir.path(), model.clone())
            .resume(&id)
            .await
            .unwrap();
        orchestrator.run_to_completion("And now?").await.unwrap();
        let last = model.requests()[0].messages.last().unwrap().clone();
        assert_eq!(last.content, vec![ContentBlock::text("And now?")]);
        assert_eq!(count(&dir.path().join("deploy")), 1);
        assert_eq!(count(&dir.path().join("look")), 2);
    });
}
