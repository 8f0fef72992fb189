//! A store that cannot write: every wait ends and says why, and the next run after the cause
//! is gone succeeds at once (issue 42, items 2 and 3).
//!
//! - The SQLite cases run the server as a child process (this test binary again, playing
//!   `outage_child_server`) inside a user and mount namespace of its own (`unshare --user
//!   --map-root-user --mount`), where it mounts a small tmpfs and keeps its SQLite file there.
//!   The test fills that tmpfs to the last byte and frees it again through the child's stdin.
//! - The PostgreSQL case stops the server (`pg_ctl stop -m immediate`) while a run streams.
//!
//! Timeouts here are hang detectors, not timing assertions: a request must be answered, and a
//! stream must end, well within them.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use mux_llm::{ContentBlock, Request, Response, StopReason};
use mux_orchestrator::Agent;
use mux_orchestrator::runs::{PostgresRunStore, SqliteRunStore};
use mux_orchestrator::session::{PostgresSessionStore, SqliteSessionStore};
use mux_testkit::postgres::TestDatabase;
use mux_web::{AguiRouter, DoubleTexting, WebConfig};
use serde_json::{Value, json};

/// The tmpfs directory the child serves from; unset in a normal test run.
const ROLE: &str = "MUX_OUTAGE_CHILD_DIR";
/// The full name of the child's test, for `--exact`.
const CHILD_TEST: &str = "a_store_that_cannot_write::outage_child_server";
/// What the child prints once it listens, before its address.
const LISTENING: &str = "MUX-OUTAGE-LISTENING ";
/// What the child prints after a command, before the command.
const DONE: &str = "MUX-OUTAGE-DONE ";
/// The tmpfs's size.
const TMPFS_SIZE: &str = "16m";
/// How long a request may take to be answered, and its stream to end, while the store
/// cannot write: a hang detector far above the bound the server keeps (docs/web.md).
const HANG: Duration = Duration::from_secs(90);
/// How long the first run after the cause is gone may take: a hang detector well under the
/// 29 s each run waited before the fix.
const RECOVERY: Duration = Duration::from_secs(10);

/// Not a test of its own: the server a child process plays, chosen by `MUX_OUTAGE_CHILD_DIR`
/// (without it, this returns at once). It serves on a SQLite file in that directory and
/// obeys `fill` and `free` on its stdin.
#[test]
fn outage_child_server() {
    let Ok(dir) = std::env::var(ROLE) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let path = dir.join("mux.db");
        let sessions = Arc::new(SqliteSessionStore::open(&path).await.unwrap());
        let runs = Arc::new(SqliteRunStore::open(&path).await.unwrap());
        // A new run on a thread whose run failed waits for that run's end to be stored
        // (once the store is back) instead of being refused as busy.
        let router = enqueueing_router(sessions, runs);
        let listener = mux_web::bind(0).await.unwrap();
        println!("{LISTENING}{}", listener.local_addr().unwrap());
        tokio::spawn(mux_web::serve(listener, router));
        // Commands come on stdin; its end (the test went away) ends the child.
        let (done_tx, done_rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                let filler = dir.join("filler");
                match line.as_str() {
                    "fill" => fill(&filler),
                    "free" => std::fs::remove_file(&filler).unwrap(),
                    other => panic!("no command {other}"),
                }
                println!("{DONE}{line}");
            }
            done_tx.send(()).ok();
        });
        done_rx.await.ok();
    });
}

/// Writes zeros to `path` until the file system has not a byte left.
fn fill(path: &Path) {
    let mut file = std::fs::File::create(path).unwrap();
    for chunk in [64 * 1024, 4096, 1] {
        let zeros = vec![0u8; chunk];
        loop {
            match file.write(&zeros) {
                Ok(0) => break,
                Ok(_) => {}
                Err(err) if err.raw_os_error() == Some(28) => break,
                Err(err) => panic!("filling {}: {err}", path.display()),
            }
        }
    }
    file.sync_all().ok();
}

/// The agent: a prompt `slow` ticks four times (250 ms each), any other is answered at once.
fn agent() -> Agent {
    crate::common::tick_agent(respond)
}

fn respond(request: &Request) -> Result<Response, mux_llm::LlmError> {
    let (prompt, since) = crate::common::latest_prompt(&request.messages);
    let results = crate::common::tool_result_count(since);
    let content = if prompt == "slow" && results < 4 {
        vec![ContentBlock::tool_use(
            format!("call_{results}"),
            "tick",
            json!({"n": results}),
        )]
    } else {
        vec![ContentBlock::text("Done.")]
    };
    let stop = if content[0].as_text().is_some() {
        StopReason::EndTurn
    } else {
        StopReason::ToolUse
    };
    Ok(Response::new(content, stop))
}

/// The router of these tests on `sessions` and `runs`: a new run on a thread whose run failed
/// waits for that run's end to be stored (once the store is back) instead of being refused as
/// busy.
fn enqueueing_router(
    sessions: Arc<dyn mux_orchestrator::session::SessionStore>,
    runs: Arc<dyn mux_orchestrator::runs::RunStore>,
) -> axum::Router {
    let config = WebConfig::default().double_texting(DoubleTexting::Enqueue);
    AguiRouter::new(agent())
        .session_store(sessions)
        .run_store(runs)
        .config(config)
        .build()
}

/// Serves [`enqueueing_router`] and starts a `slow` run on `thread`: the URL, the server's
/// task, the client and the run's (streaming) response.
async fn serve_and_start(
    sessions: Arc<dyn mux_orchestrator::session::SessionStore>,
    runs: Arc<dyn mux_orchestrator::runs::RunStore>,
    thread: &str,
) -> (
    String,
    tokio::task::JoinHandle<std::io::Result<()>>,
    reqwest::Client,
    reqwest::Response,
) {
    let (url, server) = crate::common::serve(enqueueing_router(sessions, runs)).await;
    let http = reqwest::Client::new();
    let response = http
        .post(format!("{url}/agui"))
        .json(&input(thread, "r1", "slow"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    (url, server, http, response)
}

/// The server child in its namespace, killed on drop.
struct ChildServer {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    url: String,
    _dir: tempfile::TempDir,
}

impl ChildServer {
    /// Starts this test binary as the server, on a fresh tmpfs of its own.
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let exe = std::env::current_exe().unwrap();
        let mut child = Command::new("unshare")
            .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
            .arg(
                "mount -t tmpfs -o size=\"$1\" mux-outage \"$2\" && \
                 exec \"$3\" \"$4\" --exact --nocapture --test-threads=1",
            )
            .arg("sh")
            .arg(TMPFS_SIZE)
            .arg(dir.path())
            .arg(&exe)
            .arg(CHILD_TEST)
            .env(ROLE, dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("running unshare (util-linux)");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut server = Self {
            child,
            stdin,
            lines,
            url: String::new(),
            _dir: dir,
        };
        let address = server.expect_line(LISTENING);
        server.url = format!("http://{address}");
        server
    }

    /// The rest of the child's next line that starts with `prefix` (within a minute).
    fn expect_line(&mut self, prefix: &str) -> String {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                // The test harness may print before it on the same line.
                Ok(line) => {
                    if let Some(at) = line.find(prefix) {
                        return line[at + prefix.len()..].trim().to_owned();
                    }
                }
                Err(err) => {
                    let status = self.child.try_wait();
                    panic!("the server child did not say `{prefix}`: {err} (status {status:?})")
                }
            }
        }
    }

    /// Has the child run `command` (`fill`, `free`) and waits until it did.
    async fn command(&mut self, command: &str) {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
        let said = tokio::task::block_in_place(|| self.expect_line(DONE));
        assert_eq!(said, command);
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

fn input(thread: &str, run: &str, text: &str) -> Value {
    json!({"threadId": thread, "runId": run, "messages": [{"id": format!("{run}-u"), "role": "user", "content": text}]})
}

/// How a request ended: refused before its stream (status, body), or its stream's events.
#[derive(Debug)]
enum Answer {
    Refused(u16, Value),
    Streamed(Vec<Value>),
}

/// Posts `body` to `/agui` and reads the answer to its end; panics if that takes longer
/// than `within` (a hang).
async fn run(http: &reqwest::Client, url: &str, body: &Value, within: Duration) -> Answer {
    let answer = async {
        let response = http
            .post(format!("{url}/agui"))
            .json(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        if status != 200 {
            let body = response.json().await.unwrap_or(Value::Null);
            return Answer::Refused(status, body);
        }
        let text = response.text().await.unwrap();
        Answer::Streamed(
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| serde_json::from_str(d.trim()).unwrap())
                .collect(),
        )
    };
    let started = std::time::Instant::now();
    let answer = tokio::time::timeout(within, answer)
        .await
        .unwrap_or_else(|_| panic!("no answer within {within:?} to {body}: the request hangs"));
    // What happened, for the log of a failed test.
    let summary = match &answer {
        Answer::Refused(status, body) => format!("{status} {body}"),
        Answer::Streamed(events) => format!("{:?} {}", kinds(events), events.last().unwrap()),
    };
    eprintln!("{} after {:?}: {summary}", body["runId"], started.elapsed());
    answer
}

fn kinds(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

/// Whether the answer says the store failed, as documented: a 503 `run_store_unavailable`
/// before the stream opens, or `RUN_STARTED` then a `RUN_ERROR` with a code and a message.
fn store_failure(answer: &Answer) -> bool {
    match answer {
        Answer::Refused(status, body) => {
            assert_eq!(*status, 503, "{body}");
            assert_eq!(body["error"], "run_store_unavailable", "{body}");
            true
        }
        Answer::Streamed(events) => {
            let kinds = kinds(events);
            assert_eq!(kinds.first(), Some(&"RUN_STARTED"), "{events:?}");
            let last = events.last().unwrap();
            if last["type"] != "RUN_ERROR" {
                return false;
            }
            assert!(
                last["code"].as_str().is_some_and(|c| !c.is_empty()),
                "{last}"
            );
            assert!(
                last["message"].as_str().is_some_and(|m| !m.is_empty()),
                "{last}"
            );
            true
        }
    }
}

/// Whether the run answered: its stream ended with `RUN_FINISHED`.
fn finished(answer: &Answer) -> bool {
    matches!(answer, Answer::Streamed(events)
        if events.last().is_some_and(|e| e["type"] == "RUN_FINISHED"))
}

/// A prompt big enough that storing it needs pages the full file system cannot give.
fn big_prompt() -> String {
    "x".repeat(512 * 1024)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_fails_the_run_with_a_cause_and_the_next_run_after_succeeds_at_once() {
    let mut server = ChildServer::start();
    let http = reqwest::Client::new();
    let before = run(&http, &server.url, &input("t1", "r1", "hello"), HANG).await;
    assert!(finished(&before), "{before:?}");

    server.command("fill").await;
    // A new thread, and a new run on a thread the store has: each ends, saying why.
    for (thread, run_id) in [("t2", "r2"), ("t1", "r3")] {
        let answer = run(
            &http,
            &server.url,
            &input(thread, run_id, &big_prompt()),
            HANG,
        )
        .await;
        assert!(store_failure(&answer), "{thread}: {answer:?}");
    }

    server.command("free").await;
    for (thread, run_id) in [("t1", "r4"), ("t3", "r5"), ("t2", "r6")] {
        let answer = run(
            &http,
            &server.url,
            &input(thread, run_id, "hello"),
            RECOVERY,
        )
        .await;
        assert!(finished(&answer), "{thread}: {answer:?}");
    }
}

/// Reads `response`'s SSE events to the end (within [`HANG`]), calling `seen` with the text
/// so far after each chunk.
async fn read_stream(
    mut response: reqwest::Response,
    mut seen: impl AsyncFnMut(&str),
) -> Vec<Value> {
    let mut text = String::new();
    let read = async {
        while let Some(chunk) = response.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
            seen(&text).await;
        }
    };
    tokio::time::timeout(HANG, read)
        .await
        .expect("the stream did not end while the store could not write");
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_that_fills_mid_stream_ends_it_with_a_run_error_naming_the_cause() {
    let mut server = ChildServer::start();
    let http = reqwest::Client::new();
    let response = http
        .post(format!("{}/agui", server.url))
        .json(&input("m1", "r1", "slow"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut filled = false;
    let events = read_stream(response, async |text: &str| {
        if !filled && text.contains("TOOL_CALL_RESULT") {
            filled = true;
            server.command("fill").await;
        }
    })
    .await;
    assert!(filled, "the run had no tool result: {events:?}");
    assert!(
        store_failure(&Answer::Streamed(events.clone())),
        "{events:?}"
    );
    let error = events.last().unwrap();
    assert_eq!(error["code"], "run_store", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("disk is full"),
        "the error names the cause: {error}"
    );
    // The events before the error are the stored ones: a replay shows the same.
    server.command("free").await;
    let answer = run(&http, &server.url, &input("m1", "r2", "hello"), RECOVERY).await;
    assert!(finished(&answer), "{answer:?}");
    let replay = http
        .get(format!("{}/agui/runs/r1/events", server.url))
        .send()
        .await
        .unwrap();
    let replayed = read_stream(replay, async |_: &str| {}).await;
    assert_eq!(
        replayed, events,
        "the store ended the run as its client saw"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_three_second_disk_full_blip_every_run_succeeds_at_once() {
    let mut server = ChildServer::start();
    let http = reqwest::Client::new();
    let before = run(&http, &server.url, &input("b1", "r1", "hello"), HANG).await;
    assert!(finished(&before), "{before:?}");

    // A run that ticks for a second starts; the disk fills under it for three seconds.
    let url = server.url.clone();
    let during = {
        let http = http.clone();
        tokio::spawn(async move { run(&http, &url, &input("b1", "r2", "slow"), HANG).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.command("fill").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    server.command("free").await;
    // Each new run after the blip succeeds at once (before the fix, each waited about 29 s
    // and failed `unwritten`, for minutes).
    for n in 0..4 {
        let body = input(&format!("b{}", n + 2), &format!("after-{n}"), "hello");
        let answer = run(&http, &server.url, &body, RECOVERY).await;
        assert!(finished(&answer), "run {n} after the blip: {answer:?}");
    }
    // The run caught in the blip ended (either way), within the bound; its thread goes on.
    let during = during.await.unwrap();
    assert!(finished(&during) || store_failure(&during), "{during:?}");
    let answer = run(&http, &server.url, &input("b1", "r3", "hello"), RECOVERY).await;
    assert!(finished(&answer), "{answer:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stopped_mid_stream_ends_it_with_a_run_error_and_the_next_run_succeeds() {
    let db = TestDatabase::new().await;
    let sessions = Arc::new(PostgresSessionStore::connect(&db.url).await.unwrap());
    let runs = Arc::new(PostgresRunStore::connect(&db.url).await.unwrap());
    let (url, server, http, response) = serve_and_start(sessions, runs, "p1").await;
    // Reads until the first tool result, then stops the database for longer than the bound.
    let mut response = response;
    let mut text = String::new();
    let mut outage = None;
    let read = async {
        while let Some(chunk) = response.chunk().await.unwrap() {
            text.push_str(&String::from_utf8_lossy(&chunk));
            if outage.is_none() && text.contains("TOOL_CALL_RESULT") {
                outage = Some(db.outage(Duration::from_secs(20)));
            }
        }
    };
    tokio::time::timeout(HANG, read)
        .await
        .expect("the stream did not end while PostgreSQL was down");
    let events: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim()).unwrap())
        .collect();
    assert!(outage.is_some(), "the run had no tool result: {events:?}");
    assert!(
        store_failure(&Answer::Streamed(events.clone())),
        "{events:?}"
    );
    // PostgreSQL is back: the next run succeeds at once, on a new thread and on this one
    // (whose failed run ends in the store with the store's next write).
    let restarted = outage.unwrap();
    tokio::task::spawn_blocking(move || restarted.join().unwrap())
        .await
        .unwrap();
    let answer = run(&http, &url, &input("p2", "r2", "hello"), RECOVERY).await;
    assert!(finished(&answer), "{answer:?}");
    let answer = run(&http, &url, &input("p1", "r3", "hello"), RECOVERY).await;
    assert!(finished(&answer), "{answer:?}");
    server.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_locked_mid_stream_ends_it_with_a_run_error_and_the_next_run_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mux.db");
    let sessions = Arc::new(SqliteSessionStore::open(&path).await.unwrap());
    let runs = Arc::new(SqliteRunStore::open(&path).await.unwrap());
    let (url, server, http, response) = serve_and_start(sessions, runs, "l1").await;
    // After the first tool result, another process holds the database's write lock for
    // longer than the bound.
    let mut holder: Option<Child> = None;
    let events = read_stream(response, async |text: &str| {
        if holder.is_none() && text.contains("TOOL_CALL_RESULT") {
            holder = Some(crate::common::hold_sqlite_lock(&path, "14"));
        }
    })
    .await;
    let mut holder = holder.expect("the run had no tool result");
    assert!(
        store_failure(&Answer::Streamed(events.clone())),
        "{events:?}"
    );
    assert_eq!(events.last().unwrap()["type"], "RUN_ERROR", "{events:?}");
    // The lock is let go: the next runs succeed at once.
    let released = tokio::task::spawn_blocking(move || holder.wait().unwrap())
        .await
        .unwrap();
    assert!(released.success(), "{released:?}");
    let answer = run(&http, &url, &input("l2", "r2", "hello"), RECOVERY).await;
    assert!(finished(&answer), "{answer:?}");
    let answer = run(&http, &url, &input("l1", "r3", "hello"), RECOVERY).await;
    assert!(finished(&answer), "{answer:?}");
    server.abort();
}
