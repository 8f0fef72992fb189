//! Landlock: the file-system half of the OS sandbox. The ruleset is built by the parent and
//! enforced by the child after `fork` (after the read-only view, since a Landlock domain
//! forbids mounting).

use std::os::fd::{OwnedFd, RawFd};
use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetError, Scope,
    path_beneath_rules,
};

use super::{Confinement, OsSandboxError, SandboxPolicy};

/// The newest ABI whose rights and scopes are asked for; a kernel that offers less enforces
/// what it can (best effort), one that offers none is refused.
const ABI_ASKED: ABI = ABI::V7;

/// Devices every command may read and write (`> /dev/null` is everywhere in scripts). No
/// terminal: the command has none.
const DEVICES: [&str; 5] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// The ruleset for `confinement`: read the whole file system, write only beneath the
/// writable directories, signal and connect to abstract sockets only within the sandbox.
pub(super) fn ruleset(confinement: &Confinement) -> Result<OwnedFd, OsSandboxError> {
    build(confinement, confinement.writable())
}

/// The ruleset of a sealed program: read the whole file system, write nothing but the
/// devices.
pub(super) fn sealed_ruleset(confinement: &Confinement) -> Result<OwnedFd, OsSandboxError> {
    build(confinement, Vec::new())
}

fn build(confinement: &Confinement, writable: Vec<PathBuf>) -> Result<OwnedFd, OsSandboxError> {
    let setup = |err: RulesetError| OsSandboxError::Setup {
        policy: confinement.policy,
        reason: format!("Landlock: {err}"),
    };
    let created = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI_ASKED))
        .map_err(setup)?
        .scope(Scope::from_all(ABI_ASKED))
        .map_err(setup)?
        .create()
        .map_err(setup)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(ABI_ASKED)))
        .map_err(setup)?
        .add_rules(path_beneath_rules(DEVICES, AccessFs::from_all(ABI_ASKED)))
        .map_err(setup)?
        .add_rules(path_beneath_rules(writable, AccessFs::from_all(ABI_ASKED)))
        .map_err(setup)?;
    enforced(created.into(), confinement.policy)
}

/// Fails closed: a kernel that enforces nothing gives no ruleset, which is an error, never a
/// silent pass.
fn enforced(ruleset: Option<OwnedFd>, policy: SandboxPolicy) -> Result<OwnedFd, OsSandboxError> {
    ruleset.ok_or_else(|| OsSandboxError::Unsupported {
        policy,
        reason: "the kernel does not enforce Landlock (it needs Linux 5.13 or later with Landlock enabled)".into(),
    })
}

/// In the child: enforces `ruleset` on the calling process (`no_new_privs` is already set).
pub(super) fn restrict(ruleset: RawFd) -> Result<(), ()> {
    // SAFETY: a plain system call on a file descriptor the parent opened.
    #[allow(unsafe_code)]
    let ret = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0) };
    if ret < 0 { Err(()) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_without_landlock_is_refused() {
        let err = enforced(None, SandboxPolicy::WorkspaceWrite).unwrap_err();
        assert!(matches!(err, OsSandboxError::Unsupported { .. }));
        assert!(err.to_string().contains("Landlock"), "{err}");
    }
}
