//! `mcp_tools_server` as a real process, called by mux's own MCP client over stdio and
//! Streamable HTTP, at 2025-11-25 (`initialize`; approvals by elicitation) and 2026-07-28
//! (stateless; approvals by `input_required`): a read allowed, a write outside the root
//! refused by the sandbox, a denied command refused, a command that asks answered through the
//! client's elicitation handler, and a cancelled `sleep` that dies. Plus hostile HTTP.

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use mux::mcp::{Lifecycle, ServerSpec};
use mux::tool::{Tool, ToolContext};
use serde_json::json;

use crate::common::example;
use crate::mcp_client::{Approver, Killed, a_cancelled_call_kills_its_sleep, connect, serve_http};

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    settings: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(root.join("hello.txt"), "hello from the root\n").unwrap();
    let settings = dir.path().join("settings.json");
    let text = json!({"permissions": {
        "allow": ["Read", "Write", "Bash(echo:*)", "Bash(sleep:*)"],
        "deny": ["Bash(rm:*)"],
    }});
    std::fs::write(&settings, text.to_string()).unwrap();
    Fixture {
        root: root.canonicalize().unwrap(),
        outside: outside.canonicalize().unwrap(),
        settings,
        _dir: dir,
    }
}

fn find(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.spec().name.as_str() == name)
        .cloned()
        .unwrap_or_else(|| panic!("no {name}"))
}

async fn scenario(spec: ServerSpec, lifecycle: Lifecycle, fx: &Fixture, sleep_arg: &str) {
    let approver = Approver::new(true);
    let coordinator = connect(spec, lifecycle, Arc::clone(&approver)).await;
    let tools = coordinator.tools();
    let call = |name: &str, input: serde_json::Value| {
        let tool = find(&tools, &format!("mcp__tools__{name}"));
        async move { tool.call(input, ToolContext::new("t")).await.unwrap() }
    };

    // A read inside the root, allowed by `Read`.
    let out = call("read_file", json!({"path": "hello.txt"})).await;
    assert!(!out.is_error, "{out:?}");
    assert!(out.to_text().contains("hello from the root"), "{out:?}");

    // A write outside the root: allowed by `Write`, refused by the path sandbox.
    let target = fx.outside.join("escaped.txt");
    let out = call(
        "write_file",
        json!({"path": target.to_str().unwrap(), "content": "x"}),
    )
    .await;
    assert!(out.is_error, "{out:?}");
    assert!(!target.exists(), "nothing was written outside the root");

    // A denied command: refused with the rule, never run.
    std::fs::write(fx.root.join("victim.txt"), "keep").unwrap();
    let out = call("bash", json!({"command": "rm -f victim.txt"})).await;
    assert!(out.is_error, "{out:?}");
    assert!(out.to_text().contains("rm"), "{out:?}");
    assert!(fx.root.join("victim.txt").exists());
    assert!(approver.asked().is_empty(), "deny does not ask");

    // A command no rule covers asks the client; the approver says yes, and it runs.
    let made = format!("made-{}.txt", sleep_arg.replace('.', "-"));
    let out = call("bash", json!({"command": format!("touch {made}")})).await;
    assert!(!out.is_error, "{out:?}");
    assert!(fx.root.join(&made).exists(), "the approved command ran");
    let asked = approver.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains("touch"), "{asked:?}");

    // Cancel mid-call: the inner `sleep` dies.
    let bash = find(&tools, "mcp__tools__bash");
    let command = json!({"command": format!("sleep {sleep_arg}")});
    a_cancelled_call_kills_its_sleep(bash, command, sleep_arg, Duration::from_secs(20)).await;
    coordinator.stop_all().await;
}

/// The command line that serves the fixture's root and settings over stdio.
fn stdio_command(fx: &Fixture) -> [String; 5] {
    let exe = example("mcp_tools_server");
    [
        exe.to_str().unwrap().to_owned(),
        "--root".into(),
        fx.root.to_str().unwrap().to_owned(),
        "--settings".into(),
        fx.settings.to_str().unwrap().to_owned(),
    ]
}

fn stdio_spec(fx: &Fixture) -> ServerSpec {
    let [exe, args @ ..] = stdio_command(fx);
    ServerSpec::stdio("tools", exe, args)
}

/// Starts the HTTP server and returns it with its URL (its first stdout line).
fn http_server(fx: &Fixture, token: Option<&str>) -> (Killed, String) {
    let mut command = Command::new(example("mcp_tools_server"));
    command
        .args(["--root", fx.root.to_str().unwrap()])
        .args(["--settings", fx.settings.to_str().unwrap()])
        .args(["--http", "0"])
        .env_remove("MUX_MCP_TOKEN");
    if let Some(token) = token {
        command.env("MUX_MCP_TOKEN", token);
    }
    serve_http(command)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mux_client_over_stdio_at_2025_11_25() {
    let fx = fixture();
    scenario(stdio_spec(&fx), Lifecycle::Initialize, &fx, "31.4101").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mux_client_over_stdio_at_2026_07_28() {
    let fx = fixture();
    scenario(stdio_spec(&fx), Lifecycle::Stateless, &fx, "31.4102").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mux_client_over_http_at_2025_11_25() {
    let fx = fixture();
    let (_child, url) = http_server(&fx, Some("s3cret"));
    let spec = ServerSpec::http("tools", url).with_bearer_token("s3cret");
    scenario(spec, Lifecycle::Initialize, &fx, "31.4103").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mux_client_over_http_at_2026_07_28() {
    let fx = fixture();
    let (_child, url) = http_server(&fx, None);
    scenario(
        ServerSpec::http("tools", url),
        Lifecycle::Stateless,
        &fx,
        "31.4104",
    )
    .await;
}

/// One raw HTTP/1.1 exchange; returns the status code.
fn exchange(addr: &str, head: &str, body: &[u8]) -> u16 {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    // A server may answer (413) and close before taking the whole body.
    let _ = stream.write_all(body);
    let mut response = Vec::new();
    let mut buf = [0u8; 4096];
    while !response.windows(2).any(|w| w == b"\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => response.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&response);
    text.split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"))
}

fn post(addr: &str, host: &str, extra: &str, body: &[u8]) -> u16 {
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    exchange(addr, &head, body)
}

#[test]
fn hostile_http_gets_4xx_and_the_server_stays_up() {
    let fx = fixture();
    let (_child, url) = http_server(&fx, Some("s3cret"));
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let auth = "Authorization: Bearer s3cret\r\n";
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();

    assert_eq!(post(&addr, &addr, "", init.as_bytes()), 401, "no token");
    assert_eq!(
        post(
            &addr,
            &addr,
            "Authorization: Bearer wrong\r\n",
            init.as_bytes()
        ),
        401,
        "wrong token"
    );
    assert_eq!(
        post(&addr, "evil.example:80", auth, init.as_bytes()),
        403,
        "foreign Host (DNS rebinding)"
    );
    assert_eq!(
        post(
            &addr,
            &addr,
            &format!("{auth}Origin: http://evil.example\r\n"),
            init.as_bytes()
        ),
        403,
        "foreign Origin"
    );
    // A declared 50 MB body is refused before it is read.
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\n\
         Content-Length: 50000000\r\nConnection: close\r\n\r\n"
    );
    assert_eq!(
        exchange(&addr, &head, b"{\"jsonrpc\":"),
        413,
        "huge declared body"
    );
    // A chunked body that grows past the limit is cut off.
    let chunk = vec![b' '; 1 << 20];
    let mut body = Vec::new();
    for _ in 0..6 {
        body.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        body.extend_from_slice(&chunk);
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(b"0\r\n\r\n");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\
         Connection: close\r\n\r\n"
    );
    assert_eq!(exchange(&addr, &head, &body), 413, "huge chunked body");
    for garbage in [
        &b"{not json"[..],
        b"\xff\xfe\x00",
        b"[]",
        b"{\"jsonrpc\":\"2.0\"}",
    ] {
        let status = post(&addr, &addr, auth, garbage);
        assert!(
            (400..500).contains(&status),
            "garbage {garbage:?} got {status}"
        );
    }
    // Still up: a proper initialize succeeds.
    assert_eq!(post(&addr, &addr, auth, init.as_bytes()), 200);
}

/// tests/inspector-peers, checked to be installed: the Node 22 binary and the Inspector CLI.
fn inspector() -> (PathBuf, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/inspector-peers");
    let node = dir.join("node_modules/node/bin/node");
    let cli =
        dir.join("node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    assert!(
        node.is_file() && cli.is_file(),
        "{} is not installed: run `cargo xtask peers` (cargo xtask ci does it) to install the MCP Inspector",
        dir.display()
    );
    (node, cli)
}

/// Runs `inspector --cli ARGS -- TARGET...` and returns its stdout as JSON.
fn inspect(home: &std::path::Path, args: &[&str], target: &[&str]) -> serde_json::Value {
    let (node, cli) = inspector();
    let output = Command::new(node)
        .arg(cli)
        .arg("--cli")
        .args(args)
        .arg("--")
        .args(target)
        .env("HOME", home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    // The result comes first; after an `isError` result the CLI adds an error line.
    let first = serde_json::Deserializer::from_str(&stdout)
        .into_iter::<serde_json::Value>()
        .next();
    match first {
        Some(Ok(value)) => value,
        _ => panic!(
            "the Inspector printed no JSON: {stdout}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        ),
    }
}

#[test]
fn the_inspector_cli_lists_and_calls_a_tool_over_stdio() {
    let fx = fixture();
    let home = tempfile::tempdir().unwrap();
    let target = stdio_command(&fx);
    let target: Vec<&str> = target.iter().map(String::as_str).collect();
    let listed = inspect(home.path(), &["--method", "tools/list"], &target);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    for name in ["bash", "read_file", "write_file", "grep"] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let read = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "read_file")
        .unwrap();
    assert_eq!(read["annotations"]["readOnlyHint"], true, "{read}");

    let called = inspect(
        home.path(),
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "read_file",
            "--tool-arg",
            "path=hello.txt",
        ],
        &target,
    );
    assert_ne!(called["isError"], true, "{called}");
    assert!(
        called["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("hello from the root")),
        "{called}"
    );
}

#[test]
fn the_inspector_cli_without_elicitation_gets_a_refusal_not_a_run() {
    let fx = fixture();
    let home = tempfile::tempdir().unwrap();
    let target = stdio_command(&fx);
    let target: Vec<&str> = target.iter().map(String::as_str).collect();
    // `touch` is neither allowed nor denied: it asks, and this client cannot be asked.
    let called = inspect(
        home.path(),
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "bash",
            "--tool-arg",
            "command=touch asked.txt",
        ],
        &target,
    );
    assert_eq!(called["isError"], true, "{called}");
    let text = called["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("neither elicitation nor input_required"),
        "{called}"
    );
    assert!(
        !fx.root.join("asked.txt").exists(),
        "the command ran unasked"
    );
}
