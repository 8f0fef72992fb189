//! The one_agent example: ONE agent value served on the web face and the editor face by the
//! same process. The same edit, asked through each face, changes the file in that face's root
//! and shows as an `edit_file` call on both; the editor face shows it as kind `edit` with a
//! diff.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

const EDIT: &str =
    r#"call edit_file {"path": "notes.txt", "old_string": "world", "new_string": "mux"}"#;

/// Posts `body` to the web face and returns the events of the run's SSE stream (HTTP/1.0, so
/// the body ends when the run does).
fn post_run(address: &str, body: &Value) -> Vec<Value> {
    let mut tcp = TcpStream::connect(address).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let body = body.to_string();
    write!(
        tcp,
        "POST /agui HTTP/1.0\r\nHost: {address}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    tcp.read_to_string(&mut response).unwrap();
    let (head, stream) = response.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "{head}"
    );
    stream
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| serde_json::from_str(data.trim()).unwrap())
        .collect()
}

#[test]
fn one_agent_serves_the_same_edit_on_the_web_and_in_the_editor() {
    let web_root = tempfile::tempdir().unwrap();
    let editor_root = tempfile::tempdir().unwrap();
    for root in [&web_root, &editor_root] {
        std::fs::write(root.path().join("notes.txt"), "hello world\n").unwrap();
    }
    let mut command = Command::new(crate::common::example("one_agent"));
    crate::common::without_provider_keys(&mut command);
    let mut child = command
        .arg("--root")
        .arg(web_root.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();

    // The web face's address, from stderr.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let address = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();

    // The web face: one run that asks for the edit.
    let events = post_run(
        &address,
        &json!({"threadId": "thread-1", "runId": "run-1",
                "messages": [{"id": "m1", "role": "user", "content": EDIT}]}),
    );
    let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(types.last(), Some(&"RUN_FINISHED"), "{types:?}");
    let start = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_START")
        .unwrap_or_else(|| panic!("no tool call on the web face: {types:?}"));
    assert_eq!(start["toolCallName"], "edit_file");
    let call_id = start["toolCallId"].clone();
    let args: String = events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_ARGS" && e["toolCallId"] == call_id)
        .filter_map(|e| e["delta"].as_str())
        .collect();
    let args: Value = serde_json::from_str(&args).unwrap();
    assert_eq!(args["old_string"], "world");
    assert_eq!(args["new_string"], "mux");
    // The kind and the diff, from the tool's annotations and output alone.
    let custom = |name: &str| {
        events
            .iter()
            .find(|e| {
                e["type"] == "CUSTOM" && e["name"] == name && e["value"]["toolCallId"] == call_id
            })
            .map(|e| e["value"].clone())
            .unwrap_or_else(|| panic!("no {name} on the web face: {events:?}"))
    };
    assert_eq!(custom("mux.tool_kind")["kind"], "edit");
    let web_diff = &custom("mux.tool_presentation")["diffs"][0];
    assert!(
        web_diff["oldText"]
            .as_str()
            .is_some_and(|t| t.contains("world")),
        "{web_diff}"
    );
    assert!(
        web_diff["newText"]
            .as_str()
            .is_some_and(|t| t.contains("mux")),
        "{web_diff}"
    );
    let result = events
        .iter()
        .find(|e| e["type"] == "TOOL_CALL_RESULT" && e["toolCallId"] == call_id)
        .unwrap_or_else(|| panic!("no result on the web face: {types:?}"));
    assert!(
        !result["content"].as_str().unwrap_or_default().is_empty(),
        "{result}"
    );
    assert_eq!(
        std::fs::read_to_string(web_root.path().join("notes.txt")).unwrap(),
        "hello mux\n"
    );

    // The editor face: the same agent in the same process, over stdio.
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if let Ok(message) = serde_json::from_str(&line) {
                let _ = tx.send(message);
            }
        }
    });
    let mut updates = Vec::new();
    let mut request = |id: u64, method: &str, params: Value| -> Value {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{message}").unwrap();
        loop {
            let message = rx
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no answer to {method}"));
            if message["id"] == id && message.get("method").is_none() {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
            if message["method"] == "session/update" {
                updates.push(message["params"]["update"].clone());
            }
        }
    };
    request(
        1,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    );
    let session = request(
        2,
        "session/new",
        json!({"cwd": editor_root.path(), "mcpServers": []}),
    );
    let session_id = session["sessionId"].clone();
    let done = request(
        3,
        "session/prompt",
        json!({"sessionId": session_id, "prompt": [{"type": "text", "text": EDIT}]}),
    );
    assert_eq!(done["stopReason"], "end_turn");
    let call = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .unwrap_or_else(|| panic!("no tool call in the editor: {updates:?}"));
    assert_eq!(call["kind"], "edit", "{call}");
    // The diff comes with the call's result (from the output's presentation).
    let diff = updates
        .iter()
        .filter(|u| u["toolCallId"] == call["toolCallId"])
        .filter_map(|u| u["content"].as_array())
        .flatten()
        .find(|c| c["type"] == "diff")
        .unwrap_or_else(|| panic!("no diff for {call} in {updates:?}"));
    assert_eq!(
        diff["path"],
        std::fs::canonicalize(editor_root.path())
            .unwrap()
            .join("notes.txt")
            .display()
            .to_string()
    );
    // The replaced text (today the edit's strings; a whole-file diff holds them too).
    let (old, new) = (diff["oldText"].as_str(), diff["newText"].as_str());
    assert!(old.is_some_and(|t| t.contains("world")), "{diff}");
    assert!(
        new.is_some_and(|t| t.contains("mux") && !t.contains("world")),
        "{diff}"
    );
    let id = call["toolCallId"].clone();
    assert!(
        updates
            .iter()
            .any(|u| u["toolCallId"] == id && u["status"] == "completed"),
        "{updates:?}"
    );
    assert_eq!(
        std::fs::read_to_string(editor_root.path().join("notes.txt")).unwrap(),
        "hello mux\n"
    );

    drop(stdin);
    let status = crate::acp_agent::wait_for(&mut child, Duration::from_secs(20), "one_agent");
    assert!(status.success(), "{status}");
}
