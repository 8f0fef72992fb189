//! What the tests of the MCP example servers share: mux's own MCP client set up against them
//! (an approver, a coordinator), the server process over HTTP, and the check that a cancelled
//! call kills the `sleep` it started.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mux::mcp::rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use mux::mcp::{
    ClientFeatures, ClientHandlers, ConnectionOptions, Coordinator, CoordinatorConfig,
    HandlerError, Lifecycle, ReconnectPolicy, ServerSpec,
};
use mux::tool::{BoxFuture, Tool, ToolContext};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// Answers every elicitation with `approve: true` (when it declares elicitation) and records
/// the messages.
pub(crate) struct Approver {
    elicits: bool,
    asked: Mutex<Vec<String>>,
}

impl Approver {
    /// An approver that declares form elicitation when `elicits`.
    pub(crate) fn new(elicits: bool) -> Arc<Self> {
        Arc::new(Self {
            elicits,
            asked: Mutex::default(),
        })
    }

    /// The messages it was asked, in order.
    pub(crate) fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap().clone()
    }
}

impl ClientHandlers for Approver {
    fn features(&self) -> ClientFeatures {
        ClientFeatures {
            elicitation_form: self.elicits,
            ..ClientFeatures::default()
        }
    }

    fn elicit(
        &self,
        _server: &str,
        params: ElicitRequestParams,
    ) -> BoxFuture<'_, Result<ElicitResult, HandlerError>> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &params {
            self.asked.lock().unwrap().push(message.clone());
        }
        Box::pin(async {
            Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"approve": true})))
        })
    }
}

/// A coordinator connected to `spec` at `lifecycle` with `approver` as its client handlers
/// (20 s to connect, no reconnects, no health checks); asserts that it connected.
pub(crate) async fn connect(
    spec: ServerSpec,
    lifecycle: Lifecycle,
    approver: Arc<Approver>,
) -> Coordinator {
    let coordinator = Coordinator::new(CoordinatorConfig {
        connection: ConnectionOptions {
            connect_timeout: Duration::from_secs(20),
            shutdown_grace: Duration::from_secs(1),
            lifecycle,
            ..ConnectionOptions::default()
        },
        reconnect: ReconnectPolicy::None,
        health_interval: None,
        ..CoordinatorConfig::default()
    })
    .with_client_handlers(approver);
    let report = coordinator.start_all_and_wait(vec![spec]).await.unwrap();
    assert_eq!(report.failed, vec![], "connects");
    coordinator
}

/// A server process, killed on drop.
pub(crate) struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts an example server over HTTP and returns it with its URL (its first stdout line,
/// checked to be on 127.0.0.1).
pub(crate) fn serve_http(mut command: Command) -> (Killed, String) {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let child = Killed(child);
    assert!(line.starts_with("http://127.0.0.1:"), "{line:?}");
    (child, line.trim().to_string())
}

/// Whether a process whose command line is exactly `words` is alive.
fn running(words: &[&str]) -> bool {
    let wanted: Vec<u8> = words
        .iter()
        .flat_map(|w| [w.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline")).is_ok_and(|cmdline| cmdline == wanted)
    })
}

/// Calls `tool` with `input`, which makes the server run `sleep <sleep_arg>` (started within
/// `start_within`), cancels the call, and asserts that the call ends and the `sleep` dies
/// (10 s each).
pub(crate) async fn a_cancelled_call_kills_its_sleep(
    tool: Arc<dyn Tool>,
    input: Value,
    sleep_arg: &str,
    start_within: Duration,
) {
    let cancel = CancellationToken::new();
    let cx = ToolContext::new("c").with_cancellation(cancel.clone());
    let call = tokio::spawn(async move { tool.call(input, cx).await });
    let started = Instant::now();
    while !running(&["sleep", sleep_arg]) {
        assert!(started.elapsed() < start_within, "sleep never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cancel.cancel();
    let _ = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .unwrap();
    let cancelled = Instant::now();
    while running(&["sleep", sleep_arg]) {
        assert!(
            cancelled.elapsed() < Duration::from_secs(10),
            "the sleep survived the cancellation"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
