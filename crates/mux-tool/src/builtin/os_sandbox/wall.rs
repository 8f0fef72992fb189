//! The wall around any command mux starts, not only `bash`: an MCP stdio server, a hook. The
//! same OS sandbox ([`SandboxPolicy`]), for a process that may live as long as the agent.
//!
//! [`Wall::spawn`] starts the command in its root, with a temp dir of its own (`TMPDIR`,
//! `TMP`, `TEMP`), as the leader of a new session and process group. The [`WalledChild`] it
//! returns keeps what the wall needs (the placeholders of absent protected paths, the temp
//! dir) for as long as it lives; dropping it kills the whole process group.

use std::path::{Path, PathBuf};

use super::{Confinement, FilePolicy, OsSandboxError, Place, SandboxPolicy, protected};
use crate::ToolError;

/// A wall for one command: its policy, its root and whether it may open Internet sockets.
///
/// ```no_run
/// use mux_tool::builtin::{SandboxPolicy, Wall};
///
/// # async fn run() -> Result<(), mux_tool::ToolError> {
/// let mut command = tokio::process::Command::new("python3");
/// command.arg("server.py").stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
/// let mut server = Wall::new(SandboxPolicy::WorkspaceWrite, "/srv/project").spawn(command)?;
/// let stdin = server.child_mut().stdin.take();
/// # let _ = stdin;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wall {
    policy: SandboxPolicy,
    root: PathBuf,
    network: bool,
    files: FilePolicy,
}

impl Wall {
    /// A wall of `policy` around `root`, the command's working directory (writable under
    /// [`SandboxPolicy::WorkspaceWrite`], except its protected paths). No network.
    pub fn new(policy: SandboxPolicy, root: impl Into<PathBuf>) -> Self {
        Self {
            policy,
            root: root.into(),
            network: false,
            files: FilePolicy::default(),
        }
    }

    /// What the command may not read and where else it may write (default: the secret
    /// locations of the home directory hidden, nothing else).
    pub fn file_policy(mut self, files: FilePolicy) -> Self {
        self.files = files;
        self
    }

    /// Whether the command may open Internet sockets (off unless set).
    pub fn network(mut self, allowed: bool) -> Self {
        self.network = allowed;
        self
    }

    /// The policy.
    pub fn policy(&self) -> SandboxPolicy {
        self.policy
    }

    /// The root, as given.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether Internet sockets stay open.
    pub fn allows_network(&self) -> bool {
        self.network
    }

    /// Starts `command` behind the wall, in the root (its real path), with a temp dir of its
    /// own as `TMPDIR`, `TMP` and `TEMP`. Its environment is otherwise left as `command`
    /// has it: clear it first for a command that must not see the agent's.
    ///
    /// Fails, without running the command, when the root is not an existing directory, when
    /// the machine cannot enforce the policy ([`OsSandboxError::Unsupported`]) or when the
    /// program cannot be started.
    pub fn spawn(&self, mut command: tokio::process::Command) -> Result<WalledChild, ToolError> {
        let program = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        let root = self.real_root()?;
        let scratch = tempfile::Builder::new()
            .prefix("mux-wall-")
            .tempdir()
            .map_err(|err| self.setup(format!("cannot create the temp dir: {err}")))?;
        command.current_dir(&root).kill_on_drop(true);
        for name in ["TMPDIR", "TMP", "TEMP"] {
            command.env(name, scratch.path());
        }
        let confinement = confinement(self, root, scratch.path())?;
        let spawned = super::spawn(command, program, confinement)?;
        let group = spawned.child.id();
        if let Some(group) = group {
            spawned.placeholders.started(group);
        }
        Ok(WalledChild {
            child: spawned.child,
            group,
            _placeholders: spawned.placeholders,
            _scratch: scratch,
        })
    }

    /// The root's real path; an error naming it when it is not an existing directory.
    fn real_root(&self) -> Result<PathBuf, ToolError> {
        let real = std::fs::canonicalize(&self.root).map_err(|err| {
            self.setup(format!(
                "the root {} is unusable: {err}",
                self.root.display()
            ))
        })?;
        if !real.is_dir() {
            return Err(self.setup(format!(
                "the root {} is not a directory",
                self.root.display()
            )));
        }
        Ok(real)
    }

    fn setup(&self, reason: String) -> ToolError {
        OsSandboxError::Setup {
            policy: self.policy,
            reason,
        }
        .into()
    }
}

/// What `wall` confines a command to: the one place a [`Wall`] becomes a [`Confinement`].
/// The read-only mount view is required; git may neither write the root's repository nor
/// open a nested one (a long-lived server has no business in either).
fn confinement(wall: &Wall, root: PathBuf, scratch: &Path) -> Result<Confinement, ToolError> {
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .filter(|home| home.is_absolute());
    let files = wall.files.resolve(&Place {
        root: &root,
        scratch,
        home: home.as_deref(),
        policy: wall.policy,
        mount_view: true,
    })?;
    Ok(Confinement {
        policy: wall.policy,
        network: wall.network,
        egress: None,
        root,
        scratch: scratch.to_path_buf(),
        mount_view: true,
        git_writes: false,
        nested_git: false,
        files,
    })
}

/// A command started behind a [`Wall`]: the leader of its own session and process group.
/// Dropping it kills the whole group (SIGKILL), then releases the wall's placeholders and
/// removes its temp dir.
#[derive(Debug)]
pub struct WalledChild {
    child: tokio::process::Child,
    /// The process group (the leader's id), kept because the leader may be reaped before
    /// the rest of its group is gone.
    group: Option<u32>,
    _placeholders: protected::Placeholders,
    _scratch: tempfile::TempDir,
}

impl WalledChild {
    /// The started process: take its pipes, wait for it.
    pub fn child_mut(&mut self) -> &mut tokio::process::Child {
        &mut self.child
    }

    /// The leader's process id, which is also the id of its process group; `None` once it
    /// has been reaped.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// The id of the process group, even after the leader was reaped.
    pub fn group(&self) -> Option<u32> {
        self.group
    }

    /// Asks every process of the group to end (SIGTERM). An error (`ESRCH`) means no
    /// process is left in it.
    #[cfg(unix)]
    pub fn terminate_group(&self) -> std::io::Result<()> {
        self.signal_group(rustix::process::Signal::TERM)
    }

    /// Kills every process of the group (SIGKILL). An error (`ESRCH`) means no process is
    /// left in it.
    #[cfg(unix)]
    pub fn kill_group(&self) -> std::io::Result<()> {
        self.signal_group(rustix::process::Signal::KILL)
    }

    #[cfg(unix)]
    fn signal_group(&self, signal: rustix::process::Signal) -> std::io::Result<()> {
        let group = self
            .group
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw)
            .ok_or_else(|| std::io::Error::other("the command has no process group"))?;
        rustix::process::kill_process_group(group, signal).map_err(std::io::Error::from)
    }

    /// Whether any process of the group is still there (zombies included).
    #[cfg(unix)]
    pub fn group_alive(&self) -> bool {
        self.group
            .and_then(|id| rustix::process::Pid::from_raw(i32::try_from(id).ok()?))
            .is_some_and(|pid| rustix::process::test_kill_process_group(pid).is_ok())
    }
}

impl Drop for WalledChild {
    fn drop(&mut self) {
        // ESRCH (no process left) is the outcome we want anyway.
        #[cfg(unix)]
        let _ = self.kill_group();
        let _ = self.child.start_kill();
    }
}
