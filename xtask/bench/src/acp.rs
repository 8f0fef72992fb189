//! The ACP face's cost: one `session/prompt` turn through mux-acp (JSON-RPC encoding, the
//! SDK's dispatch, updates for every event) against the same turn through the bare loop with
//! an event receiver, in the same run; and the memory of 1,000 open ACP sessions against
//! 1,000 orchestrators built directly.

use std::sync::Arc;
use std::time::Duration;

use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use mux_acp::{AcpAgent, SessionSetup};
use mux_llm::LlmClient;
use mux_orchestrator::{Agent, Orchestrator};
use mux_permission::{PathContext, Permissions, RuleSet, Scope, ScopeRules};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

use crate::harness::{Row, per_iter};
use crate::orchestrator::{InstantModel, Noop, agent, runtime};

/// How long one answer may take before the benchmark gives up.
const LIMIT: Duration = Duration::from_secs(30);

/// A raw JSON-RPC client of an in-process agent.
struct Client {
    tx: mpsc::UnboundedSender<String>,
    rx: mpsc::UnboundedReceiver<String>,
    next_id: u64,
    /// Every line sent and received, when recording.
    transcript: Option<Vec<String>>,
}

impl Client {
    fn start(agent: AcpAgent) -> Self {
        let (tx, agent_in) = mpsc::unbounded::<String>();
        let (agent_out, rx) = mpsc::unbounded::<String>();
        let transport = agent_client_protocol::Lines::new(
            agent_out.sink_map_err(std::io::Error::other),
            agent_in.map(Ok),
        );
        tokio::spawn(agent.serve(transport));
        Self {
            tx,
            rx,
            next_id: 0,
            transcript: None,
        }
    }

    /// Sends a request and reads until its response, skipping notifications.
    async fn request(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if let Some(transcript) = &mut self.transcript {
            transcript.push(line.to_string());
        }
        self.tx
            .unbounded_send(line.to_string())
            .map_err(|e| e.to_string())?;
        loop {
            let line = tokio::time::timeout(LIMIT, self.rx.next())
                .await
                .map_err(|_| format!("no answer to {method}"))?
                .ok_or("the agent closed")?;
            if let Some(transcript) = &mut self.transcript {
                transcript.push(line.clone());
            }
            let message: Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
            if message["id"] == id && message.get("method").is_none() {
                return match message.get("error") {
                    Some(error) => Err(format!("{method}: {error}")),
                    None => Ok(message["result"].clone()),
                };
            }
        }
    }
}

/// The face over the instant model and the `noop` tool, allowed by rule.
fn face(model: Arc<dyn LlmClient>) -> AcpAgent {
    // Rules that parse, and a tool whose name is free: neither can fail.
    let rules = RuleSet::new().with_allow("noop").unwrap_or_default();
    // Anchored at each session's directory by the face.
    let permissions = Permissions::builder(PathContext::new("."))
        .scope(Scope::Project, ScopeRules::new(rules))
        .build();
    let agent = Agent::builder_shared(model, "instant")
        .tool(Noop)
        .permissions(permissions)
        .ask_user(false)
        .build();
    match agent {
        Ok(agent) => AcpAgent::new(agent),
        Err(err) => AcpAgent::new(move |_: &SessionSetup| Err(err.to_string())),
    }
}

async fn open(client: &mut Client, cwd: &std::path::Path) -> Result<String, String> {
    let created = client
        .request("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .await?;
    created["sessionId"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| "no session id".to_owned())
}

/// µs per turn (a prompt is two model turns: a tool call, then the answer).
fn per_turn(rt: &Runtime, label: &str, cwd: &std::path::Path) -> Result<Vec<Row>, String> {
    const SAMPLES: usize = 7;
    const RUNS: u32 = 500;
    let model: Arc<dyn LlmClient> = Arc::new(InstantModel { deltas: 0 });
    let failures = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let acp = {
        let (model, failures) = (Arc::clone(&model), Arc::clone(&failures));
        per_iter(SAMPLES, RUNS, move |runs| {
            let (model, failures, cwd) =
                (Arc::clone(&model), Arc::clone(&failures), cwd.to_owned());
            let task = rt.spawn(async move {
                let result = async {
                    let mut client = Client::start(face(model));
                    client
                        .request("initialize", json!({"protocolVersion": 1}))
                        .await?;
                    let session = open(&mut client, &cwd).await?;
                    for _ in 0..runs {
                        let prompt = json!({"sessionId": session,
                            "prompt": [{"type": "text", "text": "go"}]});
                        let done = client.request("session/prompt", prompt).await?;
                        if done["stopReason"] != "end_turn" {
                            return Err(format!("the turn ended {done}"));
                        }
                    }
                    Ok::<(), String>(())
                }
                .await;
                if let Err(err) = result {
                    failures.lock().map(|mut f| f.push(err)).ok();
                }
            });
            let _ = rt.block_on(task);
        })
    };
    if let Some(err) = failures.lock().ok().and_then(|f| f.first().cloned()) {
        return Err(err);
    }
    let prototype = agent(Arc::clone(&model))?;
    let bare = per_iter(SAMPLES, RUNS, |runs| {
        let prototype = prototype.clone();
        let task = rt.spawn(async move {
            // One conversation per sample, as the ACP session is.
            let agent = prototype.new_session();
            for _ in 0..runs {
                let Ok(mut run) = agent.run("go") else { return };
                while run.events.recv().await.is_some() {}
                let _ = run.handle.wait().await;
            }
        });
        let _ = rt.block_on(task);
    });
    // The JSON-RPC text of one prompt, decoded and encoded again: the part of the ACP cost
    // that is the wire format itself.
    let transcript = rt.block_on(async {
        let mut client = Client::start(face(Arc::clone(&model)));
        client
            .request("initialize", json!({"protocolVersion": 1}))
            .await?;
        let session = open(&mut client, cwd).await?;
        client.transcript = Some(Vec::new());
        let prompt = json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]});
        client.request("session/prompt", prompt).await?;
        Ok::<Vec<String>, String>(client.transcript.unwrap_or_default())
    })?;
    let encoding = per_iter(SAMPLES, RUNS, |runs| {
        for _ in 0..runs {
            for line in &transcript {
                let value: Value = serde_json::from_str(line).unwrap_or(Value::Null);
                std::hint::black_box(value.to_string());
            }
        }
    });
    let per_turn = |d: Duration| d.as_secs_f64() * 1e6 / 2.0;
    let bare_value = per_turn(bare);
    Ok(vec![
        Row {
            name: format!("ACP turn (session/prompt, in-process), {label}"),
            value: per_turn(acp),
            unit: "µs",
            baseline: "the loop, run() + event receiver".into(),
            baseline_value: bare_value,
        },
        Row {
            name: format!(
                "ACP turn's JSON text ({} messages) decoded + encoded",
                transcript.len()
            ),
            value: per_turn(encoding),
            unit: "µs",
            baseline: "the loop, run() + event receiver".into(),
            baseline_value: bare_value,
        },
    ])
}

/// The heap kept by 1,000 open ACP sessions against 1,000 orchestrators built directly.
fn open_sessions(rt: &Runtime, cwd: &std::path::Path) -> Result<Row, String> {
    const SESSIONS: usize = 1_000;
    let model: Arc<dyn LlmClient> = Arc::new(InstantModel { deltas: 0 });
    let (client, acp_bytes) = crate::heap::growth(|| {
        rt.block_on(async {
            let mut client = Client::start(face(Arc::clone(&model)));
            client
                .request("initialize", json!({"protocolVersion": 1}))
                .await?;
            for _ in 0..SESSIONS {
                open(&mut client, cwd).await?;
            }
            Ok::<Client, String>(client)
        })
    });
    let client = client?;
    // The same sessions built directly: an orchestrator each, with its own tools and policy.
    let (bare, bare_bytes) = crate::heap::growth(|| {
        (0..SESSIONS)
            .map(|_| agent(Arc::clone(&model)))
            .collect::<Result<Vec<Orchestrator>, String>>()
    });
    let bare = bare?;
    assert_eq!(bare.len(), SESSIONS);
    drop(client);
    let mib = |bytes: i64| bytes as f64 / (1024.0 * 1024.0);
    Ok(Row {
        name: "1,000 open ACP sessions, heap kept".into(),
        value: mib(acp_bytes),
        unit: "MiB",
        baseline: "1,000 orchestrators built directly".into(),
        baseline_value: mib(bare_bytes),
    })
}

pub(crate) fn run() -> Result<Vec<Row>, String> {
    let rt = runtime()?;
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let _guard = rt.enter();
    let mut rows = per_turn(&rt, "2 workers", dir.path())?;
    // On one thread no message crosses cores: what is left is the work itself.
    let single = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    rows.extend(
        per_turn(&single, "1 thread", dir.path())?
            .into_iter()
            .take(1),
    );
    rows.push(open_sessions(&rt, dir.path())?);
    Ok(rows)
}
