//! The OS sandbox around `bash`: permission rules decide *whether* a command runs; this bounds
//! *what* an allowed command, and every process it starts, can do.
//!
//! On Linux the child, between `fork` and `exec` (module `child`), in this order:
//! 1. starts a new session, so it has no controlling terminal;
//! 2. enters a user and a mount namespace of its own (module `view`) in which the whole file
//!    system is mounted read-only, except the root, the per-call temp dir and the extra
//!    writable paths of the [`FilePolicy`], with the protected paths inside the root (module
//!    `protected`) and the policy's `deny_write` paths read-only again, and the hidden paths
//!    (the default secret locations, [`crate::secrets`], and the policy's `deny_read`)
//!    covered by something empty (module `file_policy` resolves them before the fork);
//!    (before that, the parent sets git's configuration so that a repository the agent could
//!    have written runs nothing its config names: module `git`);
//! 3. drops every capability and sets `no_new_privs`;
//! 4. restricts itself with Landlock (module `files`) at the best ABI the kernel offers, with
//!    signal and abstract-socket scoping where the kernel has them;
//! 5. installs a seccomp filter (module `syscalls`) that refuses Internet sockets (`AF_UNIX`
//!    stays open), `io_uring`, `setsid`/`setpgid` (so no descendant can leave the process
//!    group that is killed when the command ends) and the terminal injection ioctls
//!    `TIOCSTI` and `TIOCLINUX`.
//!
//! With a [`NetworkPolicy`](super::NetworkPolicy) ([`Bash::network_policy`](super::Bash::network_policy)),
//! step 2 also enters a network namespace with loopback only, in which the child listens on
//! the proxy port and hands the listener to the agent (module `loopback`), and step 5 lets
//! Internet sockets through (they reach nothing but loopback) while refusing `AF_UNIX` ones
//! unless the policy allows Unix sockets. The agent serves its egress proxy on that listener
//! for as long as the command runs. [`Bash::network`](super::Bash::network) opens every
//! socket instead.
//! Where the kernel cannot enforce a policy (no Landlock, no user namespaces, another OS, an
//! architecture seccomp does not cover), a call under any policy but `FullAccess` fails with
//! [`OsSandboxError::Unsupported`]; it never runs unconfined.

#[cfg(target_os = "linux")]
mod child;
mod file_policy;
#[cfg(target_os = "linux")]
mod files;
#[cfg(target_os = "linux")]
mod git;
#[cfg(target_os = "linux")]
mod loopback;
mod placeholders;
#[cfg(target_os = "linux")]
mod privileges;
mod protected;
#[cfg(target_os = "linux")]
mod reaper;
#[cfg(target_os = "linux")]
mod spare;
#[cfg(target_os = "linux")]
mod spawn;
#[cfg(target_os = "linux")]
mod step;
#[cfg(target_os = "linux")]
mod syscalls;
#[cfg(target_os = "linux")]
mod view;
mod wall;

pub use crate::protected::PROTECTED_NAMES;
pub use file_policy::FilePolicy;
pub(crate) use file_policy::{Files, Place};
#[doc(hidden)]
pub use placeholders::set_placeholder_linger;
#[cfg(target_os = "linux")]
pub use spare::{SPARE_MAX_BYTES, SPARE_MAX_STRINGS, SealedChild, SealedOutput, SealedSpare};
pub use wall::{Wall, WalledChild};

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a sandboxed command, and every process it starts, may do:
///
/// | policy | files | network | process tree |
/// |---|---|---|---|
/// | [`ReadOnly`](SandboxPolicy::ReadOnly) | read everywhere; write only the per-run temp dir and `/dev/null`-like devices | off | cannot leave the process group |
/// | [`WorkspaceWrite`](SandboxPolicy::WorkspaceWrite) (default) | read everywhere; write only the root (but not its protected paths, see [`PROTECTED_NAMES`]) and the per-run temp dir | off | cannot leave the process group |
/// | [`FullAccess`](SandboxPolicy::FullAccess) | every right of the process | on | process group killed, but a process may leave it |
///
/// A read-only mount view (user and mount namespaces) and Landlock enforce the files, seccomp
/// the network, the process tree and the terminal; see [`OsSandboxError::Unsupported`] for
/// machines that cannot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SandboxPolicy {
    /// Read everywhere, write only the per-run temp dir; no network.
    ReadOnly,
    /// Read everywhere, write only inside the root and the per-run temp dir; no network.
    #[default]
    WorkspaceWrite,
    /// No OS sandbox: the command has every right of the process. An explicit opt-in.
    FullAccess,
}

impl SandboxPolicy {
    /// The name used in settings and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "readOnly",
            Self::WorkspaceWrite => "workspaceWrite",
            Self::FullAccess => "fullAccess",
        }
    }
}

impl fmt::Display for SandboxPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a command could not be started inside the OS sandbox.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OsSandboxError {
    /// This machine cannot enforce the policy; the command was not run.
    #[error(
        "the OS sandbox cannot enforce the {policy} policy on this machine: {reason}; the command was not run (SandboxPolicy::FullAccess opts out of the sandbox)"
    )]
    Unsupported {
        /// The policy asked for.
        policy: SandboxPolicy,
        /// What the machine lacks.
        reason: String,
    },
    /// A path of the [`FilePolicy`] cannot be resolved, or would hide the place the command
    /// runs in; the command was not run.
    #[error("the file policy ({policy} policy) cannot use {}: {reason}; the command was not run", path.display())]
    FilePolicy {
        /// The policy asked for.
        policy: SandboxPolicy,
        /// The path as given.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Paths must be hidden or kept read-only beneath a writable place, which only the mount
    /// view can do, and it is off; the command was not run.
    #[error(
        "the OS sandbox ({policy} policy) can hide paths and keep them read-only inside writable places only with the mount view, which is off (Bash::mount_view(false)); paths: {}; the command was not run (FilePolicy::secrets_visible or a narrower FilePolicy opts out)",
        paths.iter().map(|path| path.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    NeedsMountView {
        /// The policy asked for.
        policy: SandboxPolicy,
        /// The paths that need the view.
        paths: Vec<PathBuf>,
    },
    /// The sandbox could not be set up.
    #[error("cannot set up the OS sandbox ({policy} policy): {reason}")]
    Setup {
        /// The policy asked for.
        policy: SandboxPolicy,
        /// What failed.
        reason: String,
    },
}

impl From<OsSandboxError> for crate::ToolError {
    fn from(error: OsSandboxError) -> Self {
        crate::ToolError::other(error)
    }
}

/// What one command is confined to.
#[derive(Clone, Debug)]
pub(crate) struct Confinement {
    pub(crate) policy: SandboxPolicy,
    /// Whether Internet sockets stay open.
    pub(crate) network: bool,
    /// The network through the agent's proxy, in a network namespace of the command's own
    /// (needs the mount view); `network` is then false.
    pub(crate) egress: Option<super::NetworkPolicy>,
    /// The root (the command's working directory); writable under `WorkspaceWrite`, except
    /// its protected paths.
    pub(crate) root: PathBuf,
    /// The per-call temp dir, always writable.
    pub(crate) scratch: PathBuf,
    /// Whether the read-only mount view (user and mount namespaces) is required; without it
    /// only Landlock bounds the files, and metadata outside the root stays writable.
    pub(crate) mount_view: bool,
    /// Whether git may write its repository (`.git` stays writable except its config, hooks
    /// and info).
    pub(crate) git_writes: bool,
    /// Whether git may open the repositories it finds inside the writable places other than
    /// the root's own (with every program key neutral; module `git`).
    pub(crate) nested_git: bool,
    /// The resolved file policy: hidden, extra writable and read-only paths.
    pub(crate) files: Files,
}

impl Confinement {
    /// Directories the command may write beneath, outermost first.
    pub(crate) fn writable(&self) -> Vec<PathBuf> {
        let mut dirs = match self.policy {
            SandboxPolicy::ReadOnly => vec![self.scratch.clone()],
            _ => vec![self.root.clone(), self.scratch.clone()],
        };
        dirs.extend(self.files.allow_write.iter().cloned());
        dirs.sort_by_key(|dir| dir.components().count());
        dirs
    }
}

/// A started command, and what must live as long as it runs.
#[derive(Debug)]
pub(crate) struct Spawned {
    /// The command.
    pub(crate) child: tokio::process::Child,
    /// Placeholders that keep absent protected paths from being created; removed on drop.
    pub(crate) placeholders: protected::Placeholders,
    /// The command's egress proxy, stopped on drop.
    pub(crate) _proxy: Option<super::egress::Proxy>,
}

#[cfg(target_os = "linux")]
pub(crate) use spawn::spawn;

/// Seals `command` under the tightest wall before it is spawned: a new session, no
/// capability, the file system read-only (Landlock), no socket of any family (seccomp), no way
/// to leave its process group. For a program that must only read its input and print, such as
/// bash reading a command it must not run (mux-permission's reading of shell commands).
///
/// Fails with [`OsSandboxError::Unsupported`] where the kernel cannot enforce it.
pub fn seal(command: &mut std::process::Command) -> Result<(), OsSandboxError> {
    #[cfg(target_os = "linux")]
    {
        spawn::seal(command)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = command;
        Err(OsSandboxError::Unsupported {
            policy: SandboxPolicy::ReadOnly,
            reason: "the OS sandbox needs Linux (Landlock and seccomp)".into(),
        })
    }
}

/// Starts `command`; anywhere but Linux, only the `FullAccess` policy can.
#[cfg(not(target_os = "linux"))]
pub(crate) fn spawn(
    mut command: tokio::process::Command,
    program: String,
    confinement: Confinement,
) -> Result<Spawned, crate::ToolError> {
    if confinement.policy != SandboxPolicy::FullAccess {
        return Err(crate::ToolError::other(OsSandboxError::Unsupported {
            policy: confinement.policy,
            reason: "the OS sandbox needs Linux (Landlock and seccomp)".into(),
        }));
    }
    command.process_group(0);
    let child = command
        .spawn()
        .map_err(|err| crate::ToolError::failed(format!("cannot start {program}: {err}")))?;
    Ok(Spawned {
        child,
        placeholders: protected::Placeholders::default(),
        _proxy: None,
    })
}
