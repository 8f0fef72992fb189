//! A mux-web server on a scripted model that plays one scenario per prompt.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use mux_llm::testing::ScriptedClient;
use mux_llm::{ContentBlock, Request, Response, StopReason};
use mux_orchestrator::Agent;
use mux_orchestrator::session::{MemorySessionStore, SessionStore};
use mux_tool::builtin::{Bash, Sandbox};
use mux_tool::{BoxFuture, Tool, ToolAnnotations, ToolContext, ToolError, ToolOutput, ToolSpec};
use mux_web::{AguiRouter, WebConfig};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// Test tools mux-tool's, the orchestrator's, the editor face's and this crate's tests share.
#[path = "../../../../mux-tool/tests/support/tools.rs"]
#[allow(dead_code, unreachable_pub)]
mod tools;
pub(crate) use tools::{PlanSteps, SaveNote};

/// Test models the orchestrator's, the agents' and the faces' tests share.
#[path = "../../../../mux-llm/tests/support/models.rs"]
#[allow(dead_code, unreachable_pub)]
mod models;
pub(crate) use models::{calling_until, latest_prompt, tool_result_count, tool_result_texts};

/// A running server; aborted on drop.
pub(crate) struct Server {
    pub(crate) url: String,
    task: JoinHandle<std::io::Result<()>>,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A `RunAgentInput` with one user message.
pub(crate) fn input(thread: &str, run: &str, text: &str) -> Value {
    json!({"threadId": thread, "runId": run, "messages": [{"id": format!("{run}-u"), "role": "user", "content": text}]})
}

/// The data lines of an SSE body, parsed; the stream must end within 20 s.
pub(crate) async fn events(response: reqwest::Response) -> Vec<Value> {
    events_within(response, Duration::from_secs(20)).await
}

/// The data lines of an SSE body, parsed; the stream must end within `timeout`.
pub(crate) async fn events_within(response: reqwest::Response, timeout: Duration) -> Vec<Value> {
    let body = tokio::time::timeout(timeout, response.text())
        .await
        .expect("the stream did not end")
        .unwrap();
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

/// Sends `request` and reads the events of its SSE answer.
pub(crate) async fn events_of(request: reqwest::RequestBuilder) -> Vec<Value> {
    events(request.send().await.unwrap()).await
}

/// The `type` of each event.
pub(crate) fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

pub(crate) async fn start(config: WebConfig) -> Server {
    start_on(config, Arc::new(MemorySessionStore::new())).await
}

/// A server whose threads live in `store` (to share it between servers).
pub(crate) async fn start_on(config: WebConfig, store: Arc<dyn SessionStore>) -> Server {
    let (router, dir) = router_on(config, store);
    let listener = mux_web::bind(0).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(mux_web::serve(listener, router));
    Server {
        url,
        task,
        _dir: dir,
    }
}

/// The router of [`start`], with the temporary directory its tools work in.
pub(crate) fn router(config: WebConfig) -> (axum::Router, tempfile::TempDir) {
    router_on(config, Arc::new(MemorySessionStore::new()))
}

fn router_on(config: WebConfig, store: Arc<dyn SessionStore>) -> (axum::Router, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(dir.path()).unwrap();
    let client = ScriptedClient::new().respond_with(respond);
    let agent = Agent::builder(client, "scripted")
        .tool(Bash::new(sandbox))
        .tool(mux_tool::builtin::TodoWrite)
        // An application's edit tool; each server starts with the note `todo.md`.
        .tool(SaveNote::with_note("todo.md", "buy milk\n"))
        .tool(PlanSteps)
        .tools([Arc::new(Tick::new(Duration::from_millis(150))) as Arc<dyn Tool>])
        .root(dir.path())
        .build()
        .unwrap();
    let router = AguiRouter::new(agent)
        .session_store(store)
        .config(config)
        .build();
    (router, dir)
}

/// The model: the latest prompt picks a scenario; tool results drive it on.
fn respond(request: &Request) -> Result<Response, mux_llm::LlmError> {
    let (prompt, since) = latest_prompt(&request.messages);
    let results = tool_result_texts(since);
    let last = results.last().cloned();
    Ok(match prompt.as_str() {
        p if p.starts_with("run echo") => match last {
            None => call("bash", json!({"command": "echo approved-output"})),
            Some(result) => text(&format!("Result: {result}")),
        },
        p if p.starts_with("sleep ") => match last {
            // `sleep N` with the client's unique N, so its check finds only its own child.
            None => call("bash", json!({"command": p})),
            Some(result) => text(&format!("Result: {result}")),
        },
        "pick a color" => match last {
            None => call("pick_color", json!({})),
            Some(result) => text(&format!("You picked {result}")),
        },
        "ask me" => match last {
            None => call("ask_user", json!({"question": "Which color?"})),
            Some(result) => text(&format!("You said {result}")),
        },
        "plan" => match results.len() {
            0 => call(
                "todo_write",
                json!({"todos": [{"content": "look", "status": "in_progress"}]}),
            ),
            1 => call(
                "todo_write",
                json!({"todos": [{"content": "look", "status": "completed"}]}),
            ),
            _ => text("Planned."),
        },
        "save note" => match last {
            None => call(
                "save_note",
                json!({"name": "todo.md", "text": "buy milk\nbuy bread\n"}),
            ),
            Some(result) => text(&format!("Result: {result}")),
        },
        "plan steps" => match last {
            None => call("plan_steps", json!({"steps": ["Read", "Write"]})),
            Some(_) => text("Planned."),
        },
        "slow" if results.len() < 5 => call("tick", json!({"n": results.len()})),
        "slow" => text("Ticked."),
        _ => text("Hello from mux."),
    })
}

fn text(text: &str) -> Response {
    response(vec![ContentBlock::text(text)], StopReason::EndTurn)
}

fn call(name: &str, input: Value) -> Response {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let id = format!(
        "call_{}",
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    response(
        vec![ContentBlock::tool_use(id, name, input)],
        StopReason::ToolUse,
    )
}

fn response(content: Vec<ContentBlock>, stop_reason: StopReason) -> Response {
    Response::new(content, stop_reason).with_usage(mux_llm::Usage {
        input_tokens: 10,
        output_tokens: 5,
        ..Default::default()
    })
}

/// `tick`: a read-only tool that takes `delay`, so a run lasts long enough to drop and
/// reattach, to be taken over, or to spend its budget; it answers `tick {n}`.
pub(crate) struct Tick {
    spec: ToolSpec,
    delay: Duration,
}

impl Tick {
    pub(crate) fn new(delay: Duration) -> Self {
        let spec = ToolSpec::new("tick", "Waits a moment", json!({"type": "object"}))
            .unwrap()
            .with_annotations(ToolAnnotations::read_only());
        Self { spec, delay }
    }
}

impl Tool for Tick {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, input: Value, _cx: ToolContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            Ok(ToolOutput::text(format!("tick {}", input["n"])))
        })
    }
}

/// `tests/web-peers`, where `cargo xtask peers` installs the npm peers.
pub(crate) fn web_peers() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/web-peers");
    assert!(
        dir.join("node_modules/@ag-ui/client").is_dir(),
        "the AG-UI peers are not installed in {}: run `cargo xtask peers`",
        dir.display()
    );
    dir
}

/// Holds `BEGIN EXCLUSIVE` on the SQLite file `argv[1]` for `argv[2]` seconds, after saying
/// `locked` (another process's long write transaction, or an operator's open shell).
const HOLD_LOCK: &str = "
import sqlite3, sys, time
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
db.execute('BEGIN EXCLUSIVE')
print('locked', flush=True)
time.sleep(float(sys.argv[2]))
db.execute('ROLLBACK')
";

/// Starts a python3 process that holds the SQLite file `path` locked for `secs` seconds;
/// returns once it holds the lock (blocking this worker thread: a multi-thread runtime only).
pub(crate) fn hold_sqlite_lock(path: &std::path::Path, secs: &str) -> std::process::Child {
    use std::io::BufRead as _;
    let mut child = std::process::Command::new("python3")
        .args(["-c", HOLD_LOCK])
        .arg(path)
        .arg(secs)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("running python3");
    let stdout = child.stdout.take().unwrap();
    let said = tokio::task::block_in_place(|| {
        std::io::BufReader::new(stdout)
            .lines()
            .next()
            .unwrap()
            .unwrap()
    });
    assert_eq!(said, "locked");
    child
}

/// Posts a run's `input` to `{url}/agui`; its status and body (the SSE text, or the error).
/// Panics when it is not answered within `hang` (a hang detector, not a timing assertion).
pub(crate) async fn post_run(
    http: &reqwest::Client,
    url: &str,
    input: &Value,
    hang: Duration,
) -> (u16, String) {
    let answer = async {
        let response = http
            .post(format!("{url}/agui"))
            .json(input)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.text().await.unwrap())
    };
    tokio::time::timeout(hang, answer)
        .await
        .unwrap_or_else(|_| panic!("run {} was not answered: the request hangs", input["runId"]))
}

/// A thread's history as `GET /agui/threads/{thread}/messages` on `url` answers it.
pub(crate) async fn history(http: &reqwest::Client, url: &str, thread: &str) -> Value {
    let url = format!("{url}/agui/threads/{thread}/messages");
    let response = http.get(url).send().await.unwrap();
    response.json().await.unwrap()
}

/// Serves `router` on a free port: its URL and the server's task.
pub(crate) async fn serve(router: axum::Router) -> (String, JoinHandle<std::io::Result<()>>) {
    let listener = mux_web::bind(0).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    (url, tokio::spawn(mux_web::serve(listener, router)))
}

/// An agent on a model answering by `respond`, with one tool: `tick`, taking 250 ms.
pub(crate) fn tick_agent(respond: fn(&Request) -> Result<Response, mux_llm::LlmError>) -> Agent {
    let client = ScriptedClient::new().respond_with(respond);
    Agent::builder(client, "scripted")
        .tools([Arc::new(Tick::new(Duration::from_millis(250))) as Arc<dyn Tool>])
        .build()
        .unwrap()
}

/// Asserts that a thread's history holds a paused approval carried through: the prompt, the
/// call, its result and the answer.
pub(crate) async fn assert_approved_history(http: &reqwest::Client, url: &str, thread: &str) {
    let history = history(http, url, thread).await;
    let roles: Vec<&str> = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "tool", "assistant"],
        "{history}"
    );
}
