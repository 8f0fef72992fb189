//! Opening a transport for a spec: a child process in its own process group (behind the OS
//! wall when its spec says so, with the SDKs' default environment plus its own either way), or
//! Streamable HTTP. Both are wrapped so that the end of the incoming stream is noticed at once.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use process_wrap::tokio::{ChildWrapper, CommandWrap, KillOnDrop, ProcessGroup};
use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpClientTransportConfig,
};
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio_util::sync::CancellationToken;

use super::types::ProgressBarrier;
#[cfg(all(feature = "sandbox", unix))]
use crate::config::StdioSandboxPolicy;
use crate::config::{HttpSpec, StdioSandbox, StdioSpec, server_environment};
use crate::standalone::{Signalling, StandaloneStream};
#[cfg(all(feature = "sandbox", unix))]
use mux_tool::builtin::{SandboxPolicy, Wall, WalledChild};

/// A transport that cancels `closed` when the peer's stream ends.
/// It also counts progress notifications for the [`ProgressBarrier`].
pub(crate) struct Watched<T> {
    inner: T,
    closed: CancellationToken,
    barrier: Arc<ProgressBarrier>,
}

impl<T> Watched<T> {
    pub(crate) fn new(inner: T, closed: CancellationToken, barrier: Arc<ProgressBarrier>) -> Self {
        Self {
            inner,
            closed,
            barrier,
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await;
        match &message {
            None => self.closed.cancel(),
            Some(JsonRpcMessage::Notification(notification))
                if matches!(
                    notification.notification,
                    ServerNotification::ProgressNotification(_)
                ) =>
            {
                self.barrier.received();
            }
            Some(_) => {}
        }
        message
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

/// The stdio transport type.
pub(crate) type StdioTransport = Watched<AsyncRwTransport<RoleClient, ChildStdout, ChildStdin>>;

/// A spawned server process: the leader of its own process group. Dropping it kills the group.
pub(crate) struct Child {
    process: Option<Process>,
    /// The process group: the leader's id, kept because the leader may be reaped before the
    /// rest of its group is gone.
    group: Option<u32>,
}

/// A server process, started plainly or behind the OS wall.
enum Process {
    /// In a process group of its own (process-wrap).
    Plain(Box<dyn ChildWrapper>),
    /// Behind the wall: a session and process group of its own, and what the wall needs
    /// while it runs.
    #[cfg(all(feature = "sandbox", unix))]
    Walled(Box<WalledChild>),
}

impl Process {
    fn id(&self) -> Option<u32> {
        match self {
            Self::Plain(child) => child.id(),
            #[cfg(all(feature = "sandbox", unix))]
            Self::Walled(child) => child.id(),
        }
    }

    async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match self {
            Self::Plain(child) => child.wait().await,
            #[cfg(all(feature = "sandbox", unix))]
            Self::Walled(child) => child.child_mut().wait().await,
        }
    }

    /// Sends SIGTERM to the group; an error means it is empty.
    fn terminate(&self) -> std::io::Result<()> {
        match self {
            Self::Plain(child) => child.signal(SIGTERM),
            #[cfg(all(feature = "sandbox", unix))]
            Self::Walled(child) => child.terminate_group(),
        }
    }

    /// Sends SIGKILL to the group.
    fn kill_group(&self) {
        let _ = match self {
            Self::Plain(child) => child.signal(SIGKILL),
            #[cfg(all(feature = "sandbox", unix))]
            Self::Walled(child) => child.kill_group(),
        };
    }

    /// Kills the group and reaps the leader.
    async fn kill(self) {
        match self {
            Self::Plain(mut child) => {
                let _ = Box::into_pin(child.kill()).await;
            }
            #[cfg(all(feature = "sandbox", unix))]
            Self::Walled(mut child) => {
                let _ = child.kill_group();
                let _ = child.child_mut().kill().await;
            }
        }
    }

    /// Kills the group without waiting; the leader is reaped in the background.
    fn start_kill(&mut self) {
        match self {
            Self::Plain(child) => {
                let _ = child.start_kill();
            }
            #[cfg(all(feature = "sandbox", unix))]
            Self::Walled(child) => {
                let _ = child.kill_group();
                let _ = child.child_mut().start_kill();
            }
        }
    }
}

const SIGTERM: i32 = 15;
const SIGKILL: i32 = 9;
/// How often [`Child::end_group`] looks whether the group is empty.
const GROUP_POLL: Duration = Duration::from_millis(10);

impl Child {
    /// The leader's process id.
    pub(crate) fn id(&self) -> Option<u32> {
        self.process.as_ref().and_then(Process::id)
    }

    /// Waits up to `grace` for the leader to exit after stdin was closed, then sends SIGTERM to
    /// the group and waits again, then kills the group. Processes the leader left behind in its
    /// group (background helpers of a server that exited) get SIGTERM, then SIGKILL after
    /// `grace`: no orphan outlives the connection.
    pub(crate) async fn shut_down(mut self, grace: Duration) {
        let Some(process) = self.process.as_mut() else {
            return;
        };
        let leader_exited = tokio::time::timeout(grace, process.wait()).await.is_ok()
            || (process.terminate().is_ok()
                && tokio::time::timeout(grace, process.wait()).await.is_ok());
        if leader_exited {
            self.end_group(grace).await;
        } else {
            self.kill().await;
        }
    }

    /// Ends what is left of the group after its leader exited: SIGTERM, a wait of at most
    /// `grace` for the group to empty, then SIGKILL.
    async fn end_group(&mut self, grace: Duration) {
        let Some(process) = self.process.take() else {
            return;
        };
        // An error means the group is empty (ESRCH): nothing was left behind.
        if process.terminate().is_err() {
            return;
        }
        let deadline = tokio::time::Instant::now() + grace;
        while self.group_alive() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(GROUP_POLL).await;
        }
        process.kill_group();
    }

    /// Whether any process of the group is still there (zombies included).
    fn group_alive(&self) -> bool {
        #[cfg(unix)]
        {
            self.group
                .and_then(|id| rustix::process::Pid::from_raw(i32::try_from(id).ok()?))
                .is_some_and(|pid| rustix::process::test_kill_process_group(pid).is_ok())
        }
        #[cfg(not(unix))]
        {
            false
        }
    }

    /// Kills the whole process group and reaps it.
    pub(crate) async fn kill(mut self) {
        if let Some(process) = self.process.take() {
            process.kill().await;
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Some(process) = self.process.as_mut() {
            // SIGKILL to the whole group; tokio reaps the leader in the background.
            process.start_kill();
        }
    }
}

/// Spawns `spec` in a new process group with piped stdio, behind the OS wall when its
/// `sandbox` says so. Its environment is the SDKs' default set taken from the agent's, plus
/// the spec's `env` (see [`server_environment`]).
pub(crate) fn spawn(
    spec: &StdioSpec,
    closed: CancellationToken,
    barrier: Arc<ProgressBarrier>,
) -> std::io::Result<(StdioTransport, Child, ChildStderr)> {
    let mut command = tokio::process::Command::new(&spec.command);
    command
        .args(&spec.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear()
        .envs(server_environment(spec, std::env::vars_os()));
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    let (stdin, stdout, stderr, process) = match &spec.sandbox {
        None => {
            let mut wrapped = CommandWrap::from(command);
            wrapped.wrap(ProcessGroup::leader()).wrap(KillOnDrop);
            let mut child = wrapped.spawn()?;
            let stdin = child.stdin().take();
            let stdout = child.stdout().take();
            let stderr = child.stderr().take();
            (stdin, stdout, stderr, Process::Plain(child))
        }
        Some(sandbox) => walled(command, spec, sandbox)?,
    };
    let missing = |what: &str| std::io::Error::other(format!("the child's {what} was not piped"));
    let stdin = stdin.ok_or_else(|| missing("stdin"))?;
    let stdout = stdout.ok_or_else(|| missing("stdout"))?;
    let stderr = stderr.ok_or_else(|| missing("stderr"))?;
    let group = process.id();
    let transport = Watched::new(AsyncRwTransport::new_client(stdout, stdin), closed, barrier);
    Ok((
        transport,
        Child {
            process: Some(process),
            group,
        },
        stderr,
    ))
}

/// A started process's pipes, and the process.
type Started = (
    Option<ChildStdin>,
    Option<ChildStdout>,
    Option<ChildStderr>,
    Process,
);

/// Starts `command` behind the wall `sandbox` describes: mux-tool's OS sandbox, rooted at
/// `sandbox.root`, else `spec.cwd`, else the current directory.
#[cfg(all(feature = "sandbox", unix))]
fn walled(
    command: tokio::process::Command,
    spec: &StdioSpec,
    sandbox: &StdioSandbox,
) -> std::io::Result<Started> {
    let root = match (&sandbox.root, &spec.cwd) {
        (Some(root), _) | (None, Some(root)) => root.clone(),
        (None, None) => std::env::current_dir()?,
    };
    let policy = match sandbox.policy {
        StdioSandboxPolicy::ReadOnly => SandboxPolicy::ReadOnly,
        StdioSandboxPolicy::WorkspaceWrite => SandboxPolicy::WorkspaceWrite,
    };
    let mut child = Wall::new(policy, root)
        .network(sandbox.network)
        .spawn(command)
        .map_err(|err| std::io::Error::other(format!("behind the OS wall: {err}")))?;
    let process = child.child_mut();
    let pipes = (
        process.stdin.take(),
        process.stdout.take(),
        process.stderr.take(),
    );
    Ok((pipes.0, pipes.1, pipes.2, Process::Walled(Box::new(child))))
}

/// Without the feature `sandbox` (or off Unix) there is no wall: a server that asks for one
/// is not started.
#[cfg(not(all(feature = "sandbox", unix)))]
fn walled(
    _command: tokio::process::Command,
    _spec: &StdioSpec,
    sandbox: &StdioSandbox,
) -> std::io::Result<Started> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!(
            "the server asks for the OS wall (`sandbox`, policy {}) but this build of mux-mcp has none (its feature `sandbox` is off, or the platform is not Unix); it was not started",
            sandbox.policy.as_str()
        ),
    ))
}

/// Reads the child's stderr line by line into `sink` until it closes.
pub(crate) async fn pump_stderr(stderr: ChildStderr, sink: impl Fn(String)) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        sink(line);
    }
}

/// Builds the Streamable HTTP transport for `spec` on `client` (plain, or one that adds
/// OAuth tokens); `standalone` learns when the session's standalone GET stream opens.
pub(crate) fn http_with<C: StreamableHttpClient + Send + Sync + 'static>(
    client: C,
    spec: &HttpSpec,
    closed: CancellationToken,
    barrier: Arc<ProgressBarrier>,
    standalone: StandaloneStream,
) -> Result<Watched<StreamableHttpClientTransport<Signalling<C>>>, String> {
    let mut headers = HashMap::new();
    for (name, value) in &spec.headers {
        let header = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("header `{name}` has an invalid name"))?;
        let value = http::HeaderValue::from_str(value.expose())
            .map_err(|_| format!("header `{name}` has an invalid value"))?;
        headers.insert(header, value);
    }
    let mut config =
        StreamableHttpClientTransportConfig::with_uri(spec.url.as_str()).custom_headers(headers);
    if let Some(token) = &spec.bearer_token {
        config = config.auth_header(token.expose());
    }
    Ok(Watched::new(
        StreamableHttpClientTransport::with_client(Signalling::new(client, standalone), config),
        closed,
        barrier,
    ))
}
