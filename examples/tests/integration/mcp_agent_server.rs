//! `mcp_agent_server` as a real process over stdio (and once over Streamable HTTP), called through mux's own MCP client at
//! 2025-11-25 (approvals by elicitation) and 2026-07-28 (approvals by `input_required`):
//! another mux agent uses it as an MCP tool and the inner approval is answered by the outer
//! client; progress arrives while it works; a session id continues the conversation; a
//! cancelled call kills the inner `sleep`; a client that cannot be asked gets a refusal and
//! nothing runs.

use std::io::BufRead as _;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mux::llm::testing::ScriptedClient;
use mux::mcp::rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use mux::mcp::{
    ClientFeatures, ClientHandlers, ConnectionOptions, Coordinator, CoordinatorConfig,
    HandlerError, Lifecycle, ReconnectPolicy, ServerSpec,
};
use mux::orchestrator::Agent;
use mux::tool::{
    ApprovalPolicy, BoxFuture, Content, ProgressSender, Tool, ToolContext, ToolOutput, ToolUpdate,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::common::example;

/// Answers every elicitation with `approve: true` (when it declares elicitation) and records
/// the messages.
struct Approver {
    elicits: bool,
    asked: Mutex<Vec<String>>,
}

impl Approver {
    fn new(elicits: bool) -> Arc<Self> {
        Arc::new(Self {
            elicits,
            asked: Mutex::default(),
        })
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl ClientHandlers for Approver {
    fn features(&self) -> ClientFeatures {
        ClientFeatures {
            elicitation_form: self.elicits,
            ..ClientFeatures::default()
        }
    }

    fn elicit(
        &self,
        _server: &str,
        params: ElicitRequestParams,
    ) -> BoxFuture<'_, Result<ElicitResult, HandlerError>> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &params {
            self.asked.lock().unwrap().push(message.clone());
        }
        Box::pin(async {
            Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true})))
        })
    }
}

/// A root for the inner agent, in a temporary directory.
fn root() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("notes.txt"), "hello\n").unwrap();
    let root = root.canonicalize().unwrap();
    (dir, root)
}

/// The server over stdio, on the offline model (no provider key reaches it).
fn spec(root: &std::path::Path) -> ServerSpec {
    let exe = example("mcp_agent_server");
    ServerSpec::stdio(
        "agent",
        exe.to_str().unwrap(),
        ["--root", root.to_str().unwrap(), "--offline"],
    )
}

async fn connect(
    root: &std::path::Path,
    lifecycle: Lifecycle,
    approver: Arc<Approver>,
) -> Coordinator {
    connect_to(spec(root), lifecycle, approver).await
}

async fn connect_to(
    spec: ServerSpec,
    lifecycle: Lifecycle,
    approver: Arc<Approver>,
) -> Coordinator {
    let coordinator = Coordinator::new(CoordinatorConfig {
        connection: ConnectionOptions {
            connect_timeout: Duration::from_secs(20),
            shutdown_grace: Duration::from_secs(1),
            lifecycle,
            ..ConnectionOptions::default()
        },
        reconnect: ReconnectPolicy::None,
        health_interval: None,
        ..CoordinatorConfig::default()
    })
    .with_client_handlers(approver);
    let report = coordinator.start_all_and_wait(vec![spec]).await.unwrap();
    assert_eq!(report.failed, vec![], "connects");
    coordinator
}

fn ask_tool(coordinator: &Coordinator) -> Arc<dyn Tool> {
    coordinator
        .tools()
        .into_iter()
        .find(|t| t.spec().name.as_str() == "mcp__agent__ask")
        .expect("the server offers ask")
}

/// The structured answer of an `ask`.
fn answer(out: &ToolOutput) -> Value {
    assert!(!out.is_error, "{out:?}");
    out.content
        .iter()
        .find_map(|c| match c {
            Content::Json { value } => Some(value.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no structured answer: {out:?}"))
}

/// Whether a process whose command line is exactly `words` is alive.
fn running(words: &[&str]) -> bool {
    let wanted: Vec<u8> = words
        .iter()
        .flat_map(|w| [w.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline")).is_ok_and(|cmdline| cmdline == wanted)
    })
}

async fn scenario(lifecycle: Lifecycle, sleep_arg: &str) {
    let (_dir, root) = root();
    scenario_on(spec(&root), &root, lifecycle, sleep_arg).await;
}

async fn scenario_on(
    spec: ServerSpec,
    root: &std::path::Path,
    lifecycle: Lifecycle,
    sleep_arg: &str,
) {
    let approver = Approver::new(true);
    let coordinator = connect_to(spec, lifecycle, Arc::clone(&approver)).await;

    // Another mux agent calls `ask`; the inner agent's `touch` needs approval, which reaches
    // this (the outer) client's elicitation handler.
    let prompt = r#"call bash {"command": "touch made.txt"}"#;
    let outer_model = ScriptedClient::new()
        .reply_tool_call("outer_1", "mcp__agent__ask", json!({"prompt": prompt}))
        .reply_text("The agent made the file.");
    let outer = Agent::builder(outer_model, "scripted")
        .approval(ApprovalPolicy::Never)
        .mcp(coordinator.clone())
        .root(root)
        .build()
        .unwrap();
    let summary = outer.run("Make the file.").await.unwrap();
    assert_eq!(summary.text, "The agent made the file.");
    let call = summary
        .tool_calls
        .iter()
        .find(|c| c.name == "mcp__agent__ask")
        .unwrap_or_else(|| panic!("{summary:?}"));
    let inner = answer(&call.output);
    assert!(
        inner["answer"].as_str().unwrap().contains("bash returned"),
        "{inner}"
    );
    assert!(root.join("made.txt").exists(), "the approved command ran");
    let asked = approver.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("touch made.txt"), "{asked:?}");

    // Progress arrives while it works, and the session id continues the conversation.
    let ask = ask_tool(&coordinator);
    let (tx, mut updates) = tokio::sync::mpsc::channel(256);
    let cx = ToolContext::new("p").with_progress(ProgressSender::new(tx));
    let first = ask
        .call(json!({"prompt": r#"call list_dir {"path": "."}"#}), cx)
        .await
        .unwrap();
    let first = answer(&first);
    let mut messages = Vec::new();
    while let Ok(event) = updates.try_recv() {
        if let ToolUpdate::Progress {
            message: Some(message),
            ..
        } = event.update
        {
            messages.push(message);
        }
    }
    assert!(
        messages.iter().any(|m| m.contains("`list_dir`")),
        "{messages:?}"
    );
    let session = first["session_id"].as_str().unwrap();
    let again = ask
        .call(
            json!({"prompt": "recall", "session_id": session}),
            ToolContext::new("r"),
        )
        .await
        .unwrap();
    let again = answer(&again);
    assert_eq!(again["session_id"], session);
    assert!(
        again["answer"].as_str().unwrap().contains("call list_dir"),
        "{again}"
    );
    let fresh = ask
        .call(json!({"prompt": "recall"}), ToolContext::new("f"))
        .await
        .unwrap();
    let fresh = answer(&fresh);
    assert_ne!(fresh["session_id"], session);
    assert!(
        fresh["answer"]
            .as_str()
            .unwrap()
            .contains("not said anything"),
        "{fresh}"
    );
    let unknown = ask
        .call(
            json!({"prompt": "recall", "session_id": "0123"}),
            ToolContext::new("u"),
        )
        .await
        .unwrap();
    assert!(unknown.is_error, "{unknown:?}");
    assert!(
        unknown.to_text().contains("unknown session_id"),
        "{unknown:?}"
    );

    // Cancel mid-call: the inner agent's `sleep` dies.
    let cancel = CancellationToken::new();
    let cx = ToolContext::new("c").with_cancellation(cancel.clone());
    let prompt = format!(r#"call bash {{"command": "sleep {sleep_arg}"}}"#);
    let call = tokio::spawn({
        let ask = Arc::clone(&ask);
        async move { ask.call(json!({ "prompt": prompt }), cx).await }
    });
    let started = Instant::now();
    while !running(&["sleep", sleep_arg]) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "sleep never started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cancel.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .unwrap();
    let cancelled = Instant::now();
    while running(&["sleep", sleep_arg]) {
        assert!(
            cancelled.elapsed() < Duration::from_secs(10),
            "the sleep survived the cancellation"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    coordinator.stop_all().await;
}

/// A client that declared no elicitation: the inner call that needs approval is refused with
/// the reason, and it does not run.
async fn refusal(lifecycle: Lifecycle) {
    let (_dir, root) = root();
    let approver = Approver::new(false);
    let coordinator = connect(&root, lifecycle, Arc::clone(&approver)).await;
    let ask = ask_tool(&coordinator);
    let out = ask
        .call(
            json!({"prompt": r#"call bash {"command": "touch refused.txt"}"#}),
            ToolContext::new("n"),
        )
        .await
        .unwrap();
    let out = answer(&out);
    assert!(
        out["answer"]
            .as_str()
            .unwrap()
            .contains("neither elicitation nor input_required"),
        "{out}"
    );
    assert!(!root.join("refused.txt").exists(), "it ran unasked");
    assert!(approver.asked().is_empty());
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_server_at_2025_11_25() {
    scenario(Lifecycle::Initialize, "31.4201").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_server_at_2026_07_28() {
    scenario(Lifecycle::Stateless, "31.4202").await;
}

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_server_over_http_with_a_token_at_2026_07_28() {
    let (_dir, root) = root();
    let mut child = Command::new(example("mcp_agent_server"))
        .args(["--root", root.to_str().unwrap(), "--offline", "--http", "0"])
        .env("MUX_MCP_TOKEN", "s3cret")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut url = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    let _child = Killed(child);
    assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
    let spec = ServerSpec::http("agent", url.trim()).with_bearer_token("s3cret");
    scenario_on(spec, &root, Lifecycle::Stateless, "31.4203").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_server_refuses_when_the_client_cannot_be_asked_at_2025_11_25() {
    refusal(Lifecycle::Initialize).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_server_refuses_when_the_client_cannot_be_asked_at_2026_07_28() {
    refusal(Lifecycle::Stateless).await;
}
