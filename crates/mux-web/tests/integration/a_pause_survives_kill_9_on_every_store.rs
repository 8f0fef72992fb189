//! A run paused at an approval survives its server process killed with SIGKILL, on every
//! store that outlives a process (`file://`, `sqlite://`, `postgres://`, each opened with
//! `mux_store::Store::open`): a fresh process on the same URL takes the answer, runs the
//! approved tool once and finishes the run. Each server is this test binary run again as a
//! child (`child_process_role`), so the kill is a real one.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use mux_llm::testing::ScriptedClient;
use mux_llm::{ContentBlock, Request, Response, StopReason};
use mux_orchestrator::Agent;
use mux_tool::{BoxFuture, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use mux_web::{AguiRouter, WebConfig};
use serde_json::{Value, json};

/// Set in a child: the store URL it serves.
const ROLE: &str = "MUX_PAUSE_KILL_URL";
/// Set in a child: the file each charge appends a line to.
const CHARGES: &str = "MUX_PAUSE_KILL_CHARGES";
const CHILD_TEST: &str = "a_pause_survives_kill_9_on_every_store::child_process_role";
const LISTENING: &str = "MUX_PAUSE_KILL_LISTENING ";

/// A tool that "charges a card": each call appends a line to the charges file, so a charge
/// made twice (by either process) shows.
struct Charge {
    spec: ToolSpec,
    file: PathBuf,
}

impl Tool for Charge {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        _input: Value,
        _cx: ToolContext,
    ) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.file)?;
            writeln!(file, "charged")?;
            file.sync_all()?;
            Ok(ToolOutput::text("charged"))
        })
    }
}

/// The model: "pay" asks for `charge` (which needs approval), then says it paid.
fn respond(request: &Request) -> Result<Response, mux_llm::LlmError> {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let (_, since) = crate::common::latest_prompt(&request.messages);
    let answered = crate::common::tool_result_count(since) > 0;
    Ok(if answered {
        Response::new(vec![ContentBlock::text("Paid.")], StopReason::EndTurn)
    } else {
        let id = format!("call_{}", NEXT.fetch_add(1, Ordering::Relaxed));
        Response::new(
            vec![ContentBlock::tool_use(id, "charge", json!({}))],
            StopReason::ToolUse,
        )
    })
}

/// Not a test of its own: with `MUX_PAUSE_KILL_URL` set, serves the agent on that store,
/// prints its address and serves until killed (without it, returns at once).
#[test]
fn child_process_role() {
    let Ok(url) = std::env::var(ROLE) else {
        return;
    };
    let charges = PathBuf::from(std::env::var(CHARGES).unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let store = mux_store::Store::open(&url).await.unwrap();
        let charge = Charge {
            spec: ToolSpec::new("charge", "Charges a card", json!({"type": "object"})).unwrap(),
            file: charges,
        };
        let agent = Agent::builder(ScriptedClient::new().respond_with(respond), "scripted")
            .tools([std::sync::Arc::new(charge) as std::sync::Arc<dyn Tool>])
            .needs_approval("charge", |_| true)
            // One value for the agent; the face takes its sessions and its runs from it.
            .store(&store)
            .build()
            .unwrap();
        let router = AguiRouter::new(agent).config(WebConfig::default()).build();
        let listener = mux_web::bind(0).await.unwrap();
        println!("{LISTENING}{}", listener.local_addr().unwrap());
        std::io::stdout().flush().unwrap();
        mux_web::serve(listener, router).await.unwrap();
    });
}

/// A server child, killed (SIGKILL) on drop.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(store_url: &str, charges: &Path) -> Self {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([CHILD_TEST, "--exact", "--nocapture", "--test-threads=1"])
            .env(ROLE, store_url)
            .env(CHARGES, charges)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some(at) = line.find(LISTENING) {
                    let _ = tx.send(line[at + LISTENING.len()..].trim().to_owned());
                }
            }
        });
        let address = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("the server child did not start: {e}"));
        Self {
            child,
            url: format!("http://{address}"),
        }
    }

    /// SIGKILL, and waits for the process to be gone.
    fn kill_9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// Posts `body` to `/agui` and reads the stream's events to its end (60 s at most).
async fn run(http: &reqwest::Client, server: &Server, body: &Value) -> Vec<Value> {
    let read = async {
        let response = http
            .post(format!("{}/agui", server.url))
            .json(body)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{body}");
        let text = response.text().await.unwrap();
        text.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(|data| serde_json::from_str(data.trim()).unwrap())
            .collect::<Vec<Value>>()
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("the run's stream did not end")
}

/// Pauses a run on one server, kills it with SIGKILL, and answers on a fresh one.
async fn a_pause_survives_kill_9(store_url: &str, dir: &Path) {
    let charges = dir.join("charges");
    let http = reqwest::Client::new();
    let first = Server::start(store_url, &charges);
    let paused = run(
        &http,
        &first,
        &json!({"threadId": "t-kill", "runId": "r1",
                "messages": [{"id": "u1", "role": "user", "content": "pay"}]}),
    )
    .await;
    let last = paused.last().unwrap();
    assert_eq!(last["outcome"]["type"], "interrupt", "{paused:?}");
    let interrupt = last["outcome"]["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    first.kill_9();

    let fresh = Server::start(store_url, &charges);
    let resumed = run(
        &http,
        &fresh,
        &json!({"threadId": "t-kill", "runId": "r2", "messages": [],
                "resume": [{"interruptId": interrupt, "status": "resolved",
                            "payload": {"approved": true}}]}),
    )
    .await;
    let types: Vec<&str> = resumed
        .iter()
        .map(|e| e["type"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        types.last(),
        Some(&"RUN_FINISHED"),
        "{store_url}: {resumed:?}"
    );
    assert!(
        resumed
            .iter()
            .any(|e| e["type"] == "TOOL_CALL_RESULT" && e["content"] == "charged"),
        "{resumed:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&charges).unwrap().lines().count(),
        1,
        "charged once"
    );
    crate::common::assert_approved_history(&http, &fresh.url, "t-kill").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_on_the_file_store_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", dir.path().join("store").display());
    a_pause_survives_kill_9(&url, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_on_sqlite_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("mux.db").display());
    a_pause_survives_kill_9(&url, dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_on_postgres_survives_kill_9() {
    let db = mux_testkit::postgres::TestDatabase::new().await;
    let dir = tempfile::tempdir().unwrap();
    a_pause_survives_kill_9(&db.url, dir.path()).await;
}
