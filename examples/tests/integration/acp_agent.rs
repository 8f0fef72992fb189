//! The acp_agent example driven by real ACP clients from npm (installed by
//! `cargo xtask peers` into tests/acp-peers): acpx, and a scripted client on
//! `@agentclientprotocol/sdk` (tests/acp-peers/client.mjs). Plus raw bad input and a client
//! that disappears.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// tests/acp-peers, checked to be installed.
fn peers() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/acp-peers");
    assert!(
        dir.join("node_modules/acpx").is_dir()
            && dir.join("node_modules/@agentclientprotocol/sdk").is_dir(),
        "{} is not installed: run `cargo xtask peers` (cargo xtask ci does it) to install the ACP test clients",
        dir.display()
    );
    dir
}

/// A command with no provider keys (the agent runs offline) and its own session folder.
fn offline(program: impl AsRef<std::ffi::OsStr>, sessions: &Path) -> Command {
    let mut command = Command::new(program);
    crate::common::without_provider_keys(&mut command);
    command.env("MUX_ACP_SESSIONS", sessions);
    command
}

/// Waits for `child` at most `limit`; kills it and fails when it is still running.
pub(crate) fn wait_for(child: &mut Child, limit: Duration, what: &str) -> std::process::ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("{what} did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs acpx on the example with `policy` (`--approve-all` or `--deny-all`) and returns the
/// JSON transcript (one message per line) and the project directory. acpx exits with
/// `expected_exit` (5 is its "a permission was denied").
fn acpx(policy: &str, prompt: &str, expected_exit: i32) -> (Vec<Value>, tempfile::TempDir) {
    let peers = peers();
    let agent = crate::common::example("acp_agent");
    let project = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let mut command = offline("node", state.path());
    command
        .arg(peers.join("node_modules/acpx/dist/cli.js"))
        .args(["--agent"])
        .arg(&agent)
        .args([policy, "--format", "json", "--timeout", "60", "--cwd"])
        .arg(project.path())
        .args(["exec", prompt])
        // acpx keeps its state under HOME.
        .env("HOME", state.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    let status = wait_for(&mut child, Duration::from_secs(90), "acpx");
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        status.code(),
        Some(expected_exit),
        "acpx exited with {status}\n{stdout}\n{stderr}"
    );
    let transcript = stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    (transcript, project)
}

/// The `session/update`s of a transcript.
fn updates(transcript: &[Value]) -> Vec<&Value> {
    transcript
        .iter()
        .filter(|m| m["method"] == "session/update")
        .map(|m| &m["params"]["update"])
        .collect()
}

/// The result of the `session/prompt` request.
fn prompt_result(transcript: &[Value]) -> &Value {
    let id = &transcript
        .iter()
        .find(|m| m["method"] == "session/prompt")
        .expect("a session/prompt request")["id"];
    &transcript
        .iter()
        .find(|m| &m["id"] == id && m.get("result").is_some())
        .expect("a session/prompt response")["result"]
}

/// The option acpx picked for the permission request.
fn permission_answer(transcript: &[Value]) -> String {
    let request = transcript
        .iter()
        .find(|m| m["method"] == "session/request_permission")
        .expect("a permission request");
    let answer = transcript
        .iter()
        .find(|m| m["id"] == request["id"] && m.get("result").is_some())
        .expect("acpx answered the permission request");
    answer["result"]["outcome"]["optionId"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn acpx_approves_a_write_and_the_transcript_shows_its_diff() {
    let prompt = r#"call write_file {"path": "hello.txt", "content": "hi from acpx\n"}"#;
    let (transcript, project) = acpx("--approve-all", prompt, 0);
    assert_eq!(prompt_result(&transcript)["stopReason"], "end_turn");
    assert_eq!(permission_answer(&transcript), "allow_once");
    let updates = updates(&transcript);
    let call = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .expect("a tool_call");
    assert_eq!(call["kind"], "edit");
    let statuses: Vec<_> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update")
        .filter_map(|u| u["status"].as_str())
        .collect();
    assert_eq!(statuses, ["in_progress", "completed"]);
    // The diff is what write_file presents once it has written.
    let done = updates
        .iter()
        .rfind(|u| u["sessionUpdate"] == "tool_call_update")
        .unwrap();
    assert_eq!(done["content"][0]["type"], "diff");
    assert_eq!(done["content"][0]["newText"], "hi from acpx\n");
    assert!(
        done["content"][0].get("oldText").is_none_or(Value::is_null),
        "a new file"
    );
    assert_eq!(
        std::fs::read_to_string(project.path().join("hello.txt")).unwrap(),
        "hi from acpx\n"
    );
}

#[test]
fn acpx_denies_a_command_and_the_model_is_told() {
    let prompt = r#"call bash {"command": "touch denied.txt"}"#;
    let (transcript, project) = acpx("--deny-all", prompt, 5);
    assert_eq!(prompt_result(&transcript)["stopReason"], "end_turn");
    assert!(permission_answer(&transcript).starts_with("reject"));
    let updates = updates(&transcript);
    let call = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .unwrap();
    assert_eq!(call["kind"], "execute");
    let last = updates
        .iter()
        .rfind(|u| u["sessionUpdate"] == "tool_call_update")
        .unwrap();
    assert_eq!(last["status"], "failed");
    let said: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert!(said.contains("refused"), "{said}");
    assert!(!project.path().join("denied.txt").exists());
}

/// Runs a scenario of tests/acp-peers/client.mjs against the example.
fn client_scenario(scenario: &str) {
    let peers = peers();
    let agent = crate::common::example("acp_agent");
    let sessions = tempfile::tempdir().unwrap();
    let mut child = offline("node", sessions.path())
        .arg(peers.join("client.mjs"))
        .arg(scenario)
        .arg(&agent)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_for(&mut child, Duration::from_secs(90), scenario);
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        status.success() && stdout.contains(&format!("ok {scenario}")),
        "scenario {scenario} failed: {status}\n{stdout}\n{stderr}"
    );
}

#[test]
fn sdk_client_cancels_mid_turn_and_no_process_is_left() {
    client_scenario("cancel");
}

#[test]
fn sdk_client_loads_a_session_replayed_in_order_before_the_answer() {
    client_scenario("load");
}

#[test]
fn sdk_client_sets_plan_mode_and_a_write_is_refused() {
    client_scenario("plan");
}

#[test]
fn sdk_client_passes_mcp_servers_and_their_tool_is_called() {
    client_scenario("mcp");
}

#[test]
fn sdk_client_buffers_are_what_the_file_tools_read_and_write() {
    client_scenario("fs");
}

#[test]
fn sdk_client_reads_the_refusals_of_bad_bytes_broad_roots_and_unknown_sessions_and_goes_on() {
    client_scenario("refusals");
}

/// The example on raw pipes.
pub(crate) struct RawAgent {
    pub(crate) child: Child,
    pub(crate) stdin: Option<std::process::ChildStdin>,
    pub(crate) lines: std::sync::mpsc::Receiver<Value>,
    /// Every byte the agent wrote to stdout so far.
    pub(crate) bytes_out: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl RawAgent {
    pub(crate) fn start(cwd: &Path, sessions: &Path) -> Self {
        Self::start_with(cwd, sessions, &[])
    }

    /// Offline unless `env` sets a provider.
    pub(crate) fn start_with(cwd: &Path, sessions: &Path, env: &[(&str, String)]) -> Self {
        let mut command = offline(crate::common::example("acp_agent"), sessions);
        for (key, value) in env {
            command.env(key, value);
        }
        let mut child = command
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        let bytes_out = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = std::sync::Arc::clone(&bytes_out);
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            let mut line = Vec::new();
            while stdout.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                counted.fetch_add(line.len(), std::sync::atomic::Ordering::SeqCst);
                if let Ok(value) = serde_json::from_slice(&line) {
                    let _ = tx.send(value);
                }
                line.clear();
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
            bytes_out,
        }
    }

    pub(crate) fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes `bytes` as they are (no newline added).
    pub(crate) fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub(crate) fn request(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string(),
        );
        self.reply_to(id)
    }

    pub(crate) fn reply_to(&mut self, id: u64) -> Value {
        self.reply_to_id(&json!(id))
    }

    /// The next `session/update` notification whose update is of `kind`
    /// (`available_commands_update`, …).
    pub(crate) fn update(&mut self, kind: &str) -> Value {
        loop {
            let message = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("a notification");
            if message["method"] == "session/update"
                && message["params"]["update"]["sessionUpdate"] == kind
            {
                return message;
            }
        }
    }

    /// The next response whose id is `id` (`null` for errors about lines with no id).
    pub(crate) fn reply_to_id(&mut self, id: &Value) -> Value {
        loop {
            let message = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .expect("an answer");
            if &message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }
}

fn processes_matching(pattern: &str) -> bool {
    Command::new("pgrep")
        .args(["-f", pattern])
        .output()
        .is_ok_and(|out| out.status.success())
}

#[test]
fn garbage_gets_errors_and_a_vanished_client_ends_the_agent_and_its_children() {
    let project = tempfile::tempdir().unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let mut agent = RawAgent::start(project.path(), sessions.path());
    let init = agent.request(1, "initialize", json!({"protocolVersion": 1}));
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    agent.send("{ this is not json");
    agent.send("\u{0}\u{1}binary\u{7f}");
    let unknown = agent.request(2, "session/unknown", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let wrong = agent.request(3, "session/new", json!({"cwd": 42}));
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");

    let created = agent.request(
        4,
        "session/new",
        json!({"cwd": project.path(), "mcpServers": []}),
    );
    let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
    let mode = agent.request(
        5,
        "session/set_mode",
        json!({"sessionId": session, "modeId": "bypassPermissions"}),
    );
    assert!(mode.get("result").is_some(), "{mode}");
    let marker = "sleep 48.75";
    agent.send(
        &json!({"jsonrpc": "2.0", "id": 6, "method": "session/prompt", "params": {
            "sessionId": session,
            "prompt": [{"type": "text", "text": format!("call bash {{\"command\": \"{marker}\"}}")}]
        }})
        .to_string(),
    );
    let started = Instant::now();
    while !processes_matching(marker) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The client disappears.
    drop(agent.stdin.take());
    let closed = Instant::now();
    let status = wait_for(
        &mut agent.child,
        Duration::from_secs(5),
        "the agent after its client left",
    );
    let took = closed.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "the agent took {took:?} to exit ({status})"
    );
    while processes_matching(marker) {
        assert!(
            closed.elapsed() < Duration::from_secs(2),
            "`{marker}` outlived the agent"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn with_a_key_the_example_uses_the_provider_and_authenticate_says_so() {
    use mux_llm::testing::{ReplayServer, Reply};
    let reply = json!({"type": "text", "text": "Hello from the provider."});
    let server = ReplayServer::start(vec![Reply::sse(crate::common::anthropic_sse(
        &[reply],
        "end_turn",
    ))])
    .await
    .unwrap();
    let project = tempfile::tempdir().unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let env = [
        ("ANTHROPIC_API_KEY", "test-key".to_owned()),
        ("ANTHROPIC_BASE_URL", server.url()),
    ];
    let (project_path, sessions_path) = (project.path().to_owned(), sessions.path().to_owned());
    let said = tokio::task::spawn_blocking(move || {
        let mut agent = RawAgent::start_with(&project_path, &sessions_path, &env);
        agent.request(1, "initialize", json!({"protocolVersion": 1}));
        let auth = agent.request(2, "authenticate", json!({"methodId": "anthropic-api-key"}));
        assert_eq!(auth["result"], json!({}), "{auth}");
        let missing = agent.request(3, "authenticate", json!({"methodId": "openai-api-key"}));
        assert!(missing.get("error").is_some(), "{missing}");
        let created = agent.request(
            4,
            "session/new",
            json!({"cwd": project_path, "mcpServers": []}),
        );
        let session = created["result"]["sessionId"].as_str().unwrap().to_owned();
        agent.send(
            &json!({"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {
                "sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}})
            .to_string(),
        );
        let mut said = String::new();
        loop {
            let message = agent
                .lines
                .recv_timeout(Duration::from_secs(30))
                .expect("an answer");
            if message["id"] == 5 {
                assert_eq!(message["result"]["stopReason"], "end_turn", "{message}");
                break;
            }
            if message["params"]["update"]["sessionUpdate"] == "agent_message_chunk" {
                said.push_str(
                    message["params"]["update"]["content"]["text"]
                        .as_str()
                        .unwrap_or_default(),
                );
            }
        }
        drop(agent.stdin.take());
        wait_for(&mut agent.child, Duration::from_secs(5), "the agent");
        said
    })
    .await
    .unwrap();
    assert_eq!(said, "Hello from the provider.");
    assert_eq!(server.requests().len(), 1);
}
