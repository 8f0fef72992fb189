//! What a stdio server gets from the agent: the official SDKs' default environment plus what
//! its config names, never the agent's keys; and, behind the wall (`sandbox`), no write
//! outside its root and no Internet socket. A real Python SDK server, written by the test into
//! a temp dir and run by the venv's python, reports what it sees through its tools.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;

use mux_mcp::ServerSpec;
use mux_tool::{Content, ToolContext};
use serde_json::json;

/// The server: tools that report its environment, read, write and connect.
const SERVER: &str = r#"
import json, os, socket

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("mux-test-walled")


def refused(err):
    raise ToolError(f"{type(err).__name__}: {err}")


@server.tool()
def environment() -> str:
    """The server's environment, as a JSON object."""
    return json.dumps(dict(os.environ))


@server.tool()
def read(path: str) -> str:
    """The text of the file at `path`."""
    try:
        with open(path) as file:
            return file.read()
    except OSError as err:
        refused(err)


@server.tool()
def write(path: str, text: str) -> str:
    """Writes `text` to the file at `path`."""
    try:
        with open(path, "w") as file:
            file.write(text)
        return "written"
    except OSError as err:
        refused(err)


@server.tool()
def connect(port: int) -> str:
    """Opens a TCP connection to 127.0.0.1:`port`."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            return "connected"
    except OSError as err:
        refused(err)


if __name__ == "__main__":
    server.run()
"#;

/// Set in the environment of a helper run of this test binary.
const HELPER: &str = "MUX_MCP_STDIO_WALLS_HELPER";

/// The agent's secrets, planted in a helper's environment: none may reach a server.
const CANARIES: [(&str, &str); 3] = [
    ("ANTHROPIC_API_KEY", "sk-ant-canary"),
    ("OPENAI_API_KEY", "sk-openai-canary"),
    ("SECRET_X", "canary-x"),
];

/// Writes the server script into `dir`; the spec that runs it as `name`.
fn server(name: &str, dir: &Path) -> ServerSpec {
    let script = dir.join("walled_server.py");
    std::fs::write(&script, SERVER).unwrap();
    ServerSpec::stdio(
        name,
        common::venv_bin("python"),
        [script.to_string_lossy().into_owned()],
    )
}

/// Calls `tool` of server `server` on `coordinator` with `arguments`: its text and whether it
/// is an error.
async fn call(
    coordinator: &mux_mcp::Coordinator,
    server: &str,
    tool: &str,
    arguments: serde_json::Value,
) -> (String, bool) {
    let tool = common::find(&coordinator.tools(), &format!("mcp__{server}__{tool}"));
    let out = tool.call(arguments, ToolContext::new(tool_id())).await.unwrap();
    // The first text item: a tool's text, without the structured copy of its result.
    let text = out
        .content
        .iter()
        .find_map(|item| match item {
            Content::Text { text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_else(|| out.to_text());
    (text, out.is_error)
}

fn tool_id() -> String {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!("c{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The environment `spec`'s server reports.
async fn reported_environment(spec: ServerSpec) -> BTreeMap<String, String> {
    let name = spec.name.clone();
    let coordinator = common::running(spec).await;
    let (text, is_error) = call(&coordinator, &name, "environment", json!({})).await;
    coordinator.stop_all().await;
    assert!(!is_error, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// Runs the test `name` of this binary as a helper process, with the canaries and `envs` in
/// its environment; fails unless it passed and printed `done`.
fn helper(name: &str, envs: &[(&str, &str)]) {
    let exe = std::env::current_exe().unwrap();
    let mut command = std::process::Command::new(exe);
    command
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(HELPER, name)
        .envs(CANARIES)
        .envs(envs.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "helper {name} failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains(&format!("{name}: done")),
        "helper {name} did not run:\n{stdout}\n{stderr}"
    );
}

fn is_helper(name: &str) -> bool {
    std::env::var(HELPER).is_ok_and(|helper| helper == name)
}

/// The SDKs' default set on Unix (`getDefaultEnvironment`, `get_default_environment`).
const DEFAULTS: [&str; 6] = ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];

/// Checks `env`, the environment a server reported inside a helper run: the canaries are
/// absent, `MUX_CONFIGURED` (named by the config) is there, the defaults the helper has are
/// there with the helper's values, `TERM` (a shell function in the helper) is not, and
/// nothing else is there but what Python and the wall add themselves.
fn check_environment(env: &BTreeMap<String, String>, walled: bool) {
    for (name, value) in CANARIES {
        assert!(!env.contains_key(name), "{name} reached the server: {env:?}");
        assert!(
            !env.values().any(|v| v.contains(value)),
            "the value of {name} reached the server: {env:?}"
        );
    }
    assert_eq!(env.get("MUX_CONFIGURED").map(String::as_str), Some("from the config"));
    assert_eq!(
        env.get("OPENAI_API_KEY_FOR_SERVER").map(String::as_str),
        Some("named-by-config")
    );
    for name in ["HOME", "PATH", "USER"] {
        assert_eq!(
            env.get(name),
            std::env::var(name).ok().as_ref(),
            "{name}: {env:?}"
        );
    }
    assert!(!env.contains_key("TERM"), "a function-like TERM passed: {env:?}");
    let added_by_the_wall = |name: &str| {
        walled && (["TMPDIR", "TMP", "TEMP"].contains(&name) || name.starts_with("GIT_"))
    };
    for name in env.keys() {
        assert!(
            DEFAULTS.contains(&name.as_str())
                || ["MUX_CONFIGURED", "OPENAI_API_KEY_FOR_SERVER"].contains(&name.as_str())
                // Python's C locale coercion (PEP 538) sets it in its own environment.
                || name == "LC_CTYPE"
                || added_by_the_wall(name),
            "{name} reached the server: {env:?}"
        );
    }
}

/// The helper's environment for [`check_environment`]: `TERM` looks like a shell function
/// (the SDKs drop such values), `USER` and `HOME` are set.
const HELPER_ENV: [(&str, &str); 3] = [
    ("TERM", "() { :; }; echo pwned"),
    ("USER", "mux-test-user"),
    ("HOME", "/nonexistent-home-of-the-test"),
];

const PLAIN_ENV_HELPER: &str = "stdio_walls::helper_plain_server_environment";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helper_plain_server_environment() {
    if !is_helper(PLAIN_ENV_HELPER) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let spec = server("envy", dir.path())
        .with_env("MUX_CONFIGURED", "from the config")
        .with_env("OPENAI_API_KEY_FOR_SERVER", "named-by-config");
    check_environment(&reported_environment(spec).await, false);
    println!("{PLAIN_ENV_HELPER}: done");
}

#[test]
fn a_stdio_server_gets_the_default_environment_and_its_config_never_the_agents_keys() {
    helper(PLAIN_ENV_HELPER, &HELPER_ENV);
}
