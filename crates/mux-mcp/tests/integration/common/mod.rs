//! Shared helpers for the interop tests: where the npm peers live and how to start them.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use std::sync::atomic::{AtomicUsize, Ordering};

use mux_mcp::rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use mux_mcp::{
    CallEnd, ClientFeatures, ClientHandlers, ConnectionOptions, ConnectionState, Coordinator,
    CoordinatorConfig, HandlerError, McpEvent, Received, ReconnectPolicy, ServerSpec,
};
use mux_tool::{BoxFuture, Tool, ToolContext, ToolError};
use serde_json::Value;

/// The folder `cargo xtask peers` installs the npm servers into.
pub(crate) fn peers_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers")
}

/// `path` as a string; fails the test, saying how to install it, when it does not exist.
fn installed(path: PathBuf, what: &str) -> String {
    assert!(
        path.exists(),
        "{} is missing: run `cargo xtask peers` (cargo xtask ci does it) to {what}",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

const NPM_PEERS: &str = "install the MCP test servers";

fn peer_script(package: &str) -> String {
    let path = peers_dir()
        .join("node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    installed(path, NPM_PEERS)
}

/// server-everything over stdio.
pub(crate) fn everything(name: &str) -> ServerSpec {
    ServerSpec::stdio(
        name,
        "node",
        [peer_script("server-everything"), "stdio".into()],
    )
}

/// server-filesystem rooted at `root`.
pub(crate) fn filesystem(name: &str, root: &std::path::Path) -> ServerSpec {
    ServerSpec::stdio(
        name,
        "node",
        [
            peer_script("server-filesystem"),
            root.to_string_lossy().into_owned(),
        ],
    )
}

/// A command line for server-everything over Streamable HTTP on `port`.
pub(crate) fn everything_http_command(port: u16) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("node");
    command
        .arg(peer_script("server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .kill_on_drop(true)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    command
}

/// A free TCP port on 127.0.0.1.
pub(crate) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A coordinator with quick reconnects and no health checks.
pub(crate) fn coordinator() -> Coordinator {
    Coordinator::new(CoordinatorConfig {
        connection: ConnectionOptions {
            connect_timeout: Duration::from_secs(20),
            shutdown_grace: Duration::from_secs(1),
            ..ConnectionOptions::default()
        },
        reconnect: ReconnectPolicy::Backoff {
            max_attempts: 5,
            initial: Duration::from_millis(100),
            max: Duration::from_secs(1),
            jitter: 0.2,
        },
        health_interval: None,
        ..CoordinatorConfig::default()
    })
}

/// A [`coordinator`] with `spec` started and connected.
pub(crate) async fn running(spec: ServerSpec) -> Coordinator {
    running_on(coordinator(), spec).await
}

/// `coordinator` with `spec` started and connected.
pub(crate) async fn running_on(coordinator: Coordinator, spec: ServerSpec) -> Coordinator {
    let name = spec.name.clone();
    let report = coordinator.start_all_and_wait(vec![spec]).await.unwrap();
    assert_eq!(report.connected, [name], "{report:?}");
    coordinator
}

/// Calls server-everything's `echo` tool `echo` with `message` and checks that it echoes.
pub(crate) async fn echoes(echo: &Arc<dyn Tool>, message: &str, call_id: &str) {
    let out = echo
        .call(
            serde_json::json!({ "message": message }),
            ToolContext::new(call_id),
        )
        .await
        .unwrap();
    assert_eq!(out.to_text(), format!("Echo: {message}"), "{out:?}");
    assert!(!out.is_error, "{out:?}");
}

/// Sends `signal` (such as `-KILL` or `-STOP`) to process `pid` with kill(1).
pub(crate) fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success(), "kill {signal} {pid}: {status}");
}

pub(crate) use mux_testkit::process::alive;

/// Waits until `pid` is gone, up to `limit`.
pub(crate) async fn gone_within(pid: u32, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    !alive(pid)
}

/// Waits for an event matching `pred`, up to `limit`.
pub(crate) async fn wait_for(
    events: &mut mux_mcp::Events,
    limit: Duration,
    pred: impl Fn(&McpEvent) -> bool,
) -> Option<McpEvent> {
    tokio::time::timeout(limit, async {
        while let Some(received) = events.recv().await {
            if let Received::Event(event) = received
                && pred(&event)
            {
                return Some(event);
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
}

/// A program in the Python venv `cargo xtask peers` builds.
pub(crate) fn venv_bin(program: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../target/mcp-peers-venv/bin")
        .join(program);
    installed(path, "build the Python venv")
}

/// Our own Python SDK server, which speaks 2026-07-28.
pub(crate) fn modern(name: &str) -> ServerSpec {
    let script = peers_dir().join("python/modern_server.py");
    ServerSpec::stdio(
        name,
        venv_bin("python"),
        [script.to_string_lossy().into_owned()],
    )
}

/// One of our own servers on the TypeScript SDK: `tests/peers/<script>` run by node.
pub(crate) fn sdk_server(name: &str, script: &str) -> ServerSpec {
    installed(
        peers_dir().join("node_modules/@modelcontextprotocol/sdk"),
        NPM_PEERS,
    );
    let script = peers_dir().join(script);
    ServerSpec::stdio(name, "node", [script.to_string_lossy().into_owned()])
}

/// The tool named `name` in `tools`; panics listing the names there are.
pub(crate) fn find(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.spec().name.as_str() == name)
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "no tool {name} in {:?}",
                tools
                    .iter()
                    .map(|t| t.spec().name.to_string())
                    .collect::<Vec<_>>()
            )
        })
}

/// Waits for a connection to fail (a `StateChanged` to `failed`), up to `limit`.
pub(crate) async fn failed(events: &mut mux_mcp::Events, limit: Duration) -> Option<McpEvent> {
    wait_for(events, limit, |e| {
        matches!(
            e,
            McpEvent::StateChanged {
                to: ConnectionState::Failed { .. },
                ..
            }
        )
    })
    .await
}

/// Waits for a connection attempt to succeed (a `StateChanged` from `connecting` to
/// `connected`), up to `limit`.
pub(crate) async fn reconnected(events: &mut mux_mcp::Events, limit: Duration) -> Option<McpEvent> {
    wait_for(events, limit, |e| {
        matches!(
            e,
            McpEvent::StateChanged {
                from: ConnectionState::Connecting,
                to: ConnectionState::Connected { .. },
                ..
            }
        )
    })
    .await
}

/// Starts `tool` (a qualified name) with `arguments` as call `call_id`, cancels it once the
/// server has it, and checks that it ends at once as cancelled, with no call left pending.
pub(crate) async fn cancel_once_started(
    coordinator: &Coordinator,
    tool: &str,
    arguments: Value,
    call_id: &str,
) {
    let mut events = coordinator.subscribe();
    let tool = find(&coordinator.tools(), tool);
    let cx = ToolContext::new(call_id);
    let cancel = cx.cancellation().clone();
    let call = tokio::spawn(async move { tool.call(arguments, cx).await });
    wait_for(
        &mut events,
        Duration::from_secs(5),
        |e| matches!(e, McpEvent::CallStarted { call_id: id, .. } if id == call_id),
    )
    .await
    .expect("the call started");
    assert_eq!(coordinator.snapshot().servers[0].pending_calls.len(), 1);
    let started = std::time::Instant::now();
    cancel.cancel();
    let result = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect("the cancelled call ends within 5 s")
        .unwrap();
    assert!(matches!(result, Err(ToolError::Cancelled)), "{result:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    let ended = wait_for(&mut events, Duration::from_secs(5), |e| {
        matches!(e, McpEvent::CallEnded { .. })
    })
    .await;
    assert!(
        matches!(
            ended,
            Some(McpEvent::CallEnded {
                end: CallEnd::Cancelled,
                ..
            })
        ),
        "{ended:?}"
    );
    assert!(coordinator.snapshot().servers[0].pending_calls.is_empty());
}

/// Client handlers that declare form elicitation and answer every request alike: accept with
/// `{"name": "mux"}`, or refuse with a reason. They count the requests.
pub(crate) struct FormAnswers {
    refusal: Option<&'static str>,
    asked: AtomicUsize,
}

impl FormAnswers {
    /// Accepts every form with the name "mux".
    pub(crate) fn accept() -> Arc<Self> {
        Arc::new(Self {
            refusal: None,
            asked: AtomicUsize::new(0),
        })
    }

    /// Refuses every form with `reason`.
    pub(crate) fn refuse(reason: &'static str) -> Arc<Self> {
        Arc::new(Self {
            refusal: Some(reason),
            asked: AtomicUsize::new(0),
        })
    }

    /// How many forms were asked for.
    pub(crate) fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

impl ClientHandlers for FormAnswers {
    fn features(&self) -> ClientFeatures {
        ClientFeatures {
            elicitation_form: true,
            ..ClientFeatures::default()
        }
    }

    fn elicit(
        &self,
        _server: &str,
        _params: ElicitRequestParams,
    ) -> BoxFuture<'_, Result<ElicitResult, HandlerError>> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let answer = match self.refusal {
            Some(reason) => Err(HandlerError(reason.into())),
            None => Ok(ElicitResult::new(ElicitationAction::Accept)
                .with_content(serde_json::json!({"name": "mux"}))),
        };
        Box::pin(async move { answer })
    }
}
