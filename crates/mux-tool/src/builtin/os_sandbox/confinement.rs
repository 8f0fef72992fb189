//! What one command is confined to.

use std::path::PathBuf;

use super::file_policy::Files;
use super::policy::SandboxPolicy;

/// What one command is confined to.
#[derive(Clone, Debug)]
pub(crate) struct Confinement {
    pub(crate) policy: SandboxPolicy,
    /// Whether Internet sockets stay open.
    pub(crate) network: bool,
    /// The network through the agent's proxy, in a network namespace of the command's own
    /// (needs the mount view); `network` is then false.
    pub(crate) egress: Option<super::super::NetworkPolicy>,
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
