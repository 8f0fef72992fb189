//! A prompt is durable before it is acknowledged, on every face, every double-texting
//! strategy and every store.
//!
//! One table: face × strategy × store. Each case pauses a run at an approval (the model
//! calls `charge`, which always asks), gets rid of the pause the way its strategy says
//! (cancel, then send; or send and let the server interrupt), and sends a new prompt. Then:
//!
//! - (a) the thread's stored history has the new prompt;
//! - (b) a run answered it: the scripted model's reply to it is stored after it, and the
//!   face reported the run's end;
//! - (c) no tool call is left without a result.
//!
//! The web face and A2A (asked to answer at once) are also checked at the moment they
//! acknowledge: the prompt must be stored by then. Every store writes the new prompt's
//! records a little late (the session store is wrapped), so a face that acknowledges
//! before the write lands is caught every time, not by chance.
//!
//! A new prompt refused while the pause is open (409, a JSON-RPC error) is not acknowledged
//! and is not checked further. Before the fix, the web face's cancel-then-send and interrupt
//! and A2A's `CancelTask`-then-send lost the prompt on every store: the new run asked the
//! old approval again, holding the prompt in memory, and the pause dropped that loop.
//!
//! Stores: memory, SQLite, PostgreSQL (a throw-away server from mux-testkit) and files
//! (sessions and runs in a directory).
#![cfg(all(
    feature = "web",
    feature = "a2a",
    feature = "acp",
    feature = "testing",
    feature = "sqlite",
    feature = "postgres"
))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use mux::a2a::A2aServer;
use mux::acp::AcpAgent;
use mux::llm::testing::ScriptedClient;
use mux::llm::{ContentBlock, Message, Request, Response, Role, StopReason};
use mux::orchestrator::Agent;
use mux::orchestrator::runs::{
    FileRunStore, MemoryRunStore, PostgresRunStore, RunStore, SqliteRunStore,
};
use mux::orchestrator::session::{
    FileSessionStore, HistoryRecord, MemorySessionStore, PostgresSessionStore, Session,
    SessionError, SessionMeta, SessionStore, SqliteSessionStore,
};
use mux::tool::{BoxFuture, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use mux::web::{AguiRouter, DoubleTexting, WebConfig};
use mux_testkit::postgres::TestDatabase;
use serde_json::{Value, json};

/// The first prompt: the model calls `charge`, which asks.
const PAY: &str = "pay";
/// How long any one wait of a case may take.
const WAIT: Duration = Duration::from_secs(20);
/// What every new prompt (the one sent after the pause) says.
const NEW_PROMPT: &str = "hello after";
/// How late the session store writes a record of a new prompt.
const LATE: Duration = Duration::from_millis(300);

/// The model's reply to a prompt that is not [`PAY`].
fn reply_to(prompt: &str) -> String {
    format!("Answer to: {prompt}")
}

/// The model: [`PAY`] calls `charge` (then says it paid); any other prompt is answered with
/// [`reply_to`]. The prompt is the last user message with text.
fn respond(request: &Request) -> Result<Response, mux::llm::LlmError> {
    let at = request
        .messages
        .iter()
        .rposition(|m| m.role == Role::User && m.content.iter().any(|b| b.as_text().is_some()))
        .unwrap_or(0);
    let prompt = request.messages[at].text();
    let results = request.messages[at..]
        .iter()
        .flat_map(|m| &m.content)
        .filter(|b| matches!(b, ContentBlock::ToolResult { .. }))
        .count();
    let content = match (prompt.as_str(), results) {
        (PAY, 0) => {
            static NEXT: AtomicU32 = AtomicU32::new(1);
            let id = format!("call_{}", NEXT.fetch_add(1, Ordering::Relaxed));
            return Ok(Response::new(
                vec![ContentBlock::tool_use(id, "charge", json!({}))],
                StopReason::ToolUse,
            ));
        }
        (PAY, _) => "Paid.".to_owned(),
        (other, _) => reply_to(other),
    };
    Ok(Response::new(
        vec![ContentBlock::text(content)],
        StopReason::EndTurn,
    ))
}

/// A tool that always asks before it runs.
struct Charge(ToolSpec);

impl Tool for Charge {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }

    fn call(&self, _: Value, _: ToolContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async { Ok(ToolOutput::text("charged")) })
    }
}

/// A session store that writes every record saying [`NEW_PROMPT`] [`LATE`]: a face that
/// acknowledges a prompt before its write lands is seen doing so.
struct LateNewPrompts(Arc<dyn SessionStore>);

impl LateNewPrompts {
    async fn delay(records: &[HistoryRecord]) {
        let new_prompt = records.iter().any(|record| match record {
            HistoryRecord::Message { message } => message
                .content
                .iter()
                .any(|b| b.as_text().is_some_and(|t| t.contains(NEW_PROMPT))),
            _ => false,
        });
        if new_prompt {
            tokio::time::sleep(LATE).await;
        }
    }
}

impl SessionStore for LateNewPrompts {
    fn create<'a>(&'a self, meta: &'a SessionMeta) -> BoxFuture<'a, Result<(), SessionError>> {
        self.0.create(meta)
    }

    fn save_meta<'a>(&'a self, meta: &'a SessionMeta) -> BoxFuture<'a, Result<(), SessionError>> {
        self.0.save_meta(meta)
    }

    fn append<'a>(
        &'a self,
        id: &'a str,
        records: &'a [HistoryRecord],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            Self::delay(records).await;
            self.0.append(id, records).await
        })
    }

    fn save_and_append<'a>(
        &'a self,
        meta: &'a SessionMeta,
        records: &'a [HistoryRecord],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            Self::delay(records).await;
            self.0.save_and_append(meta, records).await
        })
    }

    fn create_and_append<'a>(
        &'a self,
        meta: &'a SessionMeta,
        records: &'a [HistoryRecord],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            Self::delay(records).await;
            self.0.create_and_append(meta, records).await
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Session, SessionError>> {
        self.0.load(id)
    }

    fn load_meta<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionMeta, SessionError>> {
        self.0.load_meta(id)
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<SessionMeta>, SessionError>> {
        self.0.list()
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), SessionError>> {
        self.0.delete(id)
    }
}

fn agent(sessions: &Arc<dyn SessionStore>) -> Agent {
    let charge =
        Charge(ToolSpec::new("charge", "Charges a card", json!({"type": "object"})).unwrap());
    Agent::builder(ScriptedClient::new().respond_with(respond), "scripted")
        .tools([Arc::new(charge) as Arc<dyn Tool>])
        .needs_approval("charge", |_| true)
        .session_store(Arc::clone(sessions))
        .build()
        .unwrap()
}

/// Where sessions and runs are kept.
#[derive(Clone, Copy, Debug)]
enum Store {
    Memory,
    Files,
    Sqlite,
    Postgres,
}

/// How the new prompt gets past the pause.
#[derive(Clone, Copy, Debug)]
enum Face {
    /// The web face under a double-texting strategy: with `cancel`, the client cancels the
    /// paused run first; without, it sends at once (the strategy decides).
    Web {
        strategy: DoubleTexting,
        cancel: bool,
    },
    /// A2A: `CancelTask` of the paused task, then a new message on its context.
    A2a,
    /// ACP: `session/cancel` of the paused prompt, then a new `session/prompt`.
    Acp,
}

/// The stores of one case, and what they live in.
struct Stores {
    sessions: Arc<dyn SessionStore>,
    runs: Arc<dyn RunStore>,
    _dir: tempfile::TempDir,
}

async fn stores(store: Store, db: &TestDatabase) -> Stores {
    let dir = tempfile::tempdir().unwrap();
    let (sessions, runs): (Arc<dyn SessionStore>, Arc<dyn RunStore>) = match store {
        Store::Memory => (
            Arc::new(MemorySessionStore::new()),
            Arc::new(MemoryRunStore::new()),
        ),
        Store::Files => (
            Arc::new(FileSessionStore::new(dir.path().join("sessions"))),
            Arc::new(FileRunStore::open(dir.path().join("runs")).await.unwrap()),
        ),
        Store::Sqlite => {
            let path = dir.path().join("mux.db");
            (
                Arc::new(SqliteSessionStore::open(&path).await.unwrap()),
                Arc::new(SqliteRunStore::open(&path).await.unwrap()),
            )
        }
        Store::Postgres => (
            Arc::new(PostgresSessionStore::connect(&db.url).await.unwrap()),
            Arc::new(PostgresRunStore::connect(&db.url).await.unwrap()),
        ),
    };
    Stores {
        sessions: Arc::new(LateNewPrompts(sessions)),
        runs,
        _dir: dir,
    }
}

/// What a case found wrong, if anything.
type Verdict = Result<(), String>;

/// Checks that the stored session `id` has `prompt`, at the moment it was acknowledged.
async fn check_stored_at_ack(sessions: &dyn SessionStore, id: &str, prompt: &str) -> Verdict {
    let session = sessions
        .load(id)
        .await
        .map_err(|e| format!("loading the session at the ack: {e}"))?;
    let stored = session.messages.iter().any(|m| {
        m.role == Role::User
            && m.content
                .iter()
                .any(|b| b.as_text().is_some_and(|t| t.contains(prompt)))
    });
    if stored {
        Ok(())
    } else {
        Err("the new prompt was acknowledged before it was stored".into())
    }
}

/// Checks the stored session `id` after the new prompt `prompt` was acknowledged.
async fn check_history(sessions: &dyn SessionStore, id: &str, prompt: &str) -> Verdict {
    let session = sessions
        .load(id)
        .await
        .map_err(|e| format!("loading the session: {e}"))?;
    let messages = &session.messages;
    let said = |m: &Message, text: &str| {
        m.content
            .iter()
            .any(|b| b.as_text().is_some_and(|t| t.contains(text)))
    };
    let shown = || {
        messages
            .iter()
            .map(|m| format!("{:?}: {:?}", m.role, m.content))
            .collect::<Vec<_>>()
            .join("\n  ")
    };
    // (a) the prompt is stored.
    let at = messages
        .iter()
        .position(|m| m.role == Role::User && said(m, prompt))
        .ok_or_else(|| {
            format!(
                "(a) the new prompt is not in the stored history:\n  {}",
                shown()
            )
        })?;
    // (b) a run answered it.
    let answer = reply_to(prompt);
    if !messages[at..]
        .iter()
        .any(|m| m.role == Role::Assistant && said(m, &answer))
    {
        return Err(format!(
            "(b) no stored answer to the new prompt:\n  {}",
            shown()
        ));
    }
    // (c) every call has its result in the next message.
    for (i, message) in messages.iter().enumerate() {
        for block in &message.content {
            let ContentBlock::ToolUse { id: call, .. } = block else {
                continue;
            };
            let answered = messages.get(i + 1).is_some_and(|next| {
                next.content.iter().any(|b| {
                    matches!(b, ContentBlock::ToolResult { tool_use_id, .. } if tool_use_id == call)
                })
            });
            if !answered {
                return Err(format!("(c) call {call} has no result:\n  {}", shown()));
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_acknowledged_on_any_face_strategy_and_store_is_stored_and_answered() {
    let db = TestDatabase::new().await;
    let faces = [
        Face::Web {
            strategy: DoubleTexting::Reject,
            cancel: true,
        },
        Face::Web {
            strategy: DoubleTexting::Enqueue,
            cancel: true,
        },
        Face::Web {
            strategy: DoubleTexting::Interrupt,
            cancel: false,
        },
        Face::Web {
            strategy: DoubleTexting::Interrupt,
            cancel: true,
        },
        Face::A2a,
        Face::Acp,
    ];
    let mut failures = Vec::new();
    let mut cases = 0;
    for store in [Store::Memory, Store::Files, Store::Sqlite, Store::Postgres] {
        for (n, face) in faces.iter().enumerate() {
            cases += 1;
            let stores = stores(store, &db).await;
            let thread = format!("t-{store:?}-{n}").to_lowercase();
            let verdict = tokio::time::timeout(WAIT * 3, run_case(*face, &stores, &thread))
                .await
                .unwrap_or_else(|_| Err("the case did not end in time".into()));
            if let Err(why) = verdict {
                failures.push(format!("{face:?} on {store:?}: {why}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} cases failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

async fn run_case(face: Face, stores: &Stores, thread: &str) -> Verdict {
    match face {
        Face::Web { strategy, cancel } => web_case(stores, thread, strategy, cancel).await,
        Face::A2a => a2a_case(stores).await,
        Face::Acp => acp_case(stores).await,
    }
}

// ---- The web face (AG-UI over HTTP/SSE) ----

fn http() -> reqwest::Client {
    // With `otel`, reqwest has no crypto provider of its own (plain HTTP needs none, but
    // building a client asks for one).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().no_proxy().build().unwrap()
}

/// Reads an SSE response to its end; the events' data.
async fn sse(mut response: reqwest::Response) -> Result<Vec<Value>, String> {
    let mut out = Vec::new();
    let mut pending = String::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let chunk = tokio::time::timeout_at(deadline, response.chunk())
            .await
            .map_err(|_| format!("the stream stalled after {out:?}"))?
            .map_err(|e| format!("reading the stream: {e}"))?;
        let Some(chunk) = chunk else { return Ok(out) };
        pending.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = pending.find('\n') {
            let line: String = pending.drain(..=end).collect();
            if let Some(data) = line.trim_end().strip_prefix("data:") {
                out.push(serde_json::from_str(data.trim()).map_err(|e| e.to_string())?);
            }
        }
    }
}

/// The interrupt ids a run ended on (none when it did not end on interrupts).
fn interrupts(events: &[Value]) -> Vec<String> {
    events
        .last()
        .and_then(|last| last["outcome"]["interrupts"].as_array())
        .map(|all| {
            all.iter()
                .filter_map(|i| i["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

async fn web_case(stores: &Stores, thread: &str, strategy: DoubleTexting, cancel: bool) -> Verdict {
    let router = AguiRouter::new(agent(&stores.sessions))
        .session_store(Arc::clone(&stores.sessions))
        .run_store(Arc::clone(&stores.runs))
        .config(WebConfig::default().double_texting(strategy))
        .build();
    let listener = mux::web::bind(0).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(mux::web::serve(listener, router));
    let verdict = web_steps(&url, stores, thread, strategy, cancel).await;
    server.abort();
    verdict
}

async fn web_steps(
    url: &str,
    stores: &Stores,
    thread: &str,
    strategy: DoubleTexting,
    cancel: bool,
) -> Verdict {
    let http = http();
    let post = |body: Value| http.post(format!("{url}/agui")).json(&body).send();
    let user =
        |run: &str, text: &str| json!({"id": format!("{run}-u"), "role": "user", "content": text});
    // Run ids are per principal in the run store, and the cases share a database.
    let run = |name: &str| format!("{thread}-{name}");
    let prompt = "hello after the pause";
    assert!(prompt.starts_with(NEW_PROMPT));

    let paused = sse(post(
        json!({"threadId": thread, "runId": run("r1"), "messages": [user("r1", PAY)]}),
    )
    .await
    .unwrap())
    .await?;
    if interrupts(&paused).is_empty() {
        return Err(format!("the first run did not pause: {paused:?}"));
    }
    if strategy != DoubleTexting::Interrupt {
        // Not acknowledged: the pause waits for its answer.
        let refused =
            post(json!({"threadId": thread, "runId": run("r2"), "messages": [user("r2", prompt)]}))
                .await
                .unwrap();
        if refused.status() != 409 {
            return Err(format!(
                "a prompt on a paused thread under {strategy:?} was not refused: {}",
                refused.status()
            ));
        }
    }
    if cancel {
        let cancelled = http
            .post(format!("{url}/agui/runs/{}/cancel", run("r1")))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        if !cancelled.status().is_success() {
            return Err(format!("cancel: {}", cancelled.status()));
        }
    }
    let body = json!({"threadId": thread, "runId": run("r3"),
                      "messages": [user("r1", PAY), user("r3", prompt)]});
    let response = post(body).await.unwrap();
    if response.status() != 200 {
        return Err(format!(
            "the new prompt was not acknowledged: {}",
            response.status()
        ));
    }
    // The stream is open: the prompt is stored.
    check_stored_at_ack(&*stores.sessions, thread, prompt).await?;
    let mut events = sse(response).await?;
    if events.first().map(|e| &e["type"]) != Some(&json!("RUN_STARTED")) {
        return Err(format!("no RUN_STARTED: {events:?}"));
    }
    // Whatever the run asks now, approve it (as a person would), a few times at most.
    for n in 0..3 {
        let ids = interrupts(&events);
        if ids.is_empty() {
            break;
        }
        let answer = run(&format!("answer-{n}"));
        let resume: Vec<Value> = ids
            .iter()
            .map(|id| json!({"interruptId": id, "status": "resolved", "payload": {"approved": true}}))
            .collect();
        events = sse(post(
            json!({"threadId": thread, "runId": answer, "messages": [], "resume": resume}),
        )
        .await
        .unwrap())
        .await?;
    }
    let last = events.last().cloned().unwrap_or_default();
    if last["type"] != "RUN_FINISHED" {
        return Err(format!("the last run did not finish: {events:?}"));
    }
    check_history(&*stores.sessions, thread, prompt).await
}

// ---- A2A (JSON-RPC over HTTP) ----

async fn rpc(url: &str, method: &str, params: Value) -> Value {
    http()
        .post(url)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn a2a_message(text: &str, context: Option<&str>, task: Option<&str>) -> Value {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let mut message = json!({
        "messageId": format!("m-{}", NEXT.fetch_add(1, Ordering::Relaxed)),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    });
    if let Some(context) = context {
        message["contextId"] = json!(context);
    }
    if let Some(task) = task {
        message["taskId"] = json!(task);
    }
    json!({"message": message})
}

async fn a2a_case(stores: &Stores) -> Verdict {
    let server = A2aServer::new(agent(&stores.sessions))
        .session_store(Arc::clone(&stores.sessions))
        .run_store(Arc::clone(&stores.runs))
        .serve(([127, 0, 0, 1], 0).into())
        .await
        .unwrap();
    let verdict = a2a_steps(&server.rpc_url(), stores).await;
    server.shutdown().await;
    verdict
}

async fn a2a_steps(url: &str, stores: &Stores) -> Verdict {
    let prompt = "hello after the cancel";
    assert!(prompt.starts_with(NEW_PROMPT));
    let sent = rpc(url, "SendMessage", a2a_message(PAY, None, None)).await;
    let task = &sent["result"]["task"];
    if task["status"]["state"] != "TASK_STATE_INPUT_REQUIRED" {
        return Err(format!("the first task did not pause: {sent}"));
    }
    let (id, context) = (
        task["id"].as_str().unwrap().to_owned(),
        task["contextId"].as_str().unwrap().to_owned(),
    );
    // Not acknowledged: the context has a task in progress.
    let refused = rpc(
        url,
        "SendMessage",
        a2a_message(prompt, Some(&context), None),
    )
    .await;
    if refused.get("error").is_none() {
        return Err(format!(
            "a message on a paused context was taken: {refused}"
        ));
    }
    let cancelled = rpc(url, "CancelTask", json!({"id": id})).await;
    if cancelled["result"]["status"]["state"] != "TASK_STATE_CANCELED" {
        return Err(format!("CancelTask: {cancelled}"));
    }
    let mut at_once = a2a_message(prompt, Some(&context), None);
    at_once["configuration"] = json!({"returnImmediately": true});
    let sent = rpc(url, "SendMessage", at_once).await;
    let Some(task) = sent["result"]["task"]["id"].as_str().map(str::to_owned) else {
        return Err(format!("the new prompt was not acknowledged: {sent}"));
    };
    // The task is acknowledged: the prompt is stored.
    check_stored_at_ack(&*stores.sessions, &context, prompt).await?;
    let mut sent = json!({"result": {"task": settled(url, &task).await?}});
    for _ in 0..3 {
        if sent["result"]["task"]["status"]["state"] != "TASK_STATE_INPUT_REQUIRED" {
            break;
        }
        sent = rpc(
            url,
            "SendMessage",
            a2a_message("approve", Some(&context), Some(&task)),
        )
        .await;
    }
    let state = &sent["result"]["task"]["status"]["state"];
    if state != "TASK_STATE_COMPLETED" {
        return Err(format!("the new task did not complete: {sent}"));
    }
    check_history(&*stores.sessions, &context, prompt).await
}

/// Task `id` once it is no longer submitted or working (polled; [`WAIT`] at most).
async fn settled(url: &str, id: &str) -> Result<Value, String> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let got = rpc(url, "GetTask", json!({"id": id})).await;
        let state = &got["result"]["status"]["state"];
        if state != "TASK_STATE_SUBMITTED" && state != "TASK_STATE_WORKING" {
            return Ok(got["result"].clone());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(format!("task {id} did not settle: {got}"));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---- ACP (JSON-RPC lines over a socket pair) ----

/// The client end of an ACP connection.
#[path = "support/acp_client.rs"]
#[allow(dead_code)]
mod acp_client;
use acp_client::AcpClient;

async fn acp_case(stores: &Stores) -> Verdict {
    let dir = tempfile::tempdir().unwrap();
    let agent = AcpAgent::new(agent(&stores.sessions)).session_store(Arc::clone(&stores.sessions));
    let mut acp = AcpClient::serve(agent, WAIT);
    let init = acp
        .request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    acp.response(init).await?;
    let new = acp
        .request("session/new", json!({"cwd": dir.path(), "mcpServers": []}))
        .await;
    let (new, _) = acp.response(new).await?;
    let session = new["result"]["sessionId"]
        .as_str()
        .ok_or_else(|| format!("session/new: {new}"))?
        .to_owned();
    let prompt =
        |text: &str| json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
    let paused = acp.request("session/prompt", prompt(PAY)).await;
    // Waits for the permission request, then cancels (and withdraws the request).
    let asked = loop {
        let message = acp.next().await?;
        if message["method"] == "session/request_permission" {
            break message;
        }
    };
    acp.send(
        json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}),
    )
    .await;
    acp.send(json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"outcome": {"outcome": "cancelled"}}}))
        .await;
    let (ended, _) = acp.response(paused).await?;
    if ended["result"]["stopReason"] != "cancelled" {
        return Err(format!("the paused prompt did not end cancelled: {ended}"));
    }
    let text = "hello after session/cancel";
    assert!(text.starts_with(NEW_PROMPT));
    let id = acp.request("session/prompt", prompt(text)).await;
    let (done, _) = acp.response(id).await?;
    if done["result"]["stopReason"] != "end_turn" {
        return Err(format!("the new prompt did not end its turn: {done}"));
    }
    check_history(&*stores.sessions, &session, text).await
}
