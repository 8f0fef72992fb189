//! The `mcp_inspect` example against real MCP servers over stdio: server-everything and
//! server-filesystem, installed into `tests/peers` by `cargo xtask peers`.

use mux_examples::mcp_inspect::run;
use serde_json::{Value, json};

fn peer(package: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/peers/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        path.exists(),
        "{} is missing: run `cargo xtask peers` to install the MCP test servers",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// `--name ev --stdio node <server-everything> stdio` after `before`.
async fn run_everything(before: &[&str]) -> (Value, i32) {
    let everything = peer("server-everything");
    let mut line = args(before);
    line.extend(args(&[
        "--name",
        "ev",
        "--stdio",
        "node",
        &everything,
        "stdio",
    ]));
    run(&line).await
}

fn server<'a>(listing: &'a Value, name: &str) -> &'a Value {
    listing["servers"]
        .as_array()
        .unwrap_or_else(|| panic!("no servers in {listing}"))
        .iter()
        .find(|server| server["name"] == name)
        .unwrap_or_else(|| panic!("no server {name} in {listing}"))
}

fn tool<'a>(server: &'a Value, name: &str) -> &'a Value {
    server["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("no tools in {server}"))
        .iter()
        .find(|tool| tool["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name} in {server}"))
}

/// The only key of an error object, as a string.
fn error_text(value: &Value) -> &str {
    let object = value.as_object().unwrap_or_else(|| panic!("{value}"));
    assert_eq!(object.len(), 1, "{value}");
    object["error"]
        .as_str()
        .unwrap_or_else(|| panic!("no error in {value}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_a_stdio_server_with_its_qualified_tools() {
    let (value, code) = run_everything(&[]).await;
    assert_eq!(code, 0, "{value}");
    let servers = value["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{value}");
    let ev = server(&value, "ev");
    assert_eq!(ev["state"], "connected", "{ev}");
    assert!(ev["protocol_version"].is_string(), "{ev}");
    let echo = tool(ev, "mcp__ev__echo");
    assert!(!echo["description"].as_str().unwrap().is_empty(), "{echo}");
    assert_eq!(echo["input_schema"]["type"], "object", "{echo}");
    assert_eq!(
        echo["input_schema"]["properties"]["message"]["type"], "string",
        "{echo}"
    );
    // Every tool is qualified with the server's name.
    for tool in ev["tools"].as_array().unwrap() {
        assert!(
            tool["name"].as_str().unwrap().starts_with("mcp__ev__"),
            "{tool}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_prints_the_tool_output() {
    let (value, code) =
        run_everything(&["--call", "mcp__ev__echo", "--args", r#"{"message":"hi"}"#]).await;
    assert_eq!(code, 0, "{value}");
    assert_eq!(
        value["content"],
        json!([{"type": "text", "text": "Echo: hi"}])
    );
    assert_eq!(value["is_error"], false);
    assert_eq!(value["metadata"]["mcp"]["server"], "ev", "{value}");
    assert_eq!(value["metadata"]["mcp"]["tool"], "echo", "{value}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_file_lists_every_server_failed_ones_with_their_error() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {
            "ev": {"command": "node", "args": [peer("server-everything"), "stdio"]},
            "fs": {"command": "node", "args": [peer("server-filesystem"), root]},
            "broken": {"command": "/nonexistent/mux-no-such-server"},
        }})
        .to_string(),
    )
    .unwrap();
    let (value, code) = run(&args(&["--config", config.to_str().unwrap()])).await;
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["servers"].as_array().unwrap().len(), 3, "{value}");
    let ev = server(&value, "ev");
    assert_eq!(ev["state"], "connected", "{ev}");
    tool(ev, "mcp__ev__echo");
    let fs = server(&value, "fs");
    assert_eq!(fs["state"], "connected", "{fs}");
    let read = tool(fs, "mcp__fs__read_text_file");
    assert!(
        read["input_schema"]["properties"]["path"].is_object(),
        "{read}"
    );
    let broken = server(&value, "broken");
    assert_eq!(broken["state"], "failed", "{broken}");
    assert!(
        broken["error"]
            .as_str()
            .unwrap()
            .contains("mux-no-such-server"),
        "{broken}"
    );
    assert_eq!(broken["tools"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_is_error_output_is_printed_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("inside.txt"), "inside the root").unwrap();
    let filesystem = peer("server-filesystem");
    let call = |path: String| {
        let root = root.to_string_lossy().into_owned();
        let filesystem = filesystem.clone();
        async move {
            let args_json = json!({"path": path}).to_string();
            run(&args(&[
                "--call",
                "mcp__fs__read_text_file",
                "--args",
                &args_json,
                "--name",
                "fs",
                "--stdio",
                "node",
                &filesystem,
                &root,
            ]))
            .await
        }
    };
    let inside = root.join("inside.txt").to_string_lossy().into_owned();
    let (value, code) = call(inside).await;
    assert_eq!(code, 0, "{value}");
    assert_eq!(value["content"][0]["text"], "inside the root", "{value}");

    // Outside the root the server answers isError: the output is printed, the exit code is 1.
    let (value, code) = call("/etc/hostname".to_string()).await;
    assert_eq!(code, 1, "{value}");
    assert_eq!(value["is_error"], true, "{value}");
    assert!(value.get("error").is_none(), "{value}");
    let text = value["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("outside allowed directories"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_call_is_printed_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {
            "ev": {"command": "node", "args": [peer("server-everything"), "stdio"], "toolTimeoutMs": 300},
        }})
        .to_string(),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let (value, code) = run(&args(&[
        "--config",
        config.to_str().unwrap(),
        "--call",
        "mcp__ev__trigger-long-running-operation",
        "--args",
        r#"{"duration":30,"steps":30}"#,
    ]))
    .await;
    assert_eq!(code, 1, "{value}");
    assert_eq!(value["is_error"], true, "{value}");
    assert_eq!(value["metadata"]["mcp"]["timed_out"], true, "{value}");
    assert!(
        value["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("did not finish within 0.3 s"),
        "{value}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_command_is_an_error_object() {
    let (value, code) = run(&args(&[
        "--name",
        "bad",
        "--stdio",
        "/nonexistent/mux-no-such-server",
    ]))
    .await;
    assert_eq!(code, 1, "{value}");
    assert!(error_text(&value).contains("mux-no-such-server"), "{value}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_json_arguments_are_an_error_object() {
    let (value, code) =
        run_everything(&["--call", "mcp__ev__echo", "--args", r#"{"message":"#]).await;
    assert_eq!(code, 1, "{value}");
    assert!(
        error_text(&value).contains("--args is not valid JSON"),
        "{value}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_tool_is_an_error_object() {
    let (value, code) = run_everything(&["--call", "mcp__ev__no_such_tool"]).await;
    assert_eq!(code, 1, "{value}");
    assert_eq!(
        error_text(&value),
        "no tool named `mcp__ev__no_such_tool`",
        "{value}"
    );
}
