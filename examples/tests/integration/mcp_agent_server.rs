//! `mcp_agent_server` as a real process over stdio (and once over Streamable HTTP), called through mux's own MCP client at
//! 2025-11-25 (approvals by elicitation) and 2026-07-28 (approvals by `input_required`):
//! another mux agent uses it as an MCP tool and the inner approval is answered by the outer
//! client; progress arrives while it works; a session id continues the conversation; a
//! cancelled call kills the inner `sleep`; a client that cannot be asked gets a refusal and
//! nothing runs.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use mux::llm::testing::ScriptedClient;
use mux::mcp::{Coordinator, Lifecycle, ServerSpec};
use mux::orchestrator::Agent;
use mux::tool::{
    ApprovalPolicy, Content, ProgressSender, Tool, ToolContext, ToolOutput, ToolUpdate,
};
use serde_json::{Value, json};

use crate::common::example;
use crate::mcp_client::{Approver, a_cancelled_call_kills_its_sleep, connect, serve_http};

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
    let coordinator = connect(spec, lifecycle, Arc::clone(&approver)).await;

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
    let prompt = format!(r#"call bash {{"command": "sleep {sleep_arg}"}}"#);
    a_cancelled_call_kills_its_sleep(
        ask,
        json!({ "prompt": prompt }),
        sleep_arg,
        Duration::from_secs(30),
    )
    .await;
    coordinator.stop_all().await;
}

/// A client that declared no elicitation: the inner call that needs approval is refused with
/// the reason, and it does not run.
async fn refusal(lifecycle: Lifecycle) {
    let (_dir, root) = root();
    let approver = Approver::new(false);
    let coordinator = connect(spec(&root), lifecycle, Arc::clone(&approver)).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_server_over_http_with_a_token_at_2026_07_28() {
    let (_dir, root) = root();
    let mut command = Command::new(example("mcp_agent_server"));
    command
        .args(["--root", root.to_str().unwrap(), "--offline", "--http", "0"])
        .env("MUX_MCP_TOKEN", "s3cret");
    let (_child, url) = serve_http(command);
    let spec = ServerSpec::http("agent", url).with_bearer_token("s3cret");
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
