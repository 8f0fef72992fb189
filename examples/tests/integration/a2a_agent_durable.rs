//! A2A tasks in the run store, with real processes: `a2a_agent` processes on one throw-away
//! PostgreSQL see each other's tasks (get, list, subscribe, cancel, answer); a task paused on
//! a process killed with SIGKILL is answered on a fresh one by the official Python SDK; a
//! task running on a killed process is taken over after its lease without running its command
//! twice; and one process on SQLite keeps its tasks across a restart. Every process of a test
//! works in one temp dir the test makes (the agent's root).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use mux_testkit::postgres::{Durability, Server};
use serde_json::{Value, json};

use crate::a2a_agent::{gone_soon, installed, peers};
use crate::common::{Example, example};

/// A shared root, and the processes' database.
struct Cluster {
    root: tempfile::TempDir,
    url: String,
    _postgres: Option<Server>,
}

impl Cluster {
    fn postgres() -> Self {
        let postgres = Server::start(Durability::Throwaway).expect("PostgreSQL");
        let url = postgres.url("postgres");
        Self::with(url, Some(postgres))
    }

    fn sqlite() -> Self {
        let mut cluster = Self::with(String::new(), None);
        cluster.url = format!("sqlite://{}", cluster.root.path().join("a2a.db").display());
        cluster
    }

    fn with(url: String, postgres: Option<Server>) -> Self {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("README.md"), "# a project\n").unwrap();
        Self {
            root,
            url,
            _postgres: postgres,
        }
    }

    /// An `a2a_agent` on the cluster's database with a 1 s lease.
    fn start(&self) -> Example {
        Example::start_in(
            Command::new(example("a2a_agent")),
            self.root.path(),
            &["--database-url", &self.url, "--lease-ms", "1000"],
        )
    }

    fn file(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }
}

/// POSTs a JSON-RPC call over HTTP/1.0 (so the body is never chunked); the reader is at the
/// body.
fn post(base: &str, method: &str, params: Value) -> BufReader<TcpStream> {
    let authority = base.trim_start_matches("http://");
    let stream = TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    let request = format!(
        "POST /a2a HTTP/1.0\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         A2A-Version: 1.0\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    (&stream).write_all(request.as_bytes()).unwrap();
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
    }
    reader
}

/// A call's whole JSON-RPC answer.
fn rpc(base: &str, method: &str, params: Value) -> Value {
    let mut text = String::new();
    post(base, method, params)
        .read_to_string(&mut text)
        .unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// A streaming call's items (each answer's `result`), to the end of the stream.
fn stream(base: &str, method: &str, params: Value) -> Vec<Value> {
    let reader = post(base, method, params);
    reader
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| {
            let data = line.strip_prefix("data:")?.trim_start().to_owned();
            let answer: Value = serde_json::from_str(&data).unwrap();
            assert!(answer.get("error").is_none(), "{answer}");
            Some(answer["result"].clone())
        })
        .collect()
}

fn message(text: &str, task_id: Option<&str>) -> Value {
    let mut message = json!({
        "messageId": format!("m-{}", rand_id()),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    });
    if let Some(id) = task_id {
        message["taskId"] = json!(id);
    }
    message
}

fn rand_id() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// `SendMessage`; the task it answers with.
fn send(base: &str, text: &str, task_id: Option<&str>, immediately: bool) -> Value {
    let answer = rpc(
        base,
        "SendMessage",
        json!({
            "message": message(text, task_id),
            "configuration": {"returnImmediately": immediately},
        }),
    );
    assert!(answer.get("error").is_none(), "{answer}");
    answer["result"]["task"].clone()
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or_default()
}

fn answer_text(task: &Value) -> String {
    task["artifacts"][0]["parts"]
        .as_array()
        .map(|parts| {
            parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<String>()
        })
        .unwrap_or_default()
}

/// `GetTask` on `base` until the task is in a terminal state (at most 30 s).
fn ended(base: &str, id: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let task = rpc(base, "GetTask", json!({"id": id}))["result"].clone();
        let now = state(&task).to_owned();
        if matches!(
            now.as_str(),
            "TASK_STATE_COMPLETED" | "TASK_STATE_FAILED" | "TASK_STATE_CANCELED"
        ) {
            return task;
        }
        assert!(Instant::now() < deadline, "task {id} still {now}: {task}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn tasks_of_one_process_are_got_listed_followed_cancelled_and_answered_on_another() {
    let cluster = Cluster::postgres();
    let a = cluster.start();
    let b = cluster.start();

    // Made on A, got and listed on B.
    let done = send(
        &a.url,
        r#"call read_file {"path": "README.md"}"#,
        None,
        false,
    );
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    let id = done["id"].as_str().unwrap();
    let got = rpc(&b.url, "GetTask", json!({"id": id}))["result"].clone();
    assert_eq!(state(&got), "TASK_STATE_COMPLETED", "{got}");
    assert_eq!(answer_text(&got), answer_text(&done));
    assert!(answer_text(&got).starts_with("(offline) read_file returned:"));
    assert_eq!(got["history"], done["history"]);
    let listed = rpc(
        &b.url,
        "ListTasks",
        json!({"contextId": done["contextId"], "status": "TASK_STATE_COMPLETED"}),
    );
    assert_eq!(listed["result"]["totalSize"], 1, "{listed}");
    assert_eq!(listed["result"]["tasks"][0]["id"], id);

    // Running on A, followed on B to its end.
    let asked = send(
        &a.url,
        r#"call bash {"command": "sleep 1.5 && echo slept"}"#,
        None,
        false,
    );
    assert_eq!(state(&asked), "TASK_STATE_INPUT_REQUIRED", "{asked}");
    let follow_id = asked["id"].as_str().unwrap();
    let running = send(&a.url, "approve", Some(follow_id), true);
    assert_eq!(state(&running), "TASK_STATE_WORKING", "{running}");
    let items = stream(&b.url, "SubscribeToTask", json!({"id": follow_id}));
    assert!(items[0].get("task").is_some(), "{items:?}");
    let last = items.last().unwrap();
    assert_eq!(
        last["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{items:?}"
    );
    assert!(
        items
            .iter()
            .any(|i| i["artifactUpdate"]["artifact"]["parts"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("slept"))),
        "{items:?}"
    );

    // Running on A, cancelled on B: the command is gone.
    let asked = send(
        &a.url,
        r#"call bash {"command": "sleep 271.9"}"#,
        None,
        false,
    );
    let cancel_id = asked["id"].as_str().unwrap();
    send(&a.url, "yes", Some(cancel_id), true);
    std::thread::sleep(Duration::from_millis(500));
    let cancelled = rpc(&b.url, "CancelTask", json!({"id": cancel_id}));
    assert_eq!(
        state(&cancelled["result"]),
        "TASK_STATE_CANCELED",
        "{cancelled}"
    );
    assert!(
        gone_soon("271.9"),
        "`sleep 271.9` still runs after CancelTask on B"
    );
    let again = rpc(&a.url, "CancelTask", json!({"id": cancel_id}));
    assert_eq!(again["error"]["code"], -32002, "{again}");

    // Paused on A, answered on B.
    let paused = send(&a.url, "What is in this project?", None, false);
    assert_eq!(state(&paused), "TASK_STATE_INPUT_REQUIRED", "{paused}");
    let answered = send(&b.url, "approve", paused["id"].as_str(), false);
    assert_eq!(state(&answered), "TASK_STATE_COMPLETED", "{answered}");
    assert!(
        answer_text(&answered).contains("(offline) This directory has"),
        "{answered}"
    );
    let both = rpc(&a.url, "ListTasks", json!({}));
    assert_eq!(both["result"]["totalSize"], 4, "{both}");
}

#[test]
fn a_task_paused_on_a_killed_process_is_answered_by_the_python_sdk_on_a_fresh_one() {
    let python =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/a2a-peers-venv/bin/python");
    if !installed(&python, "a2a-sdk (the Python venv target/a2a-peers-venv)") {
        return;
    }
    let cluster = Cluster::postgres();
    let mut a = cluster.start();
    let paused = send(&a.url, "What is in this project?", None, false);
    assert_eq!(state(&paused), "TASK_STATE_INPUT_REQUIRED", "{paused}");
    let id = paused["id"].as_str().unwrap();
    a.child.kill().unwrap();
    a.child.wait().unwrap();

    let fresh = cluster.start();
    let output = Command::new(&python)
        .arg("a2a_answer.py")
        .arg(&fresh.url)
        .arg(id)
        .current_dir(peers())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the client failed:\n{stdout}\n{}\nserver log:\n{}",
        String::from_utf8_lossy(&output.stderr),
        fresh.logged("", 0)
    );
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(report["found"], "TASK_STATE_INPUT_REQUIRED", "{report}");
    assert!(
        report["question"].as_str().unwrap().contains("git log"),
        "{report}"
    );
    assert_eq!(report["final"], "TASK_STATE_COMPLETED", "{report}");
    assert!(
        report["answer"]
            .as_str()
            .unwrap()
            .contains("(offline) This directory has"),
        "{report}"
    );
}

#[test]
fn a_task_running_on_a_killed_process_is_taken_over_without_running_its_command_twice() {
    let cluster = Cluster::postgres();
    let mut a = cluster.start();
    let b = cluster.start();
    let asked = send(
        &a.url,
        r#"call bash {"command": "echo ran >> ran.txt && sleep 3"}"#,
        None,
        false,
    );
    assert_eq!(state(&asked), "TASK_STATE_INPUT_REQUIRED", "{asked}");
    let id = asked["id"].as_str().unwrap();
    send(&a.url, "approve", Some(id), true);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cluster.file("ran.txt").exists() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    a.child.kill().unwrap();
    a.child.wait().unwrap();

    let task = ended(&b.url, id);
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task}");
    let said: Vec<String> = task["history"]
        .as_array()
        .unwrap()
        .iter()
        .chain(std::iter::once(&task["status"]["message"]))
        .flat_map(|m| m["parts"].as_array().cloned().unwrap_or_default())
        .filter_map(|p| p["text"].as_str().map(str::to_owned))
        .collect();
    // The model read that the command's outcome is unknown: it was not run again.
    assert!(
        answer_text(&task).contains("outcome unknown"),
        "{task} {said:?}"
    );
    assert_eq!(
        std::fs::read_to_string(cluster.file("ran.txt")).unwrap(),
        "ran\n",
        "the command ran twice"
    );
}

#[test]
fn a_process_on_sqlite_keeps_its_tasks_across_a_restart() {
    let cluster = Cluster::sqlite();
    let mut first = cluster.start();
    let done = send(&first.url, r#"call list_dir {"path": "."}"#, None, false);
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    let paused = send(&first.url, "What is in this project?", None, false);
    assert_eq!(state(&paused), "TASK_STATE_INPUT_REQUIRED", "{paused}");
    first.child.kill().unwrap();
    first.child.wait().unwrap();

    let second = cluster.start();
    let got = rpc(&second.url, "GetTask", json!({"id": done["id"]}))["result"].clone();
    assert_eq!(state(&got), "TASK_STATE_COMPLETED", "{got}");
    assert_eq!(answer_text(&got), answer_text(&done));
    let listed = rpc(&second.url, "ListTasks", json!({"pageSize": 1}));
    assert_eq!(listed["result"]["totalSize"], 2, "{listed}");
    // Newest change first: the paused task.
    assert_eq!(listed["result"]["tasks"][0]["id"], paused["id"], "{listed}");
    let next = rpc(
        &second.url,
        "ListTasks",
        json!({"pageSize": 1, "pageToken": listed["result"]["nextPageToken"]}),
    );
    assert_eq!(next["result"]["tasks"][0]["id"], done["id"], "{next}");
    assert_eq!(next["result"]["nextPageToken"], "", "{next}");
    let answered = send(&second.url, "approve", paused["id"].as_str(), false);
    assert_eq!(state(&answered), "TASK_STATE_COMPLETED", "{answered}");
    assert!(
        answer_text(&answered).contains("(offline) This directory has"),
        "{answered}"
    );
}
