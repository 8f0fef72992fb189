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
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// The client end: JSON-RPC lines over a Unix socket to the served agent.
struct Client {
    lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
    writer: tokio::net::unix::OwnedWriteHalf,
    next_id: u64,
}

impl Client {
    /// Serves `agent` on one end of a socket pair; returns the other end.
    fn serve(agent: AcpAgent) -> Self {
        let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
        let reader = blocking::Unblock::new(theirs.try_clone().unwrap());
        let writer = blocking::Unblock::new(theirs);
        tokio::spawn(agent.serve_io(reader, writer));
        ours.set_nonblocking(true).unwrap();
        let (read, writer) = tokio::net::UnixStream::from_std(ours).unwrap().into_split();
        Self {
            lines: BufReader::new(read).lines(),
            writer,
            next_id: 0,
        }
    }

    async fn send(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.writer.write_all(line.as_bytes()).await.unwrap();
    }

    /// Sends a request and reads until its response, answering permission requests with
    /// `allow_once`; returns the response and the notifications before it.
    async fn request(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let mut notes = Vec::new();
        loop {
            let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
                .await
                .expect("the agent answered in time")
                .unwrap()
                .expect("the agent is still connected");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["method"] == "session/request_permission" {
                let reply = json!({"jsonrpc": "2.0", "id": message["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": "allow_once"}}});
                self.send(reply).await;
            } else if message.get("method").is_some() {
                notes.push(message);
            } else if message["id"] == json!(id) {
                return (message, notes);
            }
        }
    }
}

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
    let mut client = Client::serve(agent);
    let (init, _) = client
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    let (new, _) = client
        .request("session/new", json!({"cwd": dir.path(), "mcpServers": []}))
        .await;
    let session = new["result"]["sessionId"].as_str().unwrap().to_owned();
    let (done, notes) = client
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "delegate"}]}),
        )
        .await;
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
