//! `bash`: a shell command in the root, with a timeout, capped and streamed output, and the
//! whole process group killed on cancel, timeout or drop.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;

use super::NetworkPolicy;
use super::Sandbox;
use super::environment::EnvPolicy;
use super::os_sandbox::{FilePolicy, SandboxPolicy};
use super::text::{decode_head, decode_tail};
use crate::{Subject, ToolAnnotations, ToolContext, ToolError, ToolKind, ToolOutput, TypedTool};

/// The timeout when the call gives no `timeout_ms`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest timeout a call may ask for.
const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// How many bytes of output are kept, by default: half from the start, half from the end.
const DEFAULT_MAX_OUTPUT_BYTES: usize = 30_000;
/// How long the output pipes may stay open after the command has exited and its group was
/// killed (a process that left the group can hold them).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// The arguments of `bash`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashArgs {
    /// The command line, run with `bash -c` in the workspace root.
    pub command: String,
    /// How long the command may run, in milliseconds. Default: 120000; at most 600000.
    #[schemars(range(min = 1, max = 600_000))]
    pub timeout_ms: Option<u64>,
    /// Run the command outside the OS sandbox, for a command the sandbox keeps from working.
    /// It is always asked about first, refused where the settings forbid commands outside the
    /// sandbox, and ignored (the command runs inside) where nothing lets commands leave it.
    #[serde(default, rename = "dangerouslyDisableSandbox")]
    #[schemars(rename = "dangerouslyDisableSandbox")]
    pub dangerously_disable_sandbox: Option<bool>,
}

/// Decides, from a command and its `dangerouslyDisableSandbox`, whether it runs outside the
/// OS sandbox ([`Bash::leaves_wall_when`]).
#[derive(Clone)]
struct LeavesWall(std::sync::Arc<LeavesWallFn>);

/// `decide(command, requested)`: whether the command runs outside the OS sandbox.
type LeavesWallFn = dyn Fn(&str, bool) -> bool + Send + Sync;

impl std::fmt::Debug for LeavesWall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LeavesWall")
    }
}

/// Runs a shell command in the sandbox root.
///
/// The command gets its own process group. On cancellation, on timeout, when the call's
/// future is dropped, and after the command exits (background jobs included) the whole group
/// is killed with `SIGKILL`, grandchildren too. Output (stdout and stderr interleaved) is
/// streamed through [`ToolContext::output`] and kept up to a cap, head and tail, with a marker
/// saying how much was left out in between. A non-zero exit is an error output.
///
/// The permission layer judges its [`Subject::Command`]; the OS sandbox (see
/// [`SandboxPolicy`]) bounds what an allowed command can do: by default it sees the file
/// system read-only except the root (whose protected paths, [`PROTECTED_NAMES`], stay
/// read-only) and a temp dir of its own (`TMPDIR`), opens no Internet socket, has no
/// terminal and no capability, cannot signal a process outside the sandbox, and none of its
/// processes can leave the process group that is killed with it. The default secret locations
/// of the home directory ([`SECRET_LOCATIONS`]: SSH and GnuPG keys, cloud credentials,
/// browser profiles, …) are hidden from it, and a [`FilePolicy`] hides more, or grants or
/// withholds writes ([`Bash::file_policy`]). Where the machine cannot enforce the policy, the
/// call fails instead of running unconfined. With [`Bash::network_policy`] it reaches the
/// network only through the agent's own proxy, to the domains the policy allows. git, under
/// the wall,
/// runs nothing the config of a repository the agent could have written names: it refuses a
/// repository it finds inside the root other than the root's own (see [`Bash::nested_git`]),
/// and one named explicitly (`--git-dir`, `GIT_DIR`) runs with its hooks, fsmonitor, pager,
/// external diff, credential helper, editor and the like switched off.
///
/// The command's environment is built from an allow-list ([`DEFAULT_KEPT_ENV`]); variables
/// that look secret (`*_KEY`, `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, providers' variables) are
/// left out even when listed, unless passed on by name with [`Bash::pass_env`].
///
/// [`PROTECTED_NAMES`]: super::PROTECTED_NAMES
/// [`SECRET_LOCATIONS`]: crate::secrets::SECRET_LOCATIONS
/// [`DEFAULT_KEPT_ENV`]: super::DEFAULT_KEPT_ENV
///
/// Unix only: elsewhere every call fails with an error that says so.
#[derive(Clone, Debug)]
pub struct Bash {
    sandbox: Sandbox,
    shell: OsString,
    default_timeout: Duration,
    max_output_bytes: usize,
    env: EnvPolicy,
    policy: SandboxPolicy,
    network: Network,
    mount_view: bool,
    git_writes: bool,
    nested_git: bool,
    files: FilePolicy,
    home: Option<PathBuf>,
    leaves_wall: Option<LeavesWall>,
}

impl Bash {
    /// `bash` confined to `sandbox`, with the default environment allow-list.
    pub fn new(sandbox: Sandbox) -> Self {
        Self {
            sandbox,
            shell: OsString::from("bash"),
            default_timeout: DEFAULT_TIMEOUT,
            max_output_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            env: EnvPolicy::default(),
            policy: SandboxPolicy::default(),
            network: Network::Off,
            mount_view: true,
            git_writes: false,
            nested_git: false,
            files: FilePolicy::default(),
            home: None,
            leaves_wall: None,
        }
    }

    /// What the OS sandbox lets a command do (default:
    /// [`WorkspaceWrite`](SandboxPolicy::WorkspaceWrite)).
    pub fn sandbox_policy(mut self, policy: SandboxPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Which commands run outside the OS sandbox: `decide(command, requested)`, where
    /// `requested` is the call's `dangerouslyDisableSandbox`, says so for one command (mux-
    /// permission's `Permissions::bash` sets it from `sandbox.excludedCommands`, and its
    /// verdict asks for every such command). Without it, every command runs inside.
    pub fn leaves_wall_when(
        mut self,
        decide: impl Fn(&str, bool) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.leaves_wall = Some(LeavesWall(std::sync::Arc::new(decide)));
        self
    }

    /// Lets sandboxed commands open Internet sockets to anywhere (default: off), or, with
    /// `false`, takes the network away again (a [`Bash::network_policy`] too). `FullAccess`
    /// always has the network. Of this and [`Bash::network_policy`], the last call wins.
    pub fn network(mut self, allowed: bool) -> Self {
        self.network = if allowed { Network::Open } else { Network::Off };
        self
    }

    /// Gives sandboxed commands the network through the agent's own proxy, which lets a
    /// connection out only to the destinations `policy` allows (see [`NetworkPolicy`]).
    ///
    /// Each command then runs in a network namespace of its own with loopback only, where
    /// an HTTP and SOCKS5 proxy on `127.0.0.1:3128` is its one way out; `HTTP_PROXY`,
    /// `HTTPS_PROXY`, `ALL_PROXY` (`socks5h://`) and their lower-case forms point there, and
    /// `NO_PROXY` is empty. A program that ignores them has no route. The command cannot
    /// create Unix sockets unless the policy allows them (`socketpair` still works). The
    /// proxy runs in the agent's process for as long as the call does, so the call must run
    /// on a tokio runtime. Needs the mount view ([`Bash::mount_view`]); ignored under
    /// `FullAccess`. Of this and [`Bash::network`], the last call wins.
    pub fn network_policy(mut self, policy: NetworkPolicy) -> Self {
        self.network = Network::Proxy(policy);
        self
    }

    /// Whether commands see the file system through the read-only mount view (default: on).
    /// The view needs unprivileged user namespaces; where the machine has none, a call fails
    /// with [`OsSandboxError::Unsupported`](super::OsSandboxError::Unsupported) unless this is
    /// turned off. Without it, Landlock alone bounds the files: writes outside the root still
    /// fail, but metadata changes there (`chmod`, `touch -d`, `setxattr`) do not, and the
    /// protected paths inside the root are writable.
    pub fn mount_view(mut self, on: bool) -> Self {
        self.mount_view = on;
        self
    }

    /// Lets git write its repository under `WorkspaceWrite` (default: off, `.git` is
    /// read-only). When on, `.git/config`, `.git/hooks`, `.git/info`, `.git/modules` and
    /// `.git/worktrees` stay read-only, so `git add` and `git commit` work but no hook or
    /// configuration can be planted through those; other files git reads from its directory
    /// (a `commondir` file, say) are then writable.
    pub fn git_writes(mut self, allowed: bool) -> Self {
        self.git_writes = allowed;
        self
    }

    /// Lets git open, under the wall, a repository it finds by itself inside the root (`cd
    /// vendor/lib && git log`) other than the root's own and its submodules and worktrees
    /// (default: off, git refuses it as another user's, as it refuses one the
    /// user's `safe.directory` does not list). Such a repository then runs with every program
    /// key its config can set neutral (hooks, fsmonitor, pager, external diff, credential
    /// helper, ssh command, editor), but the filter, diff and merge drivers its attributes name
    /// can still run: turn this on only for roots whose nested repositories the agent cannot
    /// have written. Repositories in the call's temp dir, which only the command itself can
    /// have made, are always opened (with neutral keys).
    pub fn nested_git(mut self, allowed: bool) -> Self {
        self.nested_git = allowed;
        self
    }

    /// What commands may read and write beyond the [`SandboxPolicy`]: hidden paths (with the
    /// default secret locations unless [`FilePolicy::secrets_visible`]), extra writable paths
    /// and paths kept read-only (default: [`FilePolicy::default`], which hides the secret
    /// locations of the home directory that exist). Ignored under `FullAccess`. A path that
    /// cannot be enforced fails the call with a typed [`OsSandboxError`](super::OsSandboxError)
    /// and the command is not run.
    pub fn file_policy(mut self, files: FilePolicy) -> Self {
        self.files = files;
        self
    }

    /// The home directory: commands get it as `HOME`, and `~` in the [`FilePolicy`] and the
    /// default secret locations are under it (default: the agent's `HOME`).
    pub fn home(mut self, home: impl Into<PathBuf>) -> Self {
        self.home = Some(home.into());
        self
    }

    /// Passes the variable `name` of the agent's environment on to commands, even one that
    /// looks secret (`.pass_env("GITHUB_TOKEN")`).
    pub fn pass_env(mut self, name: impl Into<String>) -> Self {
        self.env.pass(name.into());
        self
    }

    /// Runs commands with `shell -c` instead of `bash -c`.
    pub fn shell(mut self, shell: impl Into<OsString>) -> Self {
        self.shell = shell.into();
        self
    }

    /// The timeout of a call that gives none (capped at 600 s).
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.default_timeout = timeout.min(MAX_TIMEOUT);
        self
    }

    /// Keeps at most `bytes` bytes of output.
    pub fn max_output_bytes(mut self, bytes: usize) -> Self {
        self.max_output_bytes = bytes;
        self
    }

    /// Replaces the allow-list of variables commands get from the agent's environment
    /// (default: [`DEFAULT_KEPT_ENV`](super::DEFAULT_KEPT_ENV); `PREFIX*` matches a prefix).
    /// Variables that look secret stay out even when listed; see [`Bash::pass_env`].
    pub fn scrub_env<I, S>(mut self, keep: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.env.keep(keep.into_iter().map(Into::into).collect());
        self
    }

    fn timeout(&self, args: &BashArgs) -> Result<Duration, ToolError> {
        match args.timeout_ms {
            None => Ok(self.default_timeout),
            Some(0) => Err(ToolError::InvalidArguments(
                "timeout_ms must be at least 1".into(),
            )),
            Some(ms) if Duration::from_millis(ms) > MAX_TIMEOUT => {
                Err(ToolError::InvalidArguments(format!(
                    "timeout_ms {ms} is more than the maximum of {}",
                    MAX_TIMEOUT.as_millis()
                )))
            }
            Some(ms) => Ok(Duration::from_millis(ms)),
        }
    }
}

impl TypedTool for Bash {
    type Args = BashArgs;
    const NAME: &'static str = "bash";

    fn description(&self) -> String {
        "Runs a shell command with bash -c in the workspace root and returns its combined \
         stdout and stderr and exit code. Long output keeps its start and end. The command and \
         everything it started are killed at the timeout (timeout_ms, default 120000)."
            .into()
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::destructive()
            .with_open_world(true)
            .with_kind(ToolKind::Execute)
    }

    fn subject(&self, args: &BashArgs) -> Subject {
        Subject::command(&args.command)
    }

    async fn call(&self, args: BashArgs, cx: ToolContext) -> Result<ToolOutput, ToolError> {
        let timeout = self.timeout(&args)?;
        if args.command.trim().is_empty() {
            return Err(ToolError::InvalidArguments("command is empty".into()));
        }
        let root = self.sandbox.resolve_existing(".")?;
        let requested = args.dangerously_disable_sandbox.unwrap_or(false);
        if self
            .leaves_wall
            .as_ref()
            .is_some_and(|leaves| (leaves.0)(&args.command, requested))
        {
            let mut outside = self.clone();
            outside.policy = SandboxPolicy::FullAccess;
            return run::run(&outside, &args.command, root.real(), timeout, &cx).await;
        }
        run::run(self, &args.command, root.real(), timeout, &cx).await
    }
}

/// A command's network.
#[derive(Clone, Debug)]
enum Network {
    /// No Internet socket.
    Off,
    /// Every socket.
    Open,
    /// Through the agent's proxy, under a policy.
    Proxy(NetworkPolicy),
}

/// Output kept within a cap: the first half and the last half, with a count of what fell out
/// between them.
#[derive(Debug)]
pub(crate) struct HeadTail {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    head_cap: usize,
    tail_cap: usize,
    omitted: usize,
}

impl HeadTail {
    pub(crate) fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Self {
            head: Vec::new(),
            tail: VecDeque::new(),
            head_cap,
            tail_cap: cap - head_cap,
            omitted: 0,
        }
    }

    pub(crate) fn push(&mut self, mut bytes: &[u8]) {
        let room = self.head_cap - self.head.len();
        let to_head = room.min(bytes.len());
        self.head.extend_from_slice(&bytes[..to_head]);
        bytes = &bytes[to_head..];
        self.tail.extend(bytes);
        let excess = self.tail.len().saturating_sub(self.tail_cap);
        if excess > 0 {
            self.tail.drain(..excess);
            self.omitted += excess;
        }
    }

    /// Bytes that were dropped.
    pub(crate) fn omitted(&self) -> usize {
        self.omitted
    }

    /// The kept text, with a marker where bytes were dropped; no character is split.
    pub(crate) fn text(&self) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if self.omitted == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return String::from_utf8_lossy(&all).into_owned();
        }
        format!(
            "{}\n[… {} bytes of output omitted …]\n{}",
            decode_head(&self.head),
            self.omitted,
            decode_tail(&tail)
        )
    }
}

#[cfg(unix)]
mod run {
    use std::path::Path;
    use std::process::{ExitStatus, Stdio};
    use std::time::Duration;

    use rustix::process::{Pid, Signal, kill_process_group};
    use serde_json::json;
    use tokio::io::{AsyncRead, AsyncReadExt};
    use tokio::process::Command;
    use tokio::sync::mpsc;

    use super::{Bash, DRAIN_TIMEOUT, HeadTail};
    use crate::builtin::os_sandbox::{self, Confinement, Place, SandboxPolicy};
    use crate::builtin::text::Utf8Stream;
    use crate::{ToolContext, ToolError, ToolOutput};

    /// A process group that is killed when this is dropped, unless disarmed.
    struct GroupGuard {
        group: Option<Pid>,
    }

    impl GroupGuard {
        fn kill(&self) {
            if let Some(group) = self.group {
                // ESRCH (no process left in the group) is the outcome we want anyway.
                let _ = kill_process_group(group, Signal::KILL);
            }
        }

        fn disarm(&mut self) {
            self.group = None;
        }
    }

    impl Drop for GroupGuard {
        fn drop(&mut self) {
            self.kill();
        }
    }

    enum End {
        Exited(ExitStatus),
        TimedOut,
    }

    pub(super) async fn run(
        bash: &Bash,
        command: &str,
        root: &Path,
        timeout: Duration,
        cx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        let mut cmd = Command::new(&bash.shell);
        cmd.arg("-c")
            .arg(command)
            .current_dir(root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .env_clear()
            .envs(bash.env.select(std::env::vars_os()))
            .env("PWD", root);
        // The call's effect key, for a command that can make its effect once (an
        // idempotency key it sends, a marker it checks). A key no environment can hold
        // (a NUL from a hostile call id) is left out rather than fail the command.
        let effect = cx.effect_key();
        if !effect.as_str().contains('\0') {
            cmd.env("MUX_EFFECT_KEY", effect.as_str())
                .env("MUX_EFFECT_ATTEMPT", effect.attempt().to_string());
        }
        let scratch = tempfile::Builder::new()
            .prefix("mux-bash-")
            .tempdir()
            .map_err(|err| {
                ToolError::failed(format!("cannot create the command's temp dir: {err}"))
            })?;
        for name in ["TMPDIR", "TMP", "TEMP"] {
            cmd.env(name, scratch.path());
        }
        let egress = match (&bash.network, bash.policy) {
            (
                super::Network::Proxy(policy),
                SandboxPolicy::ReadOnly | SandboxPolicy::WorkspaceWrite,
            ) => {
                cmd.envs(crate::builtin::egress::proxy_env());
                let mut policy = policy.clone();
                // A domain no rule covers is asked about on the run's face, for this call.
                if policy.asker.is_none()
                    && let Some(askers) = cx.resources().get::<crate::builtin::CallDomainAskers>()
                {
                    policy.asker = Some(askers.0.for_call(cx.call_id()));
                }
                Some(policy)
            }
            _ => None,
        };
        if let Some(home) = &bash.home {
            cmd.env("HOME", home);
        }
        let home = bash
            .home
            .clone()
            .or_else(|| std::env::var_os("HOME").map(Into::into))
            .filter(|home: &std::path::PathBuf| home.is_absolute());
        let files = bash.files.resolve(&Place {
            root,
            scratch: scratch.path(),
            home: home.as_deref(),
            policy: bash.policy,
            mount_view: bash.mount_view,
        })?;
        let confinement = Confinement {
            policy: bash.policy,
            network: matches!(bash.network, super::Network::Open),
            egress,
            root: root.to_path_buf(),
            scratch: scratch.path().to_path_buf(),
            mount_view: bash.mount_view,
            git_writes: bash.git_writes,
            nested_git: bash.nested_git,
            files,
        };
        let program = bash.shell.to_string_lossy().into_owned();
        // The placeholders of absent protected paths live until the command has ended.
        let os_sandbox::Spawned {
            mut child,
            placeholders,
            _proxy,
        } = os_sandbox::spawn(cmd, program, confinement)?;
        if let Some(id) = child.id() {
            placeholders.started(id);
        }
        let mut guard = GroupGuard {
            group: child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .and_then(Pid::from_raw),
        };

        let (tx, mut rx) = mpsc::channel::<Vec<u8>>(32);
        let readers = [
            child.stdout.take().map(|out| forward(out, tx.clone())),
            child.stderr.take().map(|err| forward(err, tx.clone())),
        ];
        drop(tx);

        let mut kept = HeadTail::new(bash.max_output_bytes);
        let mut stream = Utf8Stream::default();
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        let end = loop {
            tokio::select! {
                () = cx.cancellation().cancelled() => {
                    guard.kill();
                    if let Ok(Ok(_)) = tokio::time::timeout(DRAIN_TIMEOUT, child.wait()).await {
                        // Reaped: the group id must not be signalled again once it may be reused.
                        guard.disarm();
                    }
                    return Err(ToolError::Cancelled);
                }
                () = &mut deadline => {
                    guard.kill();
                    let _ = tokio::time::timeout(DRAIN_TIMEOUT, child.wait()).await;
                    break End::TimedOut;
                }
                Some(chunk) = rx.recv() => {
                    kept.push(&chunk);
                    let text = stream.push(&chunk);
                    if !text.is_empty() {
                        cx.output(text).await;
                    }
                }
                status = child.wait() => break End::Exited(status?),
            }
        };
        // Background jobs the command left behind die with it; then the pipes close.
        guard.kill();
        guard.disarm();
        let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
            while let Some(chunk) = rx.recv().await {
                kept.push(&chunk);
                let text = stream.push(&chunk);
                if !text.is_empty() {
                    cx.output(text).await;
                }
            }
        })
        .await;
        for reader in readers.into_iter().flatten() {
            reader.abort();
        }
        let rest = stream.finish();
        if !rest.is_empty() {
            cx.output(rest).await;
        }

        let mut text = kept.text();
        let (note, is_error, code) = match end {
            End::TimedOut => (
                format!(
                    "[timed out after {} ms; the command and its child processes were killed]",
                    timeout.as_millis()
                ),
                true,
                None,
            ),
            End::Exited(status) => match status.code() {
                Some(0) => (String::new(), false, Some(0)),
                Some(code) => (format!("[exit code {code}]"), true, Some(code)),
                None => (format!("[terminated by a signal: {status}]"), true, None),
            },
        };
        if text.is_empty() && note.is_empty() {
            text.push_str("(no output)");
        }
        if drained.is_err() {
            text.push_str("\n[output pipes stayed open after the command exited; stopped reading]");
        }
        if !note.is_empty() {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&note);
        }
        let mut output = ToolOutput::text(text)
            .with_metadata("exit_code", json!(code))
            .with_metadata("timed_out", json!(matches!(end, End::TimedOut)))
            .with_metadata("omitted_bytes", json!(kept.omitted()));
        output.is_error = is_error;
        Ok(output)
    }

    /// Copies a pipe into `tx` chunk by chunk until it closes.
    fn forward(
        mut pipe: impl AsyncRead + Unpin + Send + 'static,
        tx: mpsc::Sender<Vec<u8>>,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            loop {
                match pipe.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).await.is_err() {
                            break;
                        }
                    }
                }
            }
        })
    }
}

#[cfg(not(unix))]
mod run {
    use std::path::Path;
    use std::time::Duration;

    use super::Bash;
    use crate::{ToolContext, ToolError, ToolOutput};

    pub(super) async fn run(
        _bash: &Bash,
        _command: &str,
        _root: &Path,
        _timeout: Duration,
        _cx: &ToolContext,
    ) -> Result<ToolOutput, ToolError> {
        Err(ToolError::failed(
            "the bash tool runs on Unix only (it needs process groups to kill a command's children)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::HeadTail;

    #[test]
    fn short_output_is_kept_whole() {
        let mut kept = HeadTail::new(100);
        kept.push(b"hello ");
        kept.push(b"world");
        assert_eq!(kept.text(), "hello world");
        assert_eq!(kept.omitted(), 0);
    }

    #[test]
    fn long_output_keeps_head_and_tail_without_splitting_characters() {
        let mut kept = HeadTail::new(9);
        for _ in 0..10 {
            kept.push("日本語".as_bytes());
        }
        let text = kept.text();
        assert!(text.starts_with("日\n"), "{text}");
        assert!(text.ends_with("\n語"), "{text}");
        assert!(text.contains("[… 81 bytes of output omitted …]"), "{text}");
        assert!(!text.contains('\u{FFFD}'));
    }
}
