//! A raw JSON-RPC client for an [`AcpAgent`] served in-process, and an agent to test.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use mux_acp::AcpAgent;
use mux_llm::testing::ScriptedClient;
use mux_orchestrator::Agent;
use mux_tool::builtin::{Bash, ReadFile, Sandbox, TodoWrite, WriteFile};
use mux_tool::{Tool, Typed};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// How long any single exchange may take.
pub(crate) const LIMIT: Duration = Duration::from_secs(20);

/// The client end of a served agent.
pub(crate) struct Peer {
    tx: mpsc::UnboundedSender<String>,
    rx: mpsc::UnboundedReceiver<String>,
    next_id: u64,
    /// The option picked for every permission request (`allow_once`, ...), or `None` to
    /// leave requests unanswered.
    pub(crate) answer: Option<&'static str>,
    /// Permission requests seen.
    pub(crate) asked: Vec<Value>,
    /// The editor's buffers, by absolute path, for `fs/read_text_file` and
    /// `fs/write_text_file`.
    pub(crate) buffers: std::collections::HashMap<String, String>,
    pub(crate) served: JoinHandle<Result<(), mux_acp::AcpError>>,
}

impl Peer {
    pub(crate) fn start(agent: AcpAgent) -> Self {
        let (to_agent, agent_in) = mpsc::unbounded::<String>();
        let (agent_out, from_agent) = mpsc::unbounded::<String>();
        let transport = agent_client_protocol::Lines::new(
            agent_out.sink_map_err(std::io::Error::other),
            agent_in.map(Ok),
        );
        let served = tokio::spawn(agent.serve(transport));
        Self {
            tx: to_agent,
            rx: from_agent,
            next_id: 0,
            answer: Some("allow_once"),
            asked: Vec::new(),
            buffers: std::collections::HashMap::new(),
            served,
        }
    }

    pub(crate) fn send_raw(&mut self, line: &str) {
        self.tx.unbounded_send(line.to_owned()).unwrap();
    }

    pub(crate) fn notify(&mut self, method: &str, params: Value) {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.send_raw(&message.to_string());
    }

    /// Sends a request without waiting; returns its id.
    pub(crate) fn start_request(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let message =
            json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        self.send_raw(&message.to_string());
        self.next_id
    }

    /// Reads until the response to `id`, answering permission requests; returns the
    /// response and the notifications before it.
    pub(crate) async fn finish(&mut self, id: u64) -> (Value, Vec<Value>) {
        let mut notes = Vec::new();
        loop {
            let message = self.next_message().await;
            if message.get("method").is_some() {
                if message["method"] == "session/request_permission" {
                    self.asked.push(message.clone());
                    if let Some(option) = self.answer {
                        let reply = json!({"jsonrpc": "2.0", "id": message["id"],
                            "result": {"outcome": {"outcome": "selected", "optionId": option}}});
                        self.send_raw(&reply.to_string());
                    }
                } else if message["method"] == "fs/read_text_file" {
                    let path = message["params"]["path"].as_str().unwrap_or_default();
                    let reply = match self.buffers.get(path) {
                        Some(text) => {
                            json!({"jsonrpc": "2.0", "id": message["id"], "result": {"content": text}})
                        }
                        None => json!({"jsonrpc": "2.0", "id": message["id"],
                        "error": {"code": -32002, "message": "Resource not found"}}),
                    };
                    self.send_raw(&reply.to_string());
                    notes.push(message);
                    continue;
                } else if message["method"] == "fs/write_text_file" {
                    let params = &message["params"];
                    let path = params["path"].as_str().unwrap_or_default().to_owned();
                    let content = params["content"].as_str().unwrap_or_default().to_owned();
                    self.buffers.insert(path, content);
                    let reply = json!({"jsonrpc": "2.0", "id": message["id"], "result": {}});
                    self.send_raw(&reply.to_string());
                    notes.push(message);
                    continue;
                } else {
                    notes.push(message);
                }
            } else if message["id"] == json!(id) {
                return (message, notes);
            } else {
                notes.push(message);
            }
        }
    }

    pub(crate) async fn next_message(&mut self) -> Value {
        let line = tokio::time::timeout(LIMIT, self.rx.next())
            .await
            .expect("the agent answered in time")
            .expect("the agent is still connected");
        serde_json::from_str(&line).unwrap()
    }

    pub(crate) async fn request(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        let id = self.start_request(method, params);
        self.finish(id).await
    }

    pub(crate) async fn initialize(&mut self) -> Value {
        let (response, _) = self
            .request(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {}}),
            )
            .await;
        response["result"].clone()
    }

    pub(crate) async fn new_session(&mut self, cwd: &Path) -> String {
        let (response, _) = self
            .request("session/new", json!({"cwd": cwd, "mcpServers": []}))
            .await;
        response["result"]["sessionId"].as_str().unwrap().to_owned()
    }

    pub(crate) async fn prompt(&mut self, session: &str, text: &str) -> (Value, Vec<Value>) {
        self.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
        )
        .await
    }

    /// Closes stdin and waits for the agent to finish serving.
    pub(crate) async fn close(self) -> Duration {
        let started = std::time::Instant::now();
        drop(self.tx);
        let served = tokio::time::timeout(LIMIT, self.served).await;
        assert!(served.is_ok(), "the agent stopped serving");
        started.elapsed()
    }
}

/// The `sessionUpdate` kinds of `notes`, in order.
pub(crate) fn kinds(notes: &[Value]) -> Vec<String> {
    notes
        .iter()
        .filter_map(|n| n["params"]["update"]["sessionUpdate"].as_str())
        .map(str::to_owned)
        .collect()
}

/// The updates of `notes` for `call_id`.
pub(crate) fn for_call<'a>(notes: &'a [Value], call_id: &str) -> Vec<&'a Value> {
    notes
        .iter()
        .map(|n| &n["params"]["update"])
        .filter(|u| u["toolCallId"] == call_id)
        .collect()
}

/// An agent whose sessions run `model` with read_file, write_file, bash and todo_write in
/// the session's cwd, with no permission policy (so the face's default: reads run, writes and
/// commands ask).
pub(crate) fn agent(model: ScriptedClient) -> AcpAgent {
    let agent = Agent::builder(model, "scripted")
        .tools_at(|root| {
            let sandbox = Sandbox::new(root)?;
            let tools: Vec<Arc<dyn Tool>> = vec![
                Arc::new(Typed::new(ReadFile::new(sandbox.clone()))?),
                Arc::new(Typed::new(WriteFile::new(sandbox.clone()))?),
                Arc::new(Typed::new(Bash::new(sandbox))?),
            ];
            Ok(tools)
        })
        .tool(TodoWrite)
        .configure(|config| config.max_iterations(4))
        .build()
        .expect("the agent builds in the current directory");
    AcpAgent::new(agent)
}
