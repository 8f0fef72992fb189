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
    let out = tool
        .call(arguments, ToolContext::new(tool_id()))
        .await
        .unwrap();
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
        assert!(
            !env.contains_key(name),
            "{name} reached the server: {env:?}"
        );
        assert!(
            !env.values().any(|v| v.contains(value)),
            "the value of {name} reached the server: {env:?}"
        );
    }
    assert_eq!(
        env.get("MUX_CONFIGURED").map(String::as_str),
        Some("from the config")
    );
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
    assert!(
        !env.contains_key("TERM"),
        "a function-like TERM passed: {env:?}"
    );
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

/// The tests of the wall itself, which needs mux-mcp's feature `sandbox` and Linux.
#[cfg(all(feature = "sandbox", target_os = "linux"))]
mod walled {
    use super::*;

    use mux_mcp::{StdioSandbox, StdioSandboxPolicy};

    const WALLED_ENV_HELPER: &str = "stdio_walls::walled::helper_walled_server_environment";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn helper_walled_server_environment() {
        if !is_helper(WALLED_ENV_HELPER) {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let spec = server("envy", dir.path())
            .with_env("MUX_CONFIGURED", "from the config")
            .with_env("OPENAI_API_KEY_FOR_SERVER", "named-by-config")
            .with_sandbox(
                StdioSandbox::new(StdioSandboxPolicy::WorkspaceWrite).with_root(dir.path()),
            );
        check_environment(&reported_environment(spec).await, true);
        println!("{WALLED_ENV_HELPER}: done");
    }

    #[test]
    fn a_walled_server_gets_the_same_environment() {
        helper(WALLED_ENV_HELPER, &HELPER_ENV);
    }

    const SECRETS_HELPER: &str = "stdio_walls::walled::helper_walled_server_secrets";

    /// Inside a helper whose `HOME` holds a canary credential: a walled server cannot read it,
    /// however spelled; the same server without the wall can (the control).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn helper_walled_server_secrets() {
        if !is_helper(SECRETS_HELPER) {
            return;
        }
        let home = std::path::PathBuf::from(std::env::var("HOME").unwrap());
        let secret = home.join(".aws/credentials");
        let places = Places::new();
        let plain = common::running(places.spec("plain")).await;
        let (text, _) = call(
            &plain,
            "plain",
            "read",
            json!({"path": secret.to_string_lossy()}),
        )
        .await;
        plain.stop_all().await;
        assert!(text.contains("canary-aws-key"), "control: {text}");
        let walled = common::running(places.spec("walled").with_sandbox(
            StdioSandbox::new(StdioSandboxPolicy::WorkspaceWrite).with_root(places.root()),
        ))
        .await;
        let spellings = [
            secret.to_string_lossy().into_owned(),
            format!("{}//.aws/./credentials", home.display()),
            format!("/proc/self/root{}", secret.display()),
            format!(
                "{}/../{}/.aws/credentials",
                home.display(),
                home.file_name().unwrap().to_string_lossy()
            ),
        ];
        for path in spellings {
            let (text, _) = call(&walled, "walled", "read", json!({ "path": path })).await;
            assert!(!text.contains("canary-aws-key"), "{path} was read: {text}");
        }
        walled.stop_all().await;
        println!("{SECRETS_HELPER}: done");
    }

    #[test]
    fn a_walled_server_cannot_read_the_secret_locations() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".aws")).unwrap();
        std::fs::write(home.join(".aws/credentials"), "canary-aws-key\n").unwrap();
        helper(SECRETS_HELPER, &[("HOME", &home.to_string_lossy())]);
    }

    /// A test's places: the script's dir, the server's root inside it, and a dir outside
    /// the root.
    struct Places {
        dir: tempfile::TempDir,
    }

    impl Places {
        fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir(dir.path().join("root")).unwrap();
            std::fs::create_dir(dir.path().join("outside")).unwrap();
            Self { dir }
        }

        fn root(&self) -> std::path::PathBuf {
            self.dir.path().join("root")
        }

        fn outside(&self, name: &str) -> String {
            self.dir
                .path()
                .join("outside")
                .join(name)
                .to_string_lossy()
                .into_owned()
        }

        fn spec(&self, name: &str) -> ServerSpec {
            server(name, self.dir.path())
        }
    }

    /// Writes `path` through the server's `write` tool: the answer and whether it is an error.
    async fn write(coordinator: &mux_mcp::Coordinator, server: &str, path: &str) -> (String, bool) {
        call(
            coordinator,
            server,
            "write",
            json!({"path": path, "text": "planted"}),
        )
        .await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_walled_server_lists_and_calls_its_tools() {
        let places = Places::new();
        let spec = places.spec("walled").with_sandbox(
            StdioSandbox::new(StdioSandboxPolicy::WorkspaceWrite).with_root(places.root()),
        );
        let coordinator = common::running(spec).await;
        let mut names: Vec<String> = coordinator
            .tools()
            .iter()
            .map(|tool| tool.spec().name.to_string())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "mcp__walled__connect",
                "mcp__walled__environment",
                "mcp__walled__read",
                "mcp__walled__write"
            ]
        );
        // It works in its root, and reads what it is given.
        let inside = places.root().join("notes.txt");
        let (text, is_error) = write(&coordinator, "walled", &inside.to_string_lossy()).await;
        assert!(!is_error, "{text}");
        assert_eq!(std::fs::read_to_string(&inside).unwrap(), "planted");
        let (text, is_error) = call(
            &coordinator,
            "walled",
            "read",
            json!({"path": inside.to_string_lossy()}),
        )
        .await;
        assert!(!is_error && text == "planted", "{text}");
        // Its working directory is its root.
        let (text, is_error) = call(
            &coordinator,
            "walled",
            "write",
            json!({"path": "relative.txt", "text": "here"}),
        )
        .await;
        assert!(!is_error, "{text}");
        assert!(places.root().join("relative.txt").exists());
        let pid = coordinator.snapshot().servers[0].pid.unwrap();
        coordinator.stop_all().await;
        assert!(
            common::gone_within(pid, std::time::Duration::from_secs(5)).await,
            "the walled server outlived its connection"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_walled_server_cannot_write_outside_its_root() {
        let places = Places::new();
        // The control: without the wall the same write lands.
        let plain = common::running(places.spec("plain")).await;
        let (text, is_error) = write(&plain, "plain", &places.outside("control.txt")).await;
        plain.stop_all().await;
        assert!(!is_error, "{text}");
        assert!(Path::new(&places.outside("control.txt")).exists());

        let walled = common::running(places.spec("walled").with_sandbox(
            StdioSandbox::new(StdioSandboxPolicy::WorkspaceWrite).with_root(places.root()),
        ))
        .await;
        let target = places.outside("planted.txt");
        let (text, is_error) = write(&walled, "walled", &target).await;
        assert!(
            is_error,
            "the write outside the root was not refused: {text}"
        );
        assert!(!Path::new(&target).exists(), "{text}");
        // Nor through a symlink inside the root that leads out.
        std::os::unix::fs::symlink(places.dir.path().join("outside"), places.root().join("out"))
            .unwrap();
        let through = places.root().join("out/through-link.txt");
        let (text, is_error) = write(&walled, "walled", &through.to_string_lossy()).await;
        assert!(
            is_error,
            "the write through a symlink was not refused: {text}"
        );
        assert!(!Path::new(&places.outside("through-link.txt")).exists());
        walled.stop_all().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_read_only_server_writes_only_its_temp_dir() {
        let places = Places::new();
        let walled = common::running(places.spec("ro").with_sandbox(
            StdioSandbox::new(StdioSandboxPolicy::ReadOnly).with_root(places.root()),
        ))
        .await;
        let inside = places.root().join("notes.txt");
        let (text, is_error) = write(&walled, "ro", &inside.to_string_lossy()).await;
        assert!(is_error, "a read-only server wrote its root: {text}");
        assert!(!inside.exists());
        let (text, is_error) = call(&walled, "ro", "environment", json!({})).await;
        assert!(!is_error, "{text}");
        let env: BTreeMap<String, String> = serde_json::from_str(&text).unwrap();
        let scratch = Path::new(&env["TMPDIR"]).join("scratch.txt");
        let (text, is_error) = write(&walled, "ro", &scratch.to_string_lossy()).await;
        assert!(!is_error, "the server could not write its temp dir: {text}");
        walled.stop_all().await;
    }

    /// A TCP listener on 127.0.0.1 that accepts in the background; its port.
    async fn listener() -> (u16, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accept = tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                drop(socket);
            }
        });
        (port, accept)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_walled_server_cannot_open_a_socket_unless_its_network_is_on() {
        let places = Places::new();
        let (port, accept) = listener().await;
        let connect = |coordinator, name| async move {
            call(coordinator, name, "connect", json!({"port": port})).await
        };

        // The control: without the wall the server connects.
        let plain = common::running(places.spec("plain")).await;
        let (text, is_error) = connect(&plain, "plain").await;
        plain.stop_all().await;
        assert!(!is_error && text == "connected", "{text}");

        let walled = common::running(places.spec("walled").with_sandbox(
            StdioSandbox::new(StdioSandboxPolicy::WorkspaceWrite).with_root(places.root()),
        ))
        .await;
        let (text, is_error) = connect(&walled, "walled").await;
        walled.stop_all().await;
        assert!(is_error, "the walled server opened a socket: {text}");

        let networked = common::running(
            places.spec("net").with_sandbox(
                StdioSandbox::new(StdioSandboxPolicy::WorkspaceWrite)
                    .with_root(places.root())
                    .with_network(true),
            ),
        )
        .await;
        let (text, is_error) = connect(&networked, "net").await;
        networked.stop_all().await;
        assert!(!is_error && text == "connected", "{text}");
        accept.abort();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_config_walls_every_stdio_server_unless_its_entry_opts_out() {
        let places = Places::new();
        let (port, accept) = listener().await;
        let script = places.dir.path().join("walled_server.py");
        std::fs::write(&script, SERVER).unwrap();
        let config = json!({
            "sandbox": {"policy": "workspaceWrite", "root": places.root()},
            "mcpServers": {
                "walled": {"command": common::venv_bin("python"), "args": [script]},
                "open": {"command": common::venv_bin("python"), "args": [script], "sandbox": false},
            }
        });
        let specs = mux_mcp::parse_config(&config.to_string()).unwrap();
        let coordinator = common::coordinator();
        let report = coordinator.start_all_and_wait(specs).await.unwrap();
        assert_eq!(report.connected.len(), 2, "{report:?}");
        let (text, is_error) = call(&coordinator, "walled", "connect", json!({"port": port})).await;
        assert!(is_error, "the walled server opened a socket: {text}");
        let (text, is_error) = call(&coordinator, "open", "connect", json!({"port": port})).await;
        assert!(!is_error && text == "connected", "{text}");
        coordinator.stop_all().await;
        accept.abort();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_wall_that_cannot_be_built_starts_nothing_and_says_why() {
        let places = Places::new();
        let missing = places.dir.path().join("no-such-root");
        let marker = places.outside("started.txt");
        // A server that would leave a mark if it ran at all.
        let spec = ServerSpec::stdio(
            "nowhere",
            "/bin/sh",
            ["-c".to_owned(), format!("echo ran > '{marker}'")],
        )
        .with_sandbox(StdioSandbox::default().with_root(&missing));
        let coordinator = common::coordinator();
        let report = coordinator.start_all_and_wait(vec![spec]).await.unwrap();
        assert!(report.connected.is_empty(), "{report:?}");
        let (name, reason) = &report.failed[0];
        assert_eq!(name, "nowhere");
        assert!(
            reason.contains("behind the OS wall") && reason.contains("no-such-root"),
            "{reason}"
        );
        assert!(!Path::new(&marker).exists());
        coordinator.stop_all().await;
    }
}
