//! Landlock: the file-system half of the OS sandbox, applied to the spawning thread so the
//! command inherits it.

use landlock::{
    ABI, Access, AccessFs, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetError, RulesetStatus,
    path_beneath_rules,
};

use super::{Confinement, OsSandboxError};

/// The newest ABI whose rights are asked for; older kernels enforce what they can.
const ABI_ASKED: ABI = ABI::V5;

/// Devices every command may read and write (`> /dev/null` is everywhere in scripts).
const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Restricts the calling thread, and every process it starts from now on, to reading the
/// whole file system and writing only beneath `confinement.writable`.
pub(super) fn restrict_this_thread(confinement: &Confinement) -> Result<(), OsSandboxError> {
    let setup = |err: RulesetError| OsSandboxError::Setup {
        policy: confinement.policy,
        reason: format!("Landlock: {err}"),
    };
    let status = Ruleset::default()
        .handle_access(AccessFs::from_all(ABI_ASKED))
        .map_err(setup)?
        .create()
        .map_err(setup)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(ABI_ASKED)))
        .map_err(setup)?
        .add_rules(path_beneath_rules(DEVICES, AccessFs::from_all(ABI_ASKED)))
        .map_err(setup)?
        .add_rules(path_beneath_rules(
            &confinement.writable,
            AccessFs::from_all(ABI_ASKED),
        ))
        .map_err(setup)?
        .restrict_self()
        .map_err(setup)?;
    enforced(status.ruleset, confinement)
}

/// Fails closed: a kernel that enforces nothing is an error, never a silent pass.
fn enforced(status: RulesetStatus, confinement: &Confinement) -> Result<(), OsSandboxError> {
    match status {
        RulesetStatus::FullyEnforced | RulesetStatus::PartiallyEnforced => Ok(()),
        RulesetStatus::NotEnforced => Err(OsSandboxError::Unsupported {
            policy: confinement.policy,
            reason: "the kernel does not enforce Landlock (it needs Linux 5.13 or later with Landlock enabled)".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin::SandboxPolicy;

    #[test]
    fn a_kernel_without_landlock_is_refused() {
        let confinement = Confinement {
            policy: SandboxPolicy::WorkspaceWrite,
            network: false,
            writable: Vec::new(),
        };
        let err = enforced(RulesetStatus::NotEnforced, &confinement).unwrap_err();
        assert!(matches!(err, OsSandboxError::Unsupported { .. }));
        assert!(err.to_string().contains("Landlock"), "{err}");
        assert!(enforced(RulesetStatus::PartiallyEnforced, &confinement).is_ok());
    }
}
