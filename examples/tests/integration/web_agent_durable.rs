//! Durable runs with real processes: several `web_agent` processes on one throw-away
//! PostgreSQL (and one on SQLite), killed with SIGKILL mid-run, and HAProxy in front of three
//! of them with `@ag-ui/client` going through it. Every process works in one shared temp dir
//! (the agent's root), made by the test.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use mux_testkit::balancer::Balancer;
use mux_testkit::postgres::{Durability, Server};
use serde_json::{Value, json};

use crate::common::{Example, example};

const TOKEN: &str = "durable-test-token";

/// A throw-away PostgreSQL and a root directory that every process of a test shares.
struct Cluster {
    postgres: Server,
    root: tempfile::TempDir,
}

impl Cluster {
    fn new() -> Self {
        let postgres = Server::start(Durability::Throwaway).expect("PostgreSQL");
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("README.md"), "# a project\n").unwrap();
        Self { postgres, root }
    }

    /// A `web_agent` on the cluster's database, with a 1 s lease and `extra` flags.
    fn start(&self, extra: &[&str]) -> Example {
        let url = self.postgres.url("postgres");
        let mut args = vec![
            "--database-url",
            &url,
            "--token",
            TOKEN,
            "--allowed-host",
            "127.0.0.1",
            "--lease-ms",
            "1000",
        ];
        args.extend_from_slice(extra);
        Example::start_in(Command::new(example("web_agent")), self.root.path(), &args)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }
}

/// An HTTP/1.0 exchange over a raw socket (so the body is never chunked): the status, then
/// the body's SSE events or JSON.
struct Reply {
    status: u16,
    reader: BufReader<TcpStream>,
    /// Past it the body is taken as ended: a run that never ends keeps its stream alive
    /// with keep-alive comments, which the socket's read timeout does not catch.
    deadline: Instant,
}

/// How long one reply's body may last.
const REPLY_DEADLINE: Duration = Duration::from_secs(90);

fn send(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: Option<&Value>,
) -> Reply {
    let authority = base.trim_start_matches("http://");
    let stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut request = format!(
        "{method} {path} HTTP/1.0\r\nHost: {authority}\r\nAuthorization: Bearer {TOKEN}\r\n\
         Content-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    (&stream).write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not a status line: {line:?}"));
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
    }
    Reply {
        status,
        reader,
        deadline: Instant::now() + REPLY_DEADLINE,
    }
}

impl Reply {
    /// The next SSE event (its id and data), or `None` at the end of the body.
    fn event(&mut self) -> Option<(u64, Value)> {
        let (mut id, mut data) = (None, String::new());
        let mut line = String::new();
        loop {
            line.clear();
            if self.reader.read_line(&mut line).ok()? == 0 || Instant::now() > self.deadline {
                return None;
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if !data.is_empty() {
                    let id = id.unwrap_or_else(|| panic!("an event without an id: {data}"));
                    return Some((id, serde_json::from_str(&data).unwrap()));
                }
            } else if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().parse().ok();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            }
        }
    }

    /// Every event to the end of the body.
    fn events(mut self) -> Vec<(u64, Value)> {
        assert_eq!(self.status, 200, "the request was refused");
        std::iter::from_fn(|| self.event()).collect()
    }

    fn json(mut self) -> Value {
        let mut text = String::new();
        self.reader.read_to_string(&mut text).unwrap();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    }
}

fn prompt(thread: &str, run: &str, text: &str) -> Value {
    json!({"threadId": thread, "runId": run, "tools": [], "context": [], "state": {},
           "forwardedProps": {},
           "messages": [{"id": format!("u-{run}"), "role": "user", "content": text}]})
}

fn resume(thread: &str, run: &str, interrupt: &str) -> Value {
    json!({"threadId": thread, "runId": run, "tools": [], "context": [], "state": {},
           "forwardedProps": {}, "messages": [],
           "resume": [{"interruptId": interrupt, "status": "resolved", "payload": {"approved": true}}]})
}

fn run(base: &str, body: &Value) -> Reply {
    send(base, "POST", "/agui", &[], Some(body))
}

fn follow(base: &str, run: &str, after: u64) -> Reply {
    send(
        base,
        "GET",
        &format!("/agui/runs/{run}/events"),
        &[("Last-Event-ID", after.to_string())],
        None,
    )
}

fn history(base: &str, thread: &str) -> Value {
    send(
        base,
        "GET",
        &format!("/agui/threads/{thread}/messages"),
        &[],
        None,
    )
    .json()
}

/// The thread's user prompts, in stored order.
fn user_prompts(base: &str, thread: &str) -> Vec<String> {
    history(base, thread)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .filter_map(|m| m["content"].as_str().map(str::to_owned))
        .collect()
}

fn types(events: &[(u64, Value)]) -> Vec<String> {
    events
        .iter()
        .map(|(_, e)| match e["type"].as_str() {
            Some("CUSTOM") => format!("CUSTOM {}", e["name"].as_str().unwrap_or("")),
            Some("RUN_ERROR") => format!("RUN_ERROR {}", e),
            other => other.unwrap_or("?").to_owned(),
        })
        .collect()
}

/// The outcome type of the last `RUN_FINISHED` (`success`, `interrupt`, `cancelled`).
fn outcome(events: &[(u64, Value)]) -> String {
    let last = events
        .iter()
        .rev()
        .find(|(_, e)| e["type"] == "RUN_FINISHED")
        .unwrap_or_else(|| panic!("no RUN_FINISHED: {:?}", types(events)));
    last.1["outcome"]["type"].as_str().unwrap_or("").to_owned()
}

/// The first interrupt's id of a run that ended on interrupts.
fn interrupt(events: &[(u64, Value)]) -> String {
    assert_eq!(outcome(events), "interrupt", "{:?}", types(events));
    let last = events
        .iter()
        .rev()
        .find(|(_, e)| e["type"] == "RUN_FINISHED")
        .unwrap();
    last.1["outcome"]["interrupts"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Ids `first`, `first + 1`, … without gaps or repeats.
fn assert_contiguous(events: &[(u64, Value)], first: u64) {
    let ids: Vec<u64> = events.iter().map(|(id, _)| *id).collect();
    let expected: Vec<u64> = (first..first + ids.len() as u64).collect();
    assert_eq!(ids, expected, "ids are not contiguous: {:?}", types(events));
}

/// Every tool call in the stored history has its result, and the last message is the
/// assistant's text.
fn assert_whole(history: &Value) {
    let messages = history["messages"].as_array().unwrap();
    let calls: Vec<&str> = messages
        .iter()
        .flat_map(|m| m["toolCalls"].as_array().into_iter().flatten())
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert!(!calls.is_empty(), "no tool calls: {history}");
    for call in calls {
        assert!(
            messages
                .iter()
                .any(|m| m["role"] == "tool" && m["toolCallId"] == call),
            "call {call} has no result: {history}"
        );
    }
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "assistant", "{history}");
    assert!(
        last["content"].as_str().is_some_and(|t| !t.is_empty()),
        "{history}"
    );
}

fn kill(example: &mut Example) {
    let _ = example.child.kill();
    let _ = example.child.wait();
}

/// Scenario 1: a run paused on A; A killed with SIGKILL; the interrupt answered on B; the
/// history whole on C.
#[test]
fn a_run_paused_on_a_killed_process_is_answered_on_another_and_whole_on_a_third() {
    let cluster = Cluster::new();
    let mut a = cluster.start(&[]);
    let b = cluster.start(&[]);
    let c = cluster.start(&[]);
    let paused = run(&a.url, &prompt("t1", "r1", "look around")).events();
    let id = interrupt(&paused);
    kill(&mut a);
    let answered = run(&b.url, &resume("t1", "r2", &id)).events();
    assert_eq!(outcome(&answered), "success", "{:?}", types(&answered));
    assert!(types(&answered).contains(&"TOOL_CALL_RESULT".to_owned()));
    let history = history(&c.url, "t1");
    assert_whole(&history);
    assert_eq!(history["interrupts"], json!([]), "{history}");
}

/// Scenario 2: reattach with `Last-Event-ID` on C to a run streaming on B.
#[test]
fn a_run_streaming_on_b_is_followed_on_c_from_its_last_event_id() {
    let cluster = Cluster::new();
    let b = cluster.start(&["--model-delay-ms", "100"]);
    let c = cluster.start(&[]);
    let mut stream = run(
        &b.url,
        &prompt("t2", "r1", r#"call read_file {"path": "README.md"}"#),
    );
    let first: Vec<_> = (0..3).map(|_| stream.event().unwrap()).collect();
    drop(stream);
    let last = first.last().unwrap().0;
    let rest = follow(&c.url, "r1", last).events();
    assert_contiguous(&rest, last + 1);
    assert_eq!(outcome(&rest), "success", "{:?}", types(&rest));
    assert!(types(&rest).contains(&"TEXT_MESSAGE_CONTENT".to_owned()));
}

/// Scenario 3: cancel on C of a run on B.
#[test]
fn a_run_on_b_is_cancelled_from_c() {
    let cluster = Cluster::new();
    let b = cluster.start(&["--model-delay-ms", "300"]);
    let c = cluster.start(&[]);
    let mut stream = run(
        &b.url,
        &prompt("t3", "r1", r#"call read_file {"path": "README.md"}"#),
    );
    let mut seen = vec![stream.event().unwrap(), stream.event().unwrap()];
    let cancelled = send(
        &c.url,
        "POST",
        "/agui/runs/r1/cancel",
        &[],
        Some(&json!({})),
    )
    .json();
    assert_eq!(cancelled["cancelled"], true, "{cancelled}");
    let started = Instant::now();
    seen.extend(std::iter::from_fn(|| stream.event()));
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the run did not stop"
    );
    assert_eq!(outcome(&seen), "cancelled", "{:?}", types(&seen));
    // The thread is free again, on any process.
    let next = run(&c.url, &prompt("t3", "r2", "look around")).events();
    assert_eq!(outcome(&next), "interrupt", "{:?}", types(&next));
}

/// Scenario 4: a thread busy on B is busy on C (409), and each double-texting strategy.
#[test]
fn a_thread_busy_on_b_is_busy_everywhere_and_each_strategy_holds() {
    let cluster = Cluster::new();
    let b = cluster.start(&["--model-delay-ms", "150"]);
    let c = cluster.start(&[]);
    let d = cluster.start(&["--double-texting", "interrupt"]);
    let e = cluster.start(&["--double-texting", "enqueue"]);
    let slow = r#"call read_file {"path": "README.md"}"#;

    // reject (the default): 409 on another process.
    let mut busy = run(&b.url, &prompt("t4", "r1", slow));
    busy.event().unwrap();
    let refused = run(&c.url, &prompt("t4", "r2", "look around"));
    assert_eq!(refused.status, 409);
    let first = busy.events_rest();
    assert_eq!(outcome(&first), "success");

    // interrupt: the running run is cancelled, keeps what it wrote, and the new one runs.
    let mut running = run(&b.url, &prompt("t4", "r3", slow));
    running.event().unwrap();
    running.event().unwrap();
    let replaced = run(&d.url, &prompt("t4", "r4", "look around")).events();
    assert_eq!(outcome(&replaced), "interrupt", "{:?}", types(&replaced));
    let cut = running.events_rest();
    assert_eq!(outcome(&cut), "cancelled", "{:?}", types(&cut));
    assert_eq!(user_prompts(&c.url, "t4"), [slow, slow, "look around"]);

    // enqueue: the new run waits for the current one, then runs.
    let mut current = run(&b.url, &prompt("t5", "t5-r1", slow));
    assert_eq!(current.status, 200);
    let opened = current.event();
    assert!(opened.is_some(), "{}", current.json());
    let queued = run(&e.url, &prompt("t5", "t5-r2", "look around")).events();
    let before = current.events_rest();
    assert_eq!(outcome(&before), "success", "{:?}", types(&before));
    assert_eq!(outcome(&queued), "interrupt", "{:?}", types(&queued));
    assert_eq!(user_prompts(&c.url, "t5"), [slow, "look around"]);
}

/// Scenario 5: B killed mid-stream; C takes the run over after the lease and finishes it, with
/// contiguous ids, and the tool that was running is not run again.
#[test]
fn a_run_whose_owner_is_killed_is_taken_over_and_no_tool_runs_twice() {
    let cluster = Cluster::new();
    let mut b = cluster.start(&[]);
    let c = cluster.start(&[]);
    let command = r#"call bash {"command": "echo started >> ran.txt; sleep 3"}"#;
    let paused = run(&b.url, &prompt("t6", "r1", command)).events();
    let id = interrupt(&paused);
    let mut stream = run(&b.url, &resume("t6", "r2", &id));
    let mut seen = Vec::new();
    while let Some(event) = stream.event() {
        let executing = event.1["name"] == "mux.tool_executing";
        seen.push(event);
        if executing {
            break;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(cluster.file("ran.txt")).is_ok_and(|t| t.contains("started")) {
        assert!(
            Instant::now() < deadline,
            "the command never started: {:?}",
            types(&seen)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let last = seen.last().unwrap().0;
    kill(&mut b);
    let killed = Instant::now();
    let rest = follow(&c.url, "r2", last).events();
    assert_contiguous(&rest, last + 1);
    assert!(
        types(&rest).contains(&"CUSTOM mux.run_taken_over".to_owned()),
        "{:?}",
        types(&rest)
    );
    assert_eq!(outcome(&rest), "success", "{:?}", types(&rest));
    assert!(killed.elapsed() < Duration::from_secs(15));
    // Past the command's own sleep: it ran once, in the dead process.
    std::thread::sleep(Duration::from_secs(4));
    let ran = std::fs::read_to_string(cluster.file("ran.txt")).unwrap();
    assert_eq!(
        ran.matches("started").count(),
        1,
        "the command ran again: {ran:?}"
    );
    let history = history(&c.url, "t6");
    assert_whole(&history);
    assert!(history.to_string().contains("unknown"), "{history}");
}

/// A run whose owner is killed mid-run is taken over with the page's frontend tools: the
/// model's call to one waits for the page (its result comes with the next run), rather than
/// failing as an unknown tool on the process that took the run over.
#[test]
fn a_run_taken_over_offers_the_pages_frontend_tools_again() {
    let cluster = Cluster::new();
    let mut b = cluster.start(&["--model-delay-ms", "300"]);
    let c = cluster.start(&[]);
    let calls = r#"call read_file {"path": "README.md"} then call pick_color {}"#;
    let mut body = prompt("t10", "r1", calls);
    body["tools"] = json!([{"name": "pick_color", "description": "Asks the person for a color",
                            "parameters": {"type": "object", "properties": {}}}]);
    let mut stream = run(&b.url, &body);
    // B is killed after the first call's turn, while its model streams the second call.
    let mut seen = Vec::new();
    while let Some(event) = stream.event() {
        let done = event.1["type"] == "TOOL_CALL_RESULT";
        seen.push(event);
        if done {
            break;
        }
    }
    let last = seen.last().unwrap().0;
    kill(&mut b);
    let rest = follow(&c.url, "r1", last).events();
    assert_contiguous(&rest, last + 1);
    assert!(
        types(&rest).contains(&"CUSTOM mux.run_taken_over".to_owned()),
        "{:?}",
        types(&rest)
    );
    let end = &rest.last().unwrap().1;
    let pending = end["outcome"]["pendingToolCallIds"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(pending.len(), 1, "no frontend call waits: {rest:?}");
    assert!(
        rest.iter().any(|(_, e)| e["type"] == "TOOL_CALL_START"
            && e["toolCallName"] == "pick_color"
            && e["toolCallId"] == pending[0]),
        "{rest:?}"
    );
}

/// Scenario 6: every process stopped; a fresh one serves the history and answers the pending
/// interrupt.
#[test]
fn after_every_process_stopped_a_fresh_one_answers_the_pending_interrupt() {
    let cluster = Cluster::new();
    let mut a = cluster.start(&[]);
    let mut b = cluster.start(&[]);
    let paused = run(&a.url, &prompt("t7", "r1", "look around")).events();
    let id = interrupt(&paused);
    kill(&mut a);
    kill(&mut b);
    let fresh = cluster.start(&[]);
    let pending = history(&fresh.url, "t7");
    assert_eq!(pending["interrupts"][0]["id"], id, "{pending}");
    let answered = run(&fresh.url, &resume("t7", "r2", &id)).events();
    assert_eq!(outcome(&answered), "success", "{:?}", types(&answered));
    assert_whole(&history(&fresh.url, "t7"));
}

/// Scenario 7: PostgreSQL stopped with `-m immediate` mid-run and started again: the run
/// finishes, and no message is lost.
#[test]
fn a_run_outlives_a_postgres_crash() {
    let cluster = Cluster::new();
    let b = cluster.start(&["--model-delay-ms", "150"]);
    let mut stream = run(
        &b.url,
        &prompt("t8", "r1", r#"call read_file {"path": "README.md"}"#),
    );
    let mut seen = vec![stream.event().unwrap()];
    let restart = cluster.postgres.outage(Duration::from_secs(2));
    seen.extend(std::iter::from_fn(|| stream.event()));
    restart.join().unwrap();
    assert!(
        seen.iter().any(|(_, e)| e["type"] == "RUN_FINISHED"),
        "the run did not finish: {:?}\nthe server said:\n{}",
        types(&seen),
        b.logged("", 0)
    );
    assert_eq!(outcome(&seen), "success", "{:?}", types(&seen));
    assert_contiguous(&seen, seen[0].0);
    let fresh = cluster.start(&[]);
    assert_whole(&history(&fresh.url, "t8"));
}

/// The same contract on SQLite, one process restarted: the pause survives.
#[test]
fn on_sqlite_a_paused_run_survives_a_restart() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("README.md"), "# a project\n").unwrap();
    let args = ["--token", TOKEN];
    let start = || Example::start_in(Command::new(example("web_agent")), root.path(), &args);
    let mut first = start();
    let paused = run(&first.url, &prompt("t9", "r1", "look around")).events();
    let id = interrupt(&paused);
    kill(&mut first);
    let second = start();
    let answered = run(&second.url, &resume("t9", "r2", &id)).events();
    assert_eq!(outcome(&answered), "success", "{:?}", types(&answered));
    assert_whole(&history(&second.url, "t9"));
}

/// Three processes behind HAProxy (round-robin per request): `@ag-ui/client` runs, pauses,
/// answers and reattaches through the balancer, each request landing on another process.
#[test]
fn ag_ui_client_runs_and_reattaches_through_haproxy() {
    let peers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/web-peers");
    assert!(
        peers.join("node_modules/@ag-ui/client").is_dir(),
        "@ag-ui/client is not installed in {}: run `cargo xtask peers`",
        peers.display()
    );
    let cluster = Cluster::new();
    let servers: Vec<Example> = (0..3)
        .map(|_| cluster.start(&["--model-delay-ms", "60"]))
        .collect();
    let backends: Vec<_> = servers
        .iter()
        .map(|s| s.url.trim_start_matches("http://").parse().unwrap())
        .collect();
    let balancer = Balancer::round_robin(&backends).expect("haproxy");
    let output = Command::new("node")
        .arg(peers.join("agui_balanced.mjs"))
        .arg(balancer.url())
        .arg(TOKEN)
        .current_dir(&peers)
        .output()
        .expect("node did not start (is Node.js installed?)");
    assert!(
        output.status.success(),
        "the client failed through the balancer:\n{}\n{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        balancer.log()
    );
}

impl Reply {
    /// The rest of the events, to the end of the body.
    fn events_rest(mut self) -> Vec<(u64, Value)> {
        std::iter::from_fn(|| self.event()).collect()
    }
}
