//! The same defaults as every face: a read-only tool runs without asking the editor, whether
//! the agent has no permission policy (the face's default) or one with no rules; a call that
//! is not read-only still asks. A fetch (read-only, open world, a URL as its subject, as
//! `web_fetch`) runs unasked here as on the web face and without a face.

use std::sync::Arc;

use mux_acp::AcpAgent;
use mux_llm::testing::ScriptedClient;
use mux_orchestrator::Agent;
use mux_permission::{PathContext, Permissions};
use mux_tool::builtin::{ReadFile, Sandbox, WriteFile};
use mux_tool::{Tool, Typed};
use serde_json::json;

use crate::harness::{Peer, for_call};

use crate::tools::Fetch;

fn model() -> ScriptedClient {
    ScriptedClient::new()
        .reply_tool_call("r1", "read_file", json!({"path": "notes.txt"}))
        .reply_tool_call(
            "w1",
            "write_file",
            json!({"path": "out.txt", "content": "x"}),
        )
        .reply_text("done")
}

fn file_tools(
    root: &std::path::Path,
) -> Result<Vec<Arc<dyn Tool>>, mux_orchestrator::ToolsetError> {
    let sandbox = Sandbox::new(root)?;
    Ok(vec![
        Arc::new(Typed::new(ReadFile::new(sandbox.clone()))?),
        Arc::new(Typed::new(WriteFile::new(sandbox))?),
    ])
}

async fn run(agent: Agent) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "a note\n").unwrap();
    let mut peer = Peer::start(AcpAgent::new(agent));
    peer.initialize().await;
    let session = peer.new_session(dir.path()).await;
    let (done, notes) = peer.prompt(&session, "read, then write").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");

    let asked: Vec<_> = peer
        .asked
        .iter()
        .map(|a| a["params"]["toolCall"]["toolCallId"].clone())
        .collect();
    assert_eq!(asked, [json!("w1")], "only the write asks the editor");
    let read = for_call(&notes, "r1");
    assert_eq!(read.last().unwrap()["status"], "completed", "{read:?}");
    assert_eq!(read[0]["kind"], "read");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "x"
    );
}

#[tokio::test]
async fn without_a_policy_a_read_only_tool_runs_and_a_write_asks_the_editor() {
    let agent = Agent::builder(model(), "scripted")
        .tools_at(file_tools)
        .build()
        .unwrap();
    run(agent).await;
}

#[tokio::test]
async fn under_a_policy_with_no_rules_a_read_only_tool_runs_and_a_write_asks_the_editor() {
    let agent = Agent::builder(model(), "scripted")
        .tools_at(file_tools)
        .permissions(Permissions::builder(PathContext::new(".")).build())
        .build()
        .unwrap();
    run(agent).await;
}

#[tokio::test]
async fn without_a_policy_a_fetch_runs_without_asking_the_editor() {
    let model = ScriptedClient::new()
        .reply_tool_call("f1", "web_fetch", json!({"url": "https://example.com/"}))
        .reply_text("done");
    let agent = Agent::builder(model, "scripted")
        .tool(Fetch::default())
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut peer = Peer::start(AcpAgent::new(agent));
    peer.initialize().await;
    let session = peer.new_session(dir.path()).await;
    let (done, notes) = peer.prompt(&session, "fetch").await;
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");
    assert!(
        peer.asked.is_empty(),
        "the editor was asked: {:?}",
        peer.asked
    );
    let fetch = for_call(&notes, "f1");
    assert_eq!(fetch.last().unwrap()["status"], "completed", "{fetch:?}");
}
