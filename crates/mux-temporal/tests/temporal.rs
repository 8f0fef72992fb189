//! mux-temporal against a real Temporal server: the Temporal CLI's dev server, installed by
//! the test into a venv under the target dir (mux-testkit), on free ports, killed at the end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mux_llm::testing::ScriptedClient;
use mux_llm::{ContentBlock, Request, Response, Role};
use mux_orchestrator::Agent;
use mux_permission::Answer;
use mux_temporal::{
    AgentWorker, RunStatus, TemporalAgent, TemporalError, WorkerSettings, WorkerThread, connect,
};
use mux_testkit::temporal::DevServer;
use mux_tool::{ApprovalPolicy, ToolAnnotations, ToolContext, ToolError, ToolOutput, TypedTool};
use serde_json::json;

/// The env var that turns the `worker_child` helper into a worker process (its value: the
/// server's address, the task queue and the counter's directory, tab-separated).
const WORKER_VAR: &str = "MUX_TEMPORAL_TEST_WORKER";

/// A wait no test should reach.
const PATIENCE: Duration = Duration::from_secs(90);

fn server() -> DevServer {
    DevServer::start(Path::new(env!("CARGO_TARGET_TMPDIR"))).expect("the Temporal dev server")
}

fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether the conversation's last message answers a tool call.
fn answered(request: &Request) -> Option<String> {
    let last = request.messages.last()?;
    (last.role == Role::User).then_some(())?;
    last.content.iter().find_map(|block| match block {
        ContentBlock::ToolResult { content, .. } => Some(
            content
                .iter()
                .filter_map(|c| match c {
                    ContentBlock::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<String>(),
        ),
        _ => None,
    })
}

/// A model that is a function of the conversation (so any worker, fresh or not, answers the
/// same): with no tool result yet it calls `tool` with `input` (one call per id in `ids`),
/// and after one it answers "done: " and the first result.
fn model(
    tool: &'static str,
    input: serde_json::Value,
    ids: &'static [&'static str],
) -> ScriptedClient {
    ScriptedClient::new().respond_with(move |request| {
        if let Some(result) = answered(request) {
            return Ok(Response::from_text(format!("done: {result}")));
        }
        let content = ids
            .iter()
            .map(|id| ContentBlock::ToolUse {
                id: (*id).to_owned(),
                name: tool.to_owned(),
                input: input.clone(),
            })
            .collect();
        Ok(Response::new(content, mux_llm::StopReason::ToolUse))
    })
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// A read-only tool: runs without asking.
struct Add;
impl TypedTool for Add {
    type Args = AddArgs;
    const NAME: &'static str = "add";
    fn description(&self) -> String {
        "Adds two numbers".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, args: AddArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::text((args.a + args.b).to_string()))
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct BumpArgs {
    /// How long the first call holds open after counting, in milliseconds.
    #[serde(default)]
    hold_ms: u64,
}

/// A tool with an effect: adds one to a counter file, then, the first time only, holds the
/// call open (so a second run, which must not happen, would return at once). Not
/// read-only, not idempotent: it asks (unless the agent's policy says never), and must never
/// run twice.
struct Bump {
    dir: PathBuf,
}
impl TypedTool for Bump {
    type Args = BumpArgs;
    const NAME: &'static str = "bump";
    fn description(&self) -> String {
        "Adds one to the counter".into()
    }
    async fn call(&self, args: BumpArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let counter = self.dir.join("counter");
        let n: u64 = std::fs::read_to_string(&counter)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0)
            + 1;
        std::fs::write(&counter, n.to_string()).map_err(|e| ToolError::Failed(e.to_string()))?;
        std::fs::write(self.dir.join(format!("running.{}", std::process::id())), "")
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let hold = if n == 1 { args.hold_ms } else { 0 };
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(hold)) => {}
            () = cx.cancellation().cancelled() => {}
        }
        Ok(ToolOutput::text(format!("counter is {n}")))
    }
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct PutArgs {
    /// How long the first attempt holds open after its effect, in milliseconds.
    #[serde(default)]
    hold_ms: u64,
}

/// An idempotent tool that makes its effect once per effect key: it records each attempt
/// (key and attempt number) in `attempts`, and adds one to the counter only when no file
/// named by its key exists yet, then creates that file. The first attempt holds the call open.
struct Put {
    dir: PathBuf,
}
impl TypedTool for Put {
    type Args = PutArgs;
    const NAME: &'static str = "put";
    fn description(&self) -> String {
        "Stores the value once".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default().with_idempotent(true)
    }
    async fn call(&self, args: PutArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let key = cx.effect_key();
        let line = format!("{} {}\n", key.as_str(), key.attempt());
        let mut log = std::fs::read_to_string(self.dir.join("attempts")).unwrap_or_default();
        log.push_str(&line);
        std::fs::write(self.dir.join("attempts"), log)
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let done = self
            .dir
            .join(format!("done-{}", key.as_str().replace([':', '/'], "_")));
        if !done.exists() {
            let n = counter(&self.dir) + 1;
            std::fs::write(self.dir.join("counter"), n.to_string())
                .map_err(|e| ToolError::Failed(e.to_string()))?;
            std::fs::write(&done, "").map_err(|e| ToolError::Failed(e.to_string()))?;
        }
        std::fs::write(self.dir.join(format!("running.{}", std::process::id())), "")
            .map_err(|e| ToolError::Failed(e.to_string()))?;
        let hold = if key.attempt() == 1 { args.hold_ms } else { 0 };
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(hold)) => {}
            () = cx.cancellation().cancelled() => {}
        }
        Ok(ToolOutput::text(format!(
            "stored (attempt {})",
            key.attempt()
        )))
    }
}

fn counter(dir: &Path) -> u64 {
    std::fs::read_to_string(dir.join("counter"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// A worker for `agent` in this process, on a thread of its own, until the test ends.
fn spawn_worker(agent: &Agent, client: &temporalio_client::Client, queue: &str) -> WorkerThread {
    AgentWorker::spawn(
        agent.clone(),
        client.clone(),
        queue,
        WorkerSettings::default(),
    )
    .unwrap()
}

async fn until<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_tool_model_runs_to_completion_and_the_history_is_a_query() {
    let server = server();
    let client = connect(&server.address(), "default").await.unwrap();
    let queue = unique("complete");
    let agent = Agent::builder(model("add", json!({"a": 2, "b": 3}), &["c1"]), "m")
        .tool(Add)
        .build()
        .unwrap();
    let _worker = spawn_worker(&agent, &client, &queue);

    let runs = TemporalAgent::new(client, &queue, &agent);
    let run = runs.start(&unique("run"), "What is 2 + 3?").await.unwrap();
    let outcome = run.outcome().await.unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    assert_eq!(outcome.text, "done: 5");
    assert_eq!(outcome.turns, 2);
    let roles: Vec<Role> = outcome.messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::User, Role::Assistant]
    );

    // The history query, from a handle attached by id (as another face would).
    let history = runs.run(run.id()).history().await.unwrap();
    assert_eq!(history, outcome.messages);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ask_parks_the_run_until_the_approve_update_answers_it() {
    let server = server();
    let client = connect(&server.address(), "default").await.unwrap();
    let queue = unique("approve");
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::builder(model("bump", json!({}), &["yes", "no"]), "m")
        .tool(Bump {
            dir: dir.path().to_owned(),
        })
        .build()
        .unwrap();
    let _worker = spawn_worker(&agent, &client, &queue);
    let runs = TemporalAgent::new(client, &queue, &agent);
    let run = runs.start(&unique("run"), "Bump it twice").await.unwrap();

    let pending = until("two pending calls", || async {
        let pending = run.pending().await.ok()?;
        (pending.len() == 2).then_some(pending)
    })
    .await;
    assert_eq!(pending[0].call.id, "yes");
    assert!(pending[0].reason.contains("bump"), "{pending:?}");
    // Parked: nothing ran, and the history shows the calls waiting.
    assert_eq!(counter(dir.path()), 0);
    assert_eq!(run.history().await.unwrap().len(), 2);

    // An answer to a call that is not pending is refused, with the reason.
    let err = run.approve("nope", Answer::AllowOnce).await.unwrap_err();
    assert!(
        matches!(&err, TemporalError::Approve { call_id, reason, .. } if call_id == "nope" && reason.contains("no call `nope`")),
        "{err}"
    );

    // Any handle may answer: this one is attached by id.
    let other = runs.run(run.id());
    other.approve("yes", Answer::AllowOnce).await.unwrap();
    other
        .approve("no", Answer::deny("not today"))
        .await
        .unwrap();
    let outcome = run.outcome().await.unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    assert_eq!(counter(dir.path()), 1, "only the approved call ran");
    let results = format!("{:?}", outcome.messages[2].content);
    assert!(results.contains("counter is 1"), "{results}");
    assert!(results.contains("not today"), "{results}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_ends_a_parked_run_and_settles_its_calls() {
    let server = server();
    let client = connect(&server.address(), "default").await.unwrap();
    let queue = unique("cancel");
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::builder(model("bump", json!({}), &["c1"]), "m")
        .tool(Bump {
            dir: dir.path().to_owned(),
        })
        .build()
        .unwrap();
    let _worker = spawn_worker(&agent, &client, &queue);
    let runs = TemporalAgent::new(client, &queue, &agent);
    let run = runs.start(&unique("run"), "Bump it").await.unwrap();
    until("a pending call", || async {
        (run.pending().await.ok()?.len() == 1).then_some(())
    })
    .await;

    run.cancel().await.unwrap();
    let err = run.outcome().await.unwrap_err();
    assert!(matches!(err, TemporalError::Cancelled { .. }), "{err}");
    assert_eq!(counter(dir.path()), 0);
    // No call is left without a result: the history ends with "not run".
    let history = run.history().await.unwrap();
    let last = history.last().unwrap();
    assert_eq!(last.role, Role::User);
    let text = format!("{:?}", last.content);
    assert!(
        text.contains("not run") && text.contains("cancelled"),
        "{text}"
    );
    assert!(run.pending().await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_stops_a_running_call_and_says_its_outcome_is_unknown() {
    let server = server();
    let client = connect(&server.address(), "default").await.unwrap();
    let queue = unique("cancel-running");
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::builder(model("bump", json!({"hold_ms": 600_000}), &["c1"]), "m")
        .tool(Bump {
            dir: dir.path().to_owned(),
        })
        .approval(ApprovalPolicy::Never)
        .build()
        .unwrap();
    let _worker = spawn_worker(&agent, &client, &queue);
    let runs = TemporalAgent::new(client, &queue, &agent).heartbeat_timeout(Duration::from_secs(2));
    let run = runs.start(&unique("run"), "Bump it").await.unwrap();
    until("the call to run", || async {
        (counter(dir.path()) == 1).then_some(())
    })
    .await;

    run.cancel().await.unwrap();
    let err = run.outcome().await.unwrap_err();
    assert!(matches!(err, TemporalError::Cancelled { .. }), "{err}");
    let history = run.history().await.unwrap();
    let text = format!("{:?}", history.last().unwrap().content);
    assert!(text.contains("outcome unknown"), "{text}");
    assert_eq!(counter(dir.path()), 1);
}

/// A worker in a child process of its own (this test binary, running `worker_child`), so that
/// it can be killed with SIGKILL. Killed on drop, and when this process dies.
struct WorkerProcess(Child);

impl WorkerProcess {
    fn start(address: &str, queue: &str, dir: &Path, tool: &str) -> Self {
        let exe = std::env::current_exe().unwrap();
        let child = Command::new("setpriv")
            .args(["--pdeathsig", "KILL", "--"])
            .arg(exe)
            .args(["--ignored", "--exact", "worker_child", "--nocapture"])
            .env(
                WORKER_VAR,
                format!("{address}\t{queue}\t{}\t{tool}", dir.display()),
            )
            .stdin(Stdio::null())
            .spawn()
            .unwrap();
        Self(child)
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn kill(&mut self) {
        // SIGKILL: no shutdown, no cleanup, as a crash.
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The agent both worker processes serve: its model calls `tool` (`bump`, which may not run
/// twice, or `put`, idempotent), which holds its first attempt open.
fn crash_agent(dir: &Path, tool: &str) -> Agent {
    let builder = match tool {
        "put" => {
            Agent::builder(model("put", json!({"hold_ms": 600_000}), &["c1"]), "m").tool(Put {
                dir: dir.to_owned(),
            })
        }
        _ => Agent::builder(model("bump", json!({"hold_ms": 600_000}), &["c1"]), "m").tool(Bump {
            dir: dir.to_owned(),
        }),
    };
    builder.approval(ApprovalPolicy::Never).build().unwrap()
}

/// Not a test: the body of a worker process the crash test starts (it fails when run
/// without the variable that configures it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a worker process for worker_killed_mid_call_is_replaced_and_the_tool_ran_once"]
async fn worker_child() {
    let config = std::env::var(WORKER_VAR)
        .expect("started by the crash test, with MUX_TEMPORAL_TEST_WORKER");
    let mut parts = config.split('\t');
    let (address, queue, dir, tool) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        PathBuf::from(parts.next().unwrap()),
        parts.next().unwrap(),
    );
    let client = connect(address, "default").await.unwrap();
    let settings = WorkerSettings::default().sticky_timeout(Duration::from_secs(1));
    AgentWorker::with_settings(crash_agent(&dir, tool), client, queue, settings)
        .unwrap()
        .run()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_killed_mid_call_is_replaced_and_the_tool_ran_once() {
    let server = server();
    let client = connect(&server.address(), "default").await.unwrap();
    let queue = unique("crash");
    let dir = tempfile::tempdir().unwrap();

    let mut first = WorkerProcess::start(&server.address(), &queue, dir.path(), "bump");
    let runs = TemporalAgent::new(client, &queue, &crash_agent(dir.path(), "bump"))
        .heartbeat_timeout(Duration::from_secs(2));
    let run = runs.start(&unique("run"), "Bump it").await.unwrap();
    // The first worker is the only one: it takes the call, counts, and holds it open.
    let marker = dir.path().join(format!("running.{}", first.pid()));
    until("the first worker to run the call", || async {
        marker.exists().then_some(())
    })
    .await;
    assert_eq!(counter(dir.path()), 1);

    let _second = WorkerProcess::start(&server.address(), &queue, dir.path(), "bump");
    first.kill();

    let outcome = tokio::time::timeout(PATIENCE, run.outcome())
        .await
        .expect("the second worker to finish the run")
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    assert_eq!(counter(dir.path()), 1, "the tool ran twice");
    let result = format!("{:?}", outcome.messages[2].content);
    assert!(
        result.contains("outcome unknown") && result.contains("`bump`"),
        "{result}"
    );
    assert!(
        outcome.text.starts_with("done: outcome unknown"),
        "{}",
        outcome.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idempotent_call_runs_again_on_the_other_worker_with_the_same_key() {
    let server = server();
    let client = connect(&server.address(), "default").await.unwrap();
    let queue = unique("crash-idempotent");
    let dir = tempfile::tempdir().unwrap();

    let mut first = WorkerProcess::start(&server.address(), &queue, dir.path(), "put");
    let runs = TemporalAgent::new(client, &queue, &crash_agent(dir.path(), "put"))
        .heartbeat_timeout(Duration::from_secs(2));
    let workflow_id = unique("run");
    let run = runs.start(&workflow_id, "Store it").await.unwrap();
    let marker = dir.path().join(format!("running.{}", first.pid()));
    until("the first worker to run the call", || async {
        marker.exists().then_some(())
    })
    .await;

    let _second = WorkerProcess::start(&server.address(), &queue, dir.path(), "put");
    first.kill();

    let outcome = tokio::time::timeout(PATIENCE, run.outcome())
        .await
        .expect("the second worker to finish the run")
        .unwrap();
    assert_eq!(outcome.status, RunStatus::Complete);
    // Run again, with the same key and the next attempt; its effect happened once.
    let key = format!("{workflow_id}:1:c1");
    let attempts = std::fs::read_to_string(dir.path().join("attempts")).unwrap();
    assert_eq!(attempts, format!("{key} 1\n{key} 2\n"));
    assert_eq!(counter(dir.path()), 1);
    assert!(
        outcome.text.contains("stored (attempt 2)"),
        "{}",
        outcome.text
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_id_reused_in_a_later_turn_is_asked_again() {
    let server = server();
    let client = connect(&server.address(), "default").await.unwrap();
    let queue = unique("reused-id");
    let dir = tempfile::tempdir().unwrap();
    // Some providers number calls per turn: both turns call `bump` as "call_1".
    let model = ScriptedClient::new().respond_with(|request| {
        let results = request
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter(|b| matches!(b, ContentBlock::ToolResult { .. }))
            .count();
        Ok(match results {
            0 | 1 => Response::new(
                vec![ContentBlock::ToolUse {
                    id: "call_1".into(),
                    name: "bump".into(),
                    input: json!({}),
                }],
                mux_llm::StopReason::ToolUse,
            ),
            _ => Response::from_text("done"),
        })
    });
    let agent = Agent::builder(model, "m")
        .tool(Bump {
            dir: dir.path().to_owned(),
        })
        .build()
        .unwrap();
    let _worker = spawn_worker(&agent, &client, &queue);
    let run = TemporalAgent::new(client, &queue, &agent)
        .start(&unique("run"), "Bump it")
        .await
        .unwrap();
    for (turn, answer) in [(1, Answer::AllowOnce), (2, Answer::deny("once is enough"))] {
        until("the turn's call to wait for an answer", || async {
            let pending = run.pending().await.ok()?;
            // Turn 2's call is asked only once turn 1's result is in the history.
            let history = run.history().await.ok()?;
            (pending.len() == 1 && history.len() == 2 * turn).then_some(())
        })
        .await;
        run.approve("call_1", answer).await.unwrap();
    }
    let outcome = run.outcome().await.unwrap();
    assert_eq!(outcome.text, "done");
    assert_eq!(counter(dir.path()), 1, "the second call ran unasked");
    let last_results = format!("{:?}", outcome.messages[4].content);
    assert!(last_results.contains("once is enough"), "{last_results}");
}

#[test]
fn a_worker_thread_stops_when_dropped_outside_any_runtime() {
    let server = server();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let agent = Agent::builder(ScriptedClient::new(), "m").build().unwrap();
    let worker = runtime.block_on(async {
        let client = connect(&server.address(), "default").await.unwrap();
        spawn_worker(&agent, &client, &unique("drop"))
    });
    // Not inside the runtime (which lives on: the client's connection runs on it). The SDK
    // starts a shutdown with `tokio::spawn`: the worker's own thread does it.
    worker.shutdown().unwrap();
    drop(runtime);
}
