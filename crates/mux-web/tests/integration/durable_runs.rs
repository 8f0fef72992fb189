//! Two routers ("processes" A and B) on one run store and one session store: PostgreSQL
//! (a throw-away server from mux-testkit) and SQLite. Any process serves any thread: a pause
//! on A is answered on B, B replays A's run from `Last-Event-ID`, cancels it, refuses a
//! prompt on a thread busy on A (or queues it, or interrupts A's run), and takes A's runs over
//! when A goes away, with contiguous event ids and no tool run twice. A paused run costs no
//! memory: its loop is dropped and rebuilt on resume.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use mux_llm::testing::ScriptedClient;
use mux_llm::{ContentBlock, Request, Response, StopReason};
use mux_orchestrator::Agent;
use mux_orchestrator::runs::{FaultyRunStore, PostgresRunStore, RunStore, SqliteRunStore};
use mux_orchestrator::session::{
    HistoryRecord, PostgresSessionStore, Session, SessionError, SessionMeta, SessionStore,
    SqliteSessionStore,
};
use mux_testkit::postgres::TestDatabase;
use mux_tool::{BoxFuture, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use mux_web::{AguiRouter, BearerTokens, DoubleTexting, Principal, WebConfig};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

const LEASE: Duration = Duration::from_millis(600);

/// A tool that must never run twice (it "charges a card"): each run counts.
struct Charge {
    spec: ToolSpec,
    runs: Arc<AtomicU32>,
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
            let n = self.runs.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(ToolOutput::text(format!("charged (run {n})")))
        })
    }
}

/// Where the processes keep sessions and runs.
enum Backend {
    Postgres(String),
    Sqlite(std::path::PathBuf),
}

/// What the processes share: the stores, the charge counter.
struct Cluster {
    backend: Backend,
    charges: Arc<AtomicU32>,
}

/// One "process": a router on its own store connections, served on a port.
struct Process {
    url: String,
    task: JoinHandle<std::io::Result<()>>,
}

impl Process {
    /// Ends the process at once: its connections, its writers and its loops stop where they
    /// are, as in a SIGKILL.
    fn kill(self) {
        self.task.abort();
    }
}

impl Cluster {
    async fn postgres(db: &TestDatabase) -> Self {
        Self {
            backend: Backend::Postgres(db.url.clone()),
            charges: Arc::default(),
        }
    }

    fn sqlite(dir: &std::path::Path) -> Self {
        Self {
            backend: Backend::Sqlite(dir.join("mux.db")),
            charges: Arc::default(),
        }
    }

    /// New connections to the stores, as a process of its own opens.
    async fn stores(&self) -> (Arc<dyn SessionStore>, Arc<dyn RunStore>) {
        match &self.backend {
            Backend::Postgres(url) => (
                Arc::new(PostgresSessionStore::connect(url).await.unwrap()),
                Arc::new(PostgresRunStore::connect(url).await.unwrap()),
            ),
            Backend::Sqlite(path) => (
                Arc::new(SqliteSessionStore::open(path).await.unwrap()),
                Arc::new(SqliteRunStore::open(path).await.unwrap()),
            ),
        }
    }

    async fn process(&self, config: WebConfig) -> Process {
        self.process_with(config, Duration::from_millis(250), false)
            .await
            .0
    }

    /// A process whose `tick` waits `tick`; with `faulty`, its run store can be cut off
    /// through the store returned.
    async fn process_with(
        &self,
        config: WebConfig,
        tick: Duration,
        faulty: bool,
    ) -> (Process, Option<Arc<FaultyRunStore>>) {
        self.process_on(config, tick, faulty, |sessions| sessions)
            .await
    }

    /// [`process_with`](Self::process_with), its session store wrapped by `wrap`.
    async fn process_on(
        &self,
        config: WebConfig,
        tick: Duration,
        faulty: bool,
        wrap: impl FnOnce(Arc<dyn SessionStore>) -> Arc<dyn SessionStore>,
    ) -> (Process, Option<Arc<FaultyRunStore>>) {
        let charge = Charge {
            spec: ToolSpec::new("charge", "Charges a card", json!({"type": "object"})).unwrap(),
            runs: Arc::clone(&self.charges),
        };
        // Read-only: it may run again after a takeover.
        let tick = crate::common::Tick::new(tick);
        let client = ScriptedClient::new().respond_with(respond);
        let agent = Agent::builder(client, "scripted")
            .tools([
                Arc::new(charge) as Arc<dyn Tool>,
                Arc::new(tick) as Arc<dyn Tool>,
            ])
            // `charge` asks only when the model says so.
            .needs_approval("charge", |input| input["ask"] == json!(true))
            .build()
            .unwrap();
        let (sessions, mut runs) = self.stores().await;
        let sessions = wrap(sessions);
        let faulty = faulty.then(|| Arc::new(FaultyRunStore::new(runs.clone())));
        if let Some(faulty) = &faulty {
            runs = faulty.clone();
        }
        let router = AguiRouter::new(agent)
            .session_store(sessions)
            .run_store(runs)
            .config(config.lease(LEASE))
            .build();
        let listener = mux_web::bind(0).await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let task = tokio::spawn(mux_web::serve(listener, router));
        (Process { url, task }, faulty)
    }
}

/// The model: the prompt picks a scenario; tool results drive it on.
fn respond(request: &Request) -> Result<Response, mux_llm::LlmError> {
    let (prompt, since) = crate::common::latest_prompt(&request.messages);
    let results = crate::common::tool_result_count(since);
    Ok(match (prompt.as_str(), results) {
        // Pauses for an approval, then charges.
        ("pay", 0) => call("charge", json!({"ask": true})),
        ("pay", _) => text("Paid."),
        // Charges once, then ticks four times.
        ("charge then tick", 0) => call("charge", json!({})),
        ("charge then tick", n) if n < 5 => call("tick", json!({"n": n})),
        ("slow", n) if n < 4 => call("tick", json!({"n": n})),
        // A question (`ask_user`), then what was said.
        ("ask", 0) => call("ask_user", json!({"question": "Which color?"})),
        ("ask", _) => text("Noted."),
        // Ticks twice, then a frontend tool; then says what it got.
        ("tick then pick", n) if n < 2 => call("tick", json!({"n": n})),
        ("tick then pick", 2) => call("pick_color", json!({})),
        ("tick then pick", _) => text("Picked."),
        // A frontend tool: the page picks.
        ("pick", 0) => call("pick_color", json!({})),
        ("pick", _) => {
            let picked = crate::common::tool_result_texts(&request.messages)
                .pop()
                .unwrap_or_default();
            text(&format!("You picked {picked}."))
        }
        _ => text("Done."),
    })
}

fn text(text: &str) -> Response {
    response(vec![ContentBlock::text(text)], StopReason::EndTurn)
}

fn call(name: &str, input: Value) -> Response {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let id = format!("call_{}", NEXT.fetch_add(1, Ordering::Relaxed));
    response(
        vec![ContentBlock::tool_use(id, name, input)],
        StopReason::ToolUse,
    )
}

fn response(content: Vec<ContentBlock>, stop_reason: StopReason) -> Response {
    Response::new(content, stop_reason)
}

fn input(thread: &str, run: &str, text: &str) -> Value {
    json!({"threadId": thread, "runId": run, "messages": [{"id": format!("{run}-u"), "role": "user", "content": text}]})
}

fn answer(thread: &str, run: &str, interrupt: &str, approved: bool) -> Value {
    json!({"threadId": thread, "runId": run, "messages": [],
           "resume": [{"interruptId": interrupt, "status": "resolved", "payload": {"approved": approved}}]})
}

/// An SSE event: its id (if any) and data.
type Sse = (Option<u64>, Value);

/// Reads SSE events from `response` until `stop` says so or the stream ends (20 s at most).
async fn read_until(
    mut response: reqwest::Response,
    mut stop: impl FnMut(&[Sse]) -> bool,
) -> Vec<Sse> {
    let mut out = Vec::new();
    let mut pending = String::new();
    let mut id = None;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let chunk = tokio::time::timeout_at(deadline, response.chunk())
            .await
            .expect("the stream stalled")
            .unwrap();
        let Some(chunk) = chunk else { return out };
        pending.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = pending.find('\n') {
            let line: String = pending.drain(..=end).collect();
            let line = line.trim_end();
            if let Some(value) = line.strip_prefix("id:") {
                id = value.trim().parse().ok();
            } else if let Some(data) = line.strip_prefix("data:") {
                out.push((id.take(), serde_json::from_str(data.trim()).unwrap()));
                if stop(&out) {
                    return out;
                }
            }
        }
    }
}

async fn read_all(response: reqwest::Response) -> Vec<Sse> {
    read_until(response, |_| false).await
}

fn kinds(events: &[Sse]) -> Vec<&str> {
    events
        .iter()
        .map(|(_, e)| e["type"].as_str().unwrap_or(""))
        .collect()
}

fn ids(events: &[Sse]) -> Vec<u64> {
    events.iter().map(|(id, _)| id.unwrap()).collect()
}

async fn post(http: &reqwest::Client, process: &Process, body: &Value) -> reqwest::Response {
    http.post(format!("{}/agui", process.url))
        .json(body)
        .send()
        .await
        .unwrap()
}

async fn reattach(
    http: &reqwest::Client,
    process: &Process,
    run: &str,
    last: Option<u64>,
) -> reqwest::Response {
    let mut request = http.get(format!("{}/agui/runs/{run}/events", process.url));
    if let Some(last) = last {
        request = request.header("last-event-id", last.to_string());
    }
    request.send().await.unwrap()
}

/// The interrupt ids the run ended on.
fn interrupt_ids(events: &[Sse]) -> Vec<String> {
    let last = &events.last().expect("no events").1;
    assert_eq!(last["outcome"]["type"], "interrupt", "{last}");
    last["outcome"]["interrupts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_owned())
        .collect()
}

/// A pause on A, answered on B: B claims the stored run, rebuilds the loop and charges once.
async fn pause_on_a_answer_on_b(cluster: &Cluster) {
    let http = reqwest::Client::new();
    let a = cluster.process(WebConfig::default()).await;
    let b = cluster.process(WebConfig::default()).await;
    let paused = read_all(post(&http, &a, &input("t-pay", "r1", "pay")).await).await;
    let interrupts = interrupt_ids(&paused);
    assert_eq!(ids(&paused), (1..=paused.len() as u64).collect::<Vec<_>>());
    // Unguessable and stable: the id names the thread and call, plus 128 random bits.
    assert!(interrupts[0].len() > 32, "{interrupts:?}");

    // B knows the thread is paused: a new prompt is refused with the pending ids.
    let refused = post(&http, &b, &input("t-pay", "r-x", "hello")).await;
    assert_eq!(refused.status(), 409);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "interrupt_pending");
    assert_eq!(body["interruptIds"], json!(interrupts));
    // And its history shows the open interrupt.
    let history: Value = http
        .get(format!("{}/agui/threads/t-pay/messages", b.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(history["interrupts"][0]["id"], json!(interrupts[0]));

    let resumed =
        read_all(post(&http, &b, &answer("t-pay", "r2", &interrupts[0], true)).await).await;
    let kinds = kinds(&resumed);
    assert_eq!(kinds.first(), Some(&"RUN_STARTED"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"RUN_FINISHED"), "{resumed:?}");
    assert!(
        resumed
            .iter()
            .any(|(_, e)| e["type"] == "TOOL_CALL_RESULT" && e["content"] == "charged (run 1)"),
        "{resumed:?}"
    );
    assert_eq!(cluster.charges.load(Ordering::SeqCst), 1);
    // A second answer, on either process, is refused; nothing runs again.
    let again = read_all(post(&http, &a, &answer("t-pay", "r3", &interrupts[0], true)).await).await;
    assert_eq!(again.last().unwrap().1["type"], "RUN_ERROR", "{again:?}");
    assert_eq!(cluster.charges.load(Ordering::SeqCst), 1);
    a.kill();
    b.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_paused_on_one_process_is_answered_on_another_on_postgres() {
    let db = TestDatabase::new().await;
    pause_on_a_answer_on_b(&Cluster::postgres(&db).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_paused_on_one_process_is_answered_on_another_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    pause_on_a_answer_on_b(&Cluster::sqlite(dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_survives_every_process_stopping_and_a_fresh_one_answers_it() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::sqlite(dir.path());
    let http = reqwest::Client::new();
    let a = cluster.process(WebConfig::default()).await;
    let paused = read_all(post(&http, &a, &input("t-fresh", "r1", "pay")).await).await;
    let interrupt = interrupt_ids(&paused).remove(0);
    a.kill();
    let fresh = cluster.process(WebConfig::default()).await;
    let resumed =
        read_all(post(&http, &fresh, &answer("t-fresh", "r2", &interrupt, true)).await).await;
    assert_eq!(
        resumed.last().unwrap().1["type"],
        "RUN_FINISHED",
        "{resumed:?}"
    );
    assert_eq!(cluster.charges.load(Ordering::SeqCst), 1);
    crate::common::assert_approved_history(&http, &fresh.url, "t-fresh").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_process_replays_a_streaming_run_from_last_event_id_and_cancels_it() {
    let db = TestDatabase::new().await;
    let cluster = Cluster::postgres(&db).await;
    let http = reqwest::Client::new();
    let a = cluster.process(WebConfig::default()).await;
    let b = cluster.process(WebConfig::default()).await;

    // Reattach on B while A streams: B's replay continues exactly after the last id seen.
    let first = read_until(post(&http, &a, &input("t-re", "r1", "slow")).await, |e| {
        e.iter()
            .filter(|(_, e)| e["type"] == "TOOL_CALL_RESULT")
            .count()
            == 1
    })
    .await;
    let seen = first.last().unwrap().0.unwrap();
    let rest = read_all(reattach(&http, &b, "r1", Some(seen)).await).await;
    assert_eq!(rest.first().unwrap().0, Some(seen + 1));
    let all: Vec<u64> = ids(&first).into_iter().chain(ids(&rest)).collect();
    assert_eq!(all, (1..=all.len() as u64).collect::<Vec<_>>());
    assert_eq!(rest.last().unwrap().1["type"], "RUN_FINISHED");
    // The whole run replays on either process, the same.
    let on_a = read_all(reattach(&http, &a, "r1", None).await).await;
    let on_b = read_all(reattach(&http, &b, "r1", None).await).await;
    assert_eq!(on_a, on_b);

    // Cancel on B of a run streaming on A.
    let stream = post(&http, &a, &input("t-cancel", "r2", "slow")).await;
    let reader = tokio::spawn(read_all(stream));
    tokio::time::sleep(Duration::from_millis(300)).await;
    let cancelled: Value = http
        .post(format!("{}/agui/runs/r2/cancel", b.url))
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(cancelled["cancelled"], true, "{cancelled}");
    let events = reader.await.unwrap();
    let last = &events.last().unwrap().1;
    assert_eq!(last["type"], "RUN_FINISHED", "{events:?}");
    assert_eq!(last["outcome"]["type"], "cancelled", "{last}");
    // An unknown run is a 404 on any process.
    assert_eq!(reattach(&http, &b, "nope", None).await.status(), 404);
    a.kill();
    b.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_busy_on_one_process_is_busy_on_another_and_each_strategy_holds() {
    let db = TestDatabase::new().await;
    let cluster = Cluster::postgres(&db).await;
    let http = reqwest::Client::new();
    let a = cluster.process(WebConfig::default()).await;
    let reject = cluster.process(WebConfig::default()).await;
    let enqueue = cluster
        .process(WebConfig::default().double_texting(DoubleTexting::Enqueue))
        .await;
    let interrupt = cluster
        .process(WebConfig::default().double_texting(DoubleTexting::Interrupt))
        .await;

    // Reject (the default): 409 thread_busy on B for A's run.
    let first = tokio::spawn(read_all(
        post(&http, &a, &input("t-dt", "r1", "slow")).await,
    ));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let refused = post(&http, &reject, &input("t-dt", "r2", "hello")).await;
    assert_eq!(refused.status(), 409);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"], "thread_busy");
    assert_eq!(body["runId"], "r1");

    // Enqueue: the prompt runs after A's run, which finishes whole.
    let queued = read_all(post(&http, &enqueue, &input("t-dt", "r3", "hello")).await).await;
    let first = first.await.unwrap();
    assert_eq!(first.last().unwrap().1["outcome"]["type"], "success");
    assert_eq!(
        queued.last().unwrap().1["outcome"]["type"],
        "success",
        "{queued:?}"
    );
    let history = crate::common::history(&http, &a.url, "t-dt").await;
    let messages = history["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["content"], "Done.");
    let users: Vec<&Value> = messages.iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 2, "{history}");

    // Interrupt: A's run is cancelled (what it did stays), the new one runs.
    let current = tokio::spawn(read_all(
        post(&http, &a, &input("t-dt", "r4", "slow")).await,
    ));
    tokio::time::sleep(Duration::from_millis(400)).await;
    let taking = read_all(post(&http, &interrupt, &input("t-dt", "r5", "hello")).await).await;
    assert_eq!(
        taking.last().unwrap().1["outcome"]["type"],
        "success",
        "{taking:?}"
    );
    let current = current.await.unwrap();
    assert_eq!(current.last().unwrap().1["outcome"]["type"], "cancelled");
    let history: Value = http
        .get(format!("{}/agui/threads/t-dt/messages", interrupt.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let text = history.to_string();
    assert!(
        text.contains("tick 0"),
        "the interrupted run's output stays: {text}"
    );
    for process in [a, reject, enqueue, interrupt] {
        process.kill();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_process_died_is_taken_over_with_contiguous_ids_and_no_tool_run_twice() {
    let db = TestDatabase::new().await;
    let cluster = Cluster::postgres(&db).await;
    let http = reqwest::Client::new();
    let a = cluster.process(WebConfig::default()).await;
    let b = cluster.process(WebConfig::default()).await;
    let seen = read_until(
        post(&http, &a, &input("t-take", "r1", "charge then tick")).await,
        |e| {
            e.iter()
                .filter(|(_, e)| e["type"] == "TOOL_CALL_RESULT")
                .count()
                == 2
        },
    )
    .await;
    let last = seen.last().unwrap().0.unwrap();
    a.kill();
    let killed = std::time::Instant::now();
    let mut taken_after = None;
    let rest = tokio::time::timeout(
        Duration::from_secs(20),
        read_until(reattach(&http, &b, "r1", Some(last)).await, |events| {
            let taken = events
                .last()
                .is_some_and(|(_, e)| e["name"] == "mux.run_taken_over");
            if taken && taken_after.is_none() {
                taken_after = Some(killed.elapsed());
            }
            events
                .last()
                .is_some_and(|(_, e)| e["type"] == "RUN_FINISHED")
        }),
    )
    .await
    .expect("B did not take the run over");
    // A figure for the docs (not asserted): the lease is 600 ms.
    eprintln!(
        "takeover: B continued the run {:?} after A died",
        taken_after.unwrap()
    );
    let all: Vec<u64> = ids(&seen).into_iter().chain(ids(&rest)).collect();
    assert_eq!(all, (1..=all.len() as u64).collect::<Vec<_>>(), "{rest:?}");
    assert!(
        rest.iter().any(|(_, e)| e["name"] == "mux.run_taken_over"),
        "{rest:?}"
    );
    let end = &rest.last().unwrap().1;
    assert_eq!(end["type"], "RUN_FINISHED", "{rest:?}");
    assert_eq!(end["outcome"]["type"], "success");
    assert_eq!(
        cluster.charges.load(Ordering::SeqCst),
        1,
        "the charge ran before A died and must not run again"
    );
    b.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_run_holds_no_loop_in_memory_and_is_rebuilt_on_resume() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::sqlite(dir.path());
    // No kept-alive connections: the server's tasks are the loops' and their writers'.
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let a = cluster.process(WebConfig::default()).await;
    let tasks = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    read_all(post(&http, &a, &input("t-mem0", "r0", "hello")).await).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let idle = tasks();
    // A running loop is tasks in memory (the loop, its pump, its writer)…
    let running = tokio::spawn(read_all(
        post(&http, &a, &input("t-mem0", "r1", "slow")).await,
    ));
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        tasks() >= idle + 3,
        "a running loop: {} tasks, idle {idle}",
        tasks()
    );
    running.await.unwrap();
    // …a paused one is not: its loop was dropped, the store holds it.
    const PAUSED: usize = 6;
    let mut interrupts = Vec::new();
    for n in 0..PAUSED {
        let thread = format!("t-mem{}", n + 1);
        let run = format!("r-pay-{n}");
        let paused = read_all(post(&http, &a, &input(&thread, &run, "pay")).await).await;
        interrupts.push((thread, interrupt_ids(&paused).remove(0)));
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tasks() > idle + 2 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        tasks() <= idle + 2,
        "{PAUSED} paused runs hold {} tasks over idle (kept loops would hold {})",
        tasks() - idle,
        PAUSED * 3
    );
    for (n, (thread, interrupt)) in interrupts.iter().enumerate() {
        let run = format!("r2-{n}");
        let resumed =
            read_all(post(&http, &a, &answer(thread, &run, interrupt, n % 2 == 0)).await).await;
        assert_eq!(
            resumed.last().unwrap().1["outcome"]["type"],
            "success",
            "{resumed:?}"
        );
    }
    assert_eq!(
        cluster.charges.load(Ordering::SeqCst),
        3,
        "approved: 0, 2, 4"
    );
    a.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_outlives_a_postgres_outage_and_loses_nothing() {
    let db = TestDatabase::new().await;
    let cluster = Cluster::postgres(&db).await;
    let http = reqwest::Client::new();
    let a = cluster.process(WebConfig::default()).await;
    let response = post(&http, &a, &input("t-outage", "r1", "slow")).await;
    let mut outage = None;
    let events = read_until(response, |e| {
        if outage.is_none() && e.iter().any(|(_, e)| e["type"] == "TOOL_CALL_RESULT") {
            // PostgreSQL stops (immediate) mid-run, and starts again after longer than a lease.
            outage = Some(db.outage(Duration::from_millis(1500)));
        }
        false
    })
    .await;
    outage.expect("the run had a tool result").join().unwrap();
    assert_eq!(ids(&events), (1..=events.len() as u64).collect::<Vec<_>>());
    let end = &events.last().unwrap().1;
    assert_eq!(end["type"], "RUN_FINISHED", "{events:?}");
    assert_eq!(end["outcome"]["type"], "success", "{end}");
    // Everything the client saw is in the store: the replay is the same, and the history
    // has every tool result and the answer.
    let replay = read_all(reattach(&http, &a, "r1", None).await).await;
    assert_eq!(replay, events);
    let history: Value = http
        .get(format!("{}/agui/threads/t-outage/messages", a.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let text = history.to_string();
    for n in 0..4 {
        assert!(text.contains(&format!("tick {n}")), "{text}");
    }
    assert_eq!(
        history["messages"].as_array().unwrap().last().unwrap()["content"],
        "Done."
    );
    a.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_taken_over_offers_the_pages_frontend_tools_again() {
    let db = TestDatabase::new().await;
    let cluster = Cluster::postgres(&db).await;
    let http = reqwest::Client::new();
    let a = cluster.process(WebConfig::default()).await;
    let b = cluster.process(WebConfig::default()).await;
    let mut first = input("t-tools", "r1", "tick then pick");
    first["tools"] = json!([{"name": "pick_color", "description": "Asks the person for a color",
                             "parameters": {"type": "object", "properties": {}}}]);
    let seen = read_until(post(&http, &a, &first).await, |e| {
        e.iter().any(|(_, e)| e["type"] == "TOOL_CALL_RESULT")
    })
    .await;
    let last = seen.last().unwrap().0.unwrap();
    // A dies mid-run; B takes the run over: the page's tool is still there for the model.
    a.kill();
    let rest = tokio::time::timeout(
        Duration::from_secs(20),
        read_until(reattach(&http, &b, "r1", Some(last)).await, |events| {
            events
                .last()
                .is_some_and(|(_, e)| e["type"] == "RUN_FINISHED" || e["type"] == "RUN_ERROR")
        }),
    )
    .await
    .expect("B did not take the run over");
    assert!(
        rest.iter().any(|(_, e)| e["name"] == "mux.run_taken_over"),
        "{rest:?}"
    );
    let end = &rest.last().unwrap().1;
    let pending = end["outcome"]["pendingToolCallIds"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        pending.len(),
        1,
        "the run did not wait for the page's tool: {rest:?}"
    );
    assert!(
        rest.iter().any(|(_, e)| e["type"] == "TOOL_CALL_START"
            && e["toolCallName"] == "pick_color"
            && e["toolCallId"] == pending[0]),
        "{rest:?}"
    );
    b.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frontend_tool_call_paused_on_one_process_gets_its_result_on_another() {
    let db = TestDatabase::new().await;
    let cluster = Cluster::postgres(&db).await;
    let http = reqwest::Client::new();
    let a = cluster.process(WebConfig::default()).await;
    let b = cluster.process(WebConfig::default()).await;
    let tools = json!([{"name": "pick_color", "description": "Asks the person for a color",
                        "parameters": {"type": "object", "properties": {}}}]);
    let mut first = input("t-pick", "r1", "pick");
    first["tools"] = tools.clone();
    let paused = read_all(post(&http, &a, &first).await).await;
    let end = &paused.last().unwrap().1;
    let call = end["outcome"]["pendingToolCallIds"][0]
        .as_str()
        .unwrap_or_else(|| panic!("no pending frontend call: {end}"))
        .to_owned();
    // A is gone; B gets the page's result and the loop goes on from the session.
    a.kill();
    let next = json!({"threadId": "t-pick", "runId": "r2", "tools": tools, "messages": [
        {"id": "r1-u", "role": "user", "content": "pick"},
        {"id": "r2-t", "role": "tool", "toolCallId": call, "content": "blue"}]});
    let resumed = read_all(post(&http, &b, &next).await).await;
    let end = &resumed.last().unwrap().1;
    assert_eq!(end["type"], "RUN_FINISHED", "{resumed:?}");
    assert_eq!(end["result"], "You picked blue.", "{resumed:?}");
    b.kill();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_paused_on_a_killed_process_is_answered_on_another() {
    let db = TestDatabase::new().await;
    let cluster = Cluster::postgres(&db).await;
    let http = reqwest::Client::new();
    let a = cluster.process(WebConfig::default()).await;
    let b = cluster.process(WebConfig::default()).await;
    let paused = read_all(post(&http, &a, &input("t-ask", "r1", "ask")).await).await;
    let interrupt = interrupt_ids(&paused).remove(0);
    assert_eq!(
        paused.last().unwrap().1["outcome"]["interrupts"][0]["reason"],
        "input"
    );
    // The question is stored, not held: the thread is busy everywhere, and A can go.
    let refused = post(&http, &b, &input("t-ask", "r-x", "hello")).await;
    assert_eq!(refused.status(), 409);
    a.kill();
    let reply = json!({"threadId": "t-ask", "runId": "r2", "messages": [],
        "resume": [{"interruptId": interrupt, "status": "resolved", "payload": {"answer": "blue"}}]});
    let answered = read_all(post(&http, &b, &reply).await).await;
    let end = &answered.last().unwrap().1;
    assert_eq!(end["type"], "RUN_FINISHED", "{answered:?}");
    assert_eq!(end["result"], "Noted.", "{answered:?}");
    // The rebuilt loop asked the same call again and got the answer given meanwhile: the
    // page is not asked twice.
    assert_ne!(end["outcome"]["type"], "interrupt", "{answered:?}");
    // A second answer to the same question is refused.
    let mut again = reply.clone();
    again["runId"] = json!("r3");
    let twice = read_all(post(&http, &b, &again).await).await;
    let error = &twice.last().unwrap().1;
    assert_eq!(error["type"], "RUN_ERROR", "{twice:?}");
    // And B replays its answer run from the store.
    let replay = read_all(reattach(&http, &b, "r2", None).await).await;
    assert_eq!(replay, answered);
    b.kill();
}

/// A client streaming a run from A, whose process is cut off from the run store long enough
/// for B to take the run over and finish it: when A finds the run taken, its client goes on
/// from the store with B's events, the same numbers, to the end (it used to stall).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_of_a_run_taken_from_its_process_follows_it_to_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::sqlite(dir.path());
    let http = reqwest::Client::new();
    // A's `tick` never returns; B's does at once.
    let (a, a_store) = cluster
        .process_with(WebConfig::default(), Duration::from_secs(3600), true)
        .await;
    let a_store = a_store.unwrap();
    let (b, _) = cluster
        .process_with(WebConfig::default(), Duration::from_millis(10), false)
        .await;
    let response = post(&http, &a, &input("t-cut", "r1", "slow")).await;
    let mut b_side = None;
    let seen = read_until(response, |e| {
        if b_side.is_none() && e.iter().any(|(_, e)| e["type"] == "TOOL_CALL_END") {
            // A is cut off mid-tool; B takes the run over once A's lease ran out, and
            // finishes it; then A reaches the store again.
            a_store.cut_off(true);
            let (http, b_url, a_store) = (http.clone(), b.url.clone(), Arc::clone(&a_store));
            b_side = Some(tokio::spawn(async move {
                let replay = http
                    .get(format!("{b_url}/agui/runs/r1/events"))
                    .send()
                    .await
                    .unwrap();
                let replay = read_all(replay).await;
                a_store.cut_off(false);
                replay
            }));
        }
        false
    })
    .await;
    let replay = b_side.expect("the tool was called").await.unwrap();
    let end = &replay.last().unwrap().1;
    assert_eq!(end["type"], "RUN_FINISHED", "{replay:?}");
    assert!(
        replay
            .iter()
            .any(|(_, e)| e["name"] == "mux.run_taken_over"),
        "{replay:?}"
    );
    // A's client, its stream open all along, got the rest from the store: B's events, with
    // B's numbers.
    assert_eq!(seen, replay);
    a.kill();
    b.kill();
}

/// A session store whose first load of one thread, once read, waits to be let go: a process
/// that looked the thread up just before another process made it.
struct StaleFirstLoad {
    inner: Arc<dyn SessionStore>,
    thread: String,
    taken: AtomicBool,
    read: Arc<Notify>,
    go: Arc<Notify>,
}

impl SessionStore for StaleFirstLoad {
    fn create<'a>(&'a self, meta: &'a SessionMeta) -> BoxFuture<'a, Result<(), SessionError>> {
        self.inner.create(meta)
    }

    fn save_meta<'a>(&'a self, meta: &'a SessionMeta) -> BoxFuture<'a, Result<(), SessionError>> {
        self.inner.save_meta(meta)
    }

    fn append<'a>(
        &'a self,
        id: &'a str,
        records: &'a [HistoryRecord],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        self.inner.append(id, records)
    }

    fn save_and_append<'a>(
        &'a self,
        meta: &'a SessionMeta,
        records: &'a [HistoryRecord],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        self.inner.save_and_append(meta, records)
    }

    fn create_and_append<'a>(
        &'a self,
        meta: &'a SessionMeta,
        records: &'a [HistoryRecord],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        self.inner.create_and_append(meta, records)
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Session, SessionError>> {
        Box::pin(async move {
            let loaded = self.inner.load(id).await;
            if id == self.thread && !self.taken.swap(true, Ordering::SeqCst) {
                self.read.notify_one();
                self.go.notified().await;
            }
            loaded
        })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<SessionMeta>, SessionError>> {
        self.inner.list()
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), SessionError>> {
        self.inner.delete(id)
    }
}

fn principals() -> BearerTokens {
    BearerTokens::new()
        .token("tok-alice", Principal::new("alice"))
        .token("tok-bob", Principal::new("bob"))
}

async fn post_as(
    http: &reqwest::Client,
    url: &str,
    token: &str,
    body: &Value,
) -> reqwest::Response {
    http.post(format!("{url}/agui"))
        .bearer_auth(token)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// Two principals race for one new thread id on two processes: B looks the thread up (it is
/// absent), A makes it for alice and her run ends, then bob's run goes on on B. Bob's run
/// fails without writing into alice's thread or reading it, and alice still gets her thread
/// on B (the claim B cached for bob is not taken as her refusal).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_thread_raced_for_by_two_principals_on_two_processes_stays_its_makers() {
    let db = TestDatabase::new().await;
    let cluster = Cluster::postgres(&db).await;
    let http = reqwest::Client::new();
    let config = || WebConfig::default().authenticator(principals());
    let a = cluster.process(config()).await;
    let (read, go) = (Arc::new(Notify::new()), Arc::new(Notify::new()));
    let gate = (Arc::clone(&read), Arc::clone(&go));
    let (b, _) = cluster
        .process_on(config(), Duration::from_millis(250), false, move |inner| {
            Arc::new(StaleFirstLoad {
                inner,
                thread: "t-race".into(),
                taken: AtomicBool::new(false),
                read: gate.0,
                go: gate.1,
            })
        })
        .await;

    let bob = {
        let (http, b_url) = (http.clone(), b.url.clone());
        tokio::spawn(async move {
            let body = input("t-race", "r-bob", "bob's plan");
            read_all(post_as(&http, &b_url, "tok-bob", &body).await).await
        })
    };
    tokio::time::timeout(Duration::from_secs(10), read.notified())
        .await
        .expect("B never looked the thread up");
    let alice = read_all(
        post_as(
            &http,
            &a.url,
            "tok-alice",
            &input("t-race", "r-alice", "hi"),
        )
        .await,
    )
    .await;
    assert_eq!(kinds(&alice).last(), Some(&"RUN_FINISHED"), "{alice:?}");
    go.notify_one();

    let bob = tokio::time::timeout(Duration::from_secs(20), bob)
        .await
        .expect("bob's run never ended")
        .unwrap();
    let last = &bob.last().expect("bob's run showed nothing").1;
    assert_eq!(last["type"], "RUN_ERROR", "{bob:?}");
    assert!(
        !kinds(&bob).contains(&"MESSAGES_SNAPSHOT"),
        "bob was shown alice's thread: {bob:?}"
    );
    assert!(
        last["message"]
            .as_str()
            .unwrap_or_default()
            .contains("t-race"),
        "{last}"
    );

    let (sessions, _) = cluster.stores().await;
    let texts: Vec<String> = sessions
        .load("t-race")
        .await
        .unwrap()
        .messages
        .iter()
        .map(|m| m.text())
        .collect();
    assert_eq!(texts, ["hi", "Done."], "only alice's turn is in her thread");

    // On B, where bob's claim was cached, alice's thread is hers; to bob it does not exist.
    let again = read_all(
        post_as(
            &http,
            &b.url,
            "tok-alice",
            &input("t-race", "r-alice-2", "again"),
        )
        .await,
    )
    .await;
    assert_eq!(kinds(&again).last(), Some(&"RUN_FINISHED"), "{again:?}");
    for process in [&a, &b] {
        let refused = post_as(
            &http,
            &process.url,
            "tok-bob",
            &input("t-race", "r-bob-2", "x"),
        )
        .await;
        assert_eq!(refused.status(), 404, "{}", process.url);
    }
    a.kill();
    b.kill();
}
