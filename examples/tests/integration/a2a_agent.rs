//! The a2a_agent example (mux's quickstart agent, offline, over A2A 1.0) called by the
//! official SDKs as clients: `a2a-sdk` (Python) and `@a2a-js/sdk` (JavaScript), each running
//! tests/a2a-peers' scenario script: card discovery, send, stream, get, list, an
//! `input-required` approval answered by the client, cancel (the running `sleep` is gone), and
//! subscribe after a dropped stream. Then garbage and wrong versions over raw HTTP get JSON-RPC
//! errors and the server keeps serving.
//!
//! The peers come from `cargo xtask peers`. Without them the SDK tests say so and pass, except
//! under CI (`CI` set), where they fail.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common;

pub(crate) fn peers() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/a2a-peers")
}

/// Whether `needed` exists; when it does not, fails under CI and otherwise says why the test
/// does nothing.
pub(crate) fn installed(needed: &Path, what: &str) -> bool {
    if needed.exists() {
        return true;
    }
    let message = format!(
        "{what} is not installed ({} is missing): run `cargo xtask peers`",
        needed.display()
    );
    assert!(std::env::var_os("CI").is_none(), "{message}");
    eprintln!("SKIPPED: {message}");
    false
}

fn start() -> common::Example {
    common::Example::start_with(Command::new(common::example("a2a_agent")), &[])
}

/// Runs a scenario script and reads its JSON report.
fn run_script(mut command: Command, server: &common::Example) -> Value {
    let output = command
        .arg(&server.url)
        .current_dir(peers())
        .output()
        .expect("the client did not start");
    assert!(
        output.status.success(),
        "the client failed:\n{}\n{}\nserver log:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
        server.logged("", 0)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("not a report ({e}): {stdout}"))
}

/// Whether a process whose command line has `needle` as an argument is running.
fn running(needle: &str) -> bool {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .any(|cmdline| {
            cmdline
                .split(|&b| b == 0)
                .any(|arg| arg == needle.as_bytes())
        })
}

pub(crate) fn gone_soon(needle: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while running(needle) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    true
}

/// What both SDKs' reports must show (their field names differ only in case).
fn check_report(report: &Value, task_id: &str, sleep_arg: &str) {
    let card = &report["card"];
    assert_eq!(card["name"], "mux quickstart agent", "{report}");
    assert_eq!(card["binding"], "JSONRPC");
    assert_eq!(card["streaming"], true);
    assert_eq!(card["push"], false);
    assert!(
        card["skills"][0]
            .as_str()
            .unwrap()
            .contains("coding assistant")
    );

    let send = &report["send"];
    assert!(
        send["answer"]
            .as_str()
            .unwrap()
            .starts_with("(offline) read_file returned:"),
        "{send}"
    );
    let stream = &report["stream"];
    let kinds: Vec<&str> = stream["kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k.as_str().unwrap())
        .collect();
    assert_eq!(kinds[0], "task", "{stream}");
    assert!(kinds.iter().any(|k| k.contains("rtifact")), "{stream}");
    assert_eq!(
        stream["states"].as_array().unwrap().last().unwrap(),
        "TASK_STATE_COMPLETED"
    );
    assert!(
        stream["answer"]
            .as_str()
            .unwrap()
            .contains("list_dir returned")
    );

    assert_eq!(report["get"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(report["get"]["history"], 1);
    assert_eq!(report["list"]["total"], 2, "{report}");
    assert!(
        report["list"]["ids"]
            .as_array()
            .unwrap()
            .contains(&json!(task_id))
    );

    let approval = &report["approval"];
    assert_eq!(
        approval["paused"], "TASK_STATE_INPUT_REQUIRED",
        "{approval}"
    );
    assert!(
        approval["question"].as_str().unwrap().contains("git log"),
        "{approval}"
    );
    assert_eq!(approval["answered"], "TASK_STATE_COMPLETED", "{approval}");
    assert!(
        approval["answer"]
            .as_str()
            .unwrap()
            .contains("(offline) This directory has"),
        "{approval}"
    );

    let cancel = &report["cancel"];
    assert_eq!(cancel["asked"], "TASK_STATE_INPUT_REQUIRED", "{cancel}");
    assert_eq!(cancel["running"], "TASK_STATE_WORKING", "{cancel}");
    assert_eq!(cancel["cancelled"], "TASK_STATE_CANCELED", "{cancel}");
    assert!(
        gone_soon(sleep_arg),
        "`sleep {sleep_arg}` still runs after CancelTask"
    );

    let subscribe = &report["subscribe"];
    assert_eq!(
        subscribe["asked"], "TASK_STATE_INPUT_REQUIRED",
        "{subscribe}"
    );
    assert_eq!(subscribe["dropped"], json!(["task"]), "{subscribe}");
    let resumed = &subscribe["resumed"];
    assert_eq!(resumed["kinds"][0], "task", "{subscribe}");
    assert_eq!(
        resumed["states"].as_array().unwrap().last().unwrap(),
        "TASK_STATE_COMPLETED",
        "{subscribe}"
    );
    assert!(
        resumed["answer"]
            .as_str()
            .unwrap()
            .contains("bash returned"),
        "{subscribe}"
    );
}

#[test]
fn the_python_sdk_discovers_sends_streams_approves_cancels_and_resubscribes() {
    let python =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/a2a-peers-venv/bin/python");
    if !installed(&python, "a2a-sdk (the Python venv target/a2a-peers-venv)") {
        return;
    }
    let server = start();
    let mut command = Command::new(&python);
    command.arg("a2a_client.py");
    let report = run_script(command, &server);
    let task_id = report["send"]["task_id"].as_str().unwrap().to_owned();
    check_report(&report, &task_id, "271.5");
}

#[test]
fn the_js_sdk_discovers_sends_streams_approves_cancels_and_resubscribes() {
    if !installed(
        &peers().join("node_modules/@a2a-js/sdk/package.json"),
        "@a2a-js/sdk (tests/a2a-peers)",
    ) {
        return;
    }
    let server = start();
    let mut command = Command::new("node");
    command.arg("a2a_client.mjs");
    let mut report = run_script(command, &server);
    // The JS report names fields in camelCase.
    for key in ["send", "stream"] {
        if let Some(id) = report[key].get("taskId").cloned() {
            report[key]["task_id"] = id;
        }
    }
    report["subscribe"]["resumed"]["task_id"] = report["subscribe"]["resumed"]["taskId"].clone();
    let task_id = report["send"]["taskId"].as_str().unwrap().to_owned();
    let missing = report["missing"].as_str().unwrap();
    assert!(missing.contains("no task"), "{missing}");
    check_report(&report, &task_id, "271.7");
}

/// A raw HTTP/1.1 POST to /a2a; the status and the JSON body.
fn raw_post(url: &str, headers: &str, body: &str) -> (u16, Value) {
    use std::io::{Read as _, Write as _};
    let host = url.trim_start_matches("http://");
    let mut tcp = std::net::TcpStream::connect(host).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let request = format!(
        "POST /a2a HTTP/1.1\r\nHost: {host}\r\n{headers}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    tcp.read_to_string(&mut answer).unwrap();
    let status = answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let json = answer
        .split_once("\r\n\r\n")
        .and_then(|(_, body)| serde_json::from_str(body).ok())
        .unwrap_or(Value::Null);
    (status, json)
}

#[test]
fn garbage_and_wrong_versions_get_json_rpc_errors_and_the_server_stays_up() {
    let server = start();
    let json = "Content-Type: application/json\r\n";
    let v1 = "Content-Type: application/json\r\nA2A-Version: 1.0\r\n";
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}"#;
    let cases: [(&str, &str, i64); 10] = [
        (v1, "{\"jsonrpc\":", -32700),
        (v1, "\u{0}\u{1}binary", -32700),
        (v1, "[1,2,3]", -32600),
        (
            v1,
            r#"{"jsonrpc":"2.0","id":[1],"method":"ListTasks"}"#,
            -32600,
        ),
        (
            v1,
            r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{}}"#,
            -32601,
        ),
        (
            v1,
            r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"role":"ROLE_USER"}}}"#,
            -32602,
        ),
        (
            v1,
            r#"{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{"pageSize":100000}}"#,
            -32602,
        ),
        (
            v1,
            r#"{"jsonrpc":"2.0","id":1,"method":"CancelTask","params":{"id":"nope"}}"#,
            -32001,
        ),
        (json, list, -32009),
        (
            "Content-Type: application/json\r\nA2A-Version: 2.0\r\n",
            list,
            -32009,
        ),
    ];
    for (headers, body, code) in cases {
        let (status, answer) = raw_post(&server.url, headers, body);
        assert_eq!(status, 200, "{body}");
        assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
    }
    let (status, _) = raw_post(
        &server.url,
        "Content-Type: text/plain\r\nA2A-Version: 1.0\r\n",
        list,
    );
    assert_eq!(status, 415);
    let (status, answer) = raw_post(&server.url, v1, list);
    assert_eq!(status, 200);
    assert_eq!(answer["result"]["totalSize"], 0, "{answer}");
}
