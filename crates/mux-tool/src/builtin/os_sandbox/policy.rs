//! The policies of the OS sandbox, and why a command could not be started inside it.

use std::fmt;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// What a sandboxed command, and every process it starts, may do:
///
/// | policy | files | network | process tree |
/// |---|---|---|---|
/// | [`ReadOnly`](SandboxPolicy::ReadOnly) | read everywhere; write only the per-run temp dir and `/dev/null`-like devices | off | cannot leave the process group |
/// | [`WorkspaceWrite`](SandboxPolicy::WorkspaceWrite) (default) | read everywhere; write only the root (but not its protected paths, see [`PROTECTED_NAMES`](crate::protected::PROTECTED_NAMES)) and the per-run temp dir | off | cannot leave the process group |
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
    /// A path of the [`FilePolicy`](super::FilePolicy) cannot be resolved, or would hide the place the command
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
