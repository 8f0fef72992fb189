//! The OS sandbox around `bash`: permission rules decide *whether* a command runs; this bounds
//! *what* an allowed command, and every process it starts, can do.
//!
//! On Linux, Landlock restricts the file system and a seccomp filter refuses Internet sockets
//! (`AF_UNIX` stays open), `io_uring`, and `setsid`/`setpgid`, so no descendant can leave the
//! process group that is killed when the command ends or is cancelled. Network access can be
//! turned back on with [`Bash::network`](super::Bash::network).
//!
//! Where the kernel cannot enforce a policy (no Landlock, another OS, an architecture seccomp
//! does not cover), a call under any policy but `FullAccess` fails with
//! [`OsSandboxError::Unsupported`]; it never runs unconfined.

#[cfg(target_os = "linux")]
mod files;
#[cfg(target_os = "linux")]
mod spawn;
#[cfg(target_os = "linux")]
mod syscalls;

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a sandboxed command, and every process it starts, may do:
///
/// | policy | files | network | process tree |
/// |---|---|---|---|
/// | [`ReadOnly`](SandboxPolicy::ReadOnly) | read everywhere; write only the per-run temp dir and `/dev/null`-like devices | off | cannot leave the process group |
/// | [`WorkspaceWrite`](SandboxPolicy::WorkspaceWrite) (default) | read everywhere; write only the root and the per-run temp dir | off | cannot leave the process group |
/// | [`FullAccess`](SandboxPolicy::FullAccess) | every right of the process | on | process group killed, but a process may leave it |
///
/// Landlock enforces the files, seccomp the network and the process tree; see
/// [`OsSandboxError::Unsupported`] for machines that cannot.
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
    /// Directories the command may write beneath (the root and the per-run temp dir).
    pub(crate) writable: Vec<PathBuf>,
}

#[cfg(target_os = "linux")]
pub(crate) use spawn::spawn;

/// Starts `command`; anywhere but Linux, only the `FullAccess` policy can.
#[cfg(not(target_os = "linux"))]
pub(crate) async fn spawn(
    mut command: tokio::process::Command,
    program: String,
    confinement: Confinement,
) -> Result<tokio::process::Child, crate::ToolError> {
    if confinement.policy != SandboxPolicy::FullAccess {
        return Err(crate::ToolError::other(OsSandboxError::Unsupported {
            policy: confinement.policy,
            reason: "the OS sandbox needs Linux (Landlock and seccomp)".into(),
        }));
    }
    command
        .spawn()
        .map_err(|err| crate::ToolError::failed(format!("cannot start {program}: {err}")))
}
