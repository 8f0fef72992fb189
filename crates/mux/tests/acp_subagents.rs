//! A subagent's tool calls over the ACP wire: the session's `task` tool (an agent runtime's
//! own) runs a worker whose tool calls reach the client as tool calls of their own, with id
//! `{task call}/{child call}` and `_meta.mux.parentToolCallId`. The face is served over a
//! socket pair, JSON-RPC lines, as an editor would drive it.
#![cfg(all(feature = "acp", feature = "agents", feature = "testing"))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use mux::acp::AcpAgent;
use mux::agents::{AgentDefinition, AgentRuntime, AgentSession};
use mux::llm::testing::ScriptedClient;
use mux::orchestrator::Agent;

use serde_json::{Value, json};

/// The client end: JSON-RPC lines over a Unix socket to the served agent.
#[path = "support/acp_client.rs"]
#[allow(dead_code)]
mod acp_client;
use acp_client::AcpClient;

/// The updates of `notes` for `call_id`.
fn for_call<'a>(notes: &'a [Value], call_id: &str) -> Vec<&'a Value> {
    notes
        .iter()
        .map(|n| &n["params"]["update"])
        .filter(|u| u["toolCallId"] == call_id)
        .collect()
}

/// Test tools the integration tests of several crates share (`Echo` here).
#[path = "../../mux-tool/tests/support/tools.rs"]
#[allow(dead_code, unreachable_pub)]
mod tools;
use tools::Echo;

#[tokio::test]
async fn a_subagents_tool_calls_nest_under_the_task_call() {
    // One model for everyone, in order: the session delegates, the worker echoes and
    // answers, the session answers.
    let model = ScriptedClient::new()
        .reply_tool_call(
            "t1",
            "task",
            json!({"agent": "worker", "prompt": "echo hi"}),
        )
        .reply_tool_call("e1", "echo", json!({"text": "hi"}))
        .reply_text("hi")
        .reply_text("The worker said hi.");
    let model = Arc::new(model);
    // The runtime that owns the worker definition; its idle `lead` agent is the parent the
    // session's `task` calls delegate for.
    let worker_tools = Agent::builder_shared(model.clone(), "scripted")
        .tool(Echo)
        .build()
        .unwrap();
    let runtime = AgentRuntime::builder(worker_tools)
        .definition(AgentDefinition::new("worker"))
        .build();
    let lead = runtime
        .spawn(AgentDefinition::new("lead"), AgentSession::New)
        .await
        .unwrap();
    let task = lead.orchestrator().tools().get("task").unwrap();

    // The editor's agent offers the runtime's `task` tool.
    let agent = AcpAgent::new(
        Agent::builder_shared(model.clone(), "scripted")
            .tools([task])
            .build()
            .unwrap(),
    );
    let dir = tempfile::tempdir().unwrap();
    let mut client = AcpClient::serve(agent, Duration::from_secs(20));
    let (init, _) = client
        .call(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await
        .unwrap();
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    let (new, _) = client
        .call("session/new", json!({"cwd": dir.path(), "mcpServers": []}))
        .await
        .unwrap();
    let session = new["result"]["sessionId"].as_str().unwrap().to_owned();
    let (done, notes) = client
        .call(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "delegate"}]}),
        )
        .await
        .unwrap();
    assert_eq!(done["result"]["stopReason"], "end_turn", "{done}");

    let nested = for_call(&notes, "t1/e1");
    assert!(!nested.is_empty(), "no nested call in {notes:#?}");
    let call = nested[0];
    assert_eq!(call["sessionUpdate"], "tool_call", "{call}");
    assert_eq!(call["_meta"]["mux"]["parentToolCallId"], "t1", "{call}");
    assert_eq!(call["_meta"]["mux"]["agent"], "worker", "{call}");
    assert_eq!(call["rawInput"], json!({"text": "hi"}), "{call}");
    assert!(
        call["title"].as_str().unwrap().starts_with("worker: "),
        "{call}"
    );
    assert_eq!(nested.last().unwrap()["status"], "completed", "{nested:#?}");

    // The nested call shows between the task call's start and its end.
    let position = |id: &str, update: &str| {
        notes
            .iter()
            .map(|n| &n["params"]["update"])
            .position(|u| u["toolCallId"] == id && u["sessionUpdate"] == update)
            .unwrap_or_else(|| panic!("no {update} for {id} in {notes:#?}"))
    };
    let task_started = position("t1", "tool_call");
    let nested_started = position("t1/e1", "tool_call");
    let task_done = notes
        .iter()
        .map(|n| &n["params"]["update"])
        .rposition(|u| u["toolCallId"] == "t1" && u["status"] == "completed")
        .expect("the task call completed");
    assert!(task_started < nested_started && nested_started < task_done);
    runtime.shutdown_all();
}
