//! seccomp: the system-call half of the OS sandbox, installed in the child between `fork` and
//! `exec`, last (after it started its own session).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use super::{Confinement, OsSandboxError};

/// The filter for a command: `setsid` and `setpgid` refused (no descendant can leave the
/// process group that is killed with the command), `ioctl` `TIOCSTI` and `TIOCLINUX` refused
/// (no input pushed into a terminal, whatever descriptor it comes through), and without
/// network, sockets of any family but `AF_UNIX` and `io_uring` (which could open them unseen)
/// refused too; under the egress proxy, `AF_INET` and `AF_INET6` are allowed (the network
/// namespace has loopback only) and `AF_UNIX` is refused unless the policy allows Unix
/// sockets. Refused calls fail with `EPERM`, which the command reports.
pub(super) fn filter(confinement: &Confinement) -> Result<BpfProgram, OsSandboxError> {
    build(confinement, false)
}

fn build(confinement: &Confinement, no_sockets: bool) -> Result<BpfProgram, OsSandboxError> {
    let fail = |reason: String| OsSandboxError::Setup {
        policy: confinement.policy,
        reason: format!("seccomp: {reason}"),
    };
    let arch =
        TargetArch::try_from(std::env::consts::ARCH).map_err(|_| OsSandboxError::Unsupported {
            policy: confinement.policy,
            reason: format!(
                "seccomp filters are not built for the {} architecture",
                std::env::consts::ARCH
            ),
        })?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_setsid, Vec::new());
    rules.insert(libc::SYS_setpgid, Vec::new());
    // The kernel reads the request as a 32-bit value, so only the low half is compared.
    #[allow(clippy::unnecessary_cast)] // `Ioctl` is `c_ulong` with glibc, `c_int` with musl.
    let request = |value: libc::Ioctl| {
        SeccompCondition::new(1, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, value as u64)
            .and_then(|cond| SeccompRule::new(vec![cond]))
            .map_err(|err| fail(err.to_string()))
    };
    rules.insert(
        libc::SYS_ioctl,
        vec![request(libc::TIOCSTI)?, request(libc::TIOCLINUX)?],
    );
    if no_sockets {
        rules.insert(libc::SYS_socket, Vec::new());
        rules.insert(libc::SYS_socketpair, Vec::new());
        rules.insert(libc::SYS_io_uring_setup, Vec::new());
    } else if !confinement.network {
        // The families a command may open: Unix sockets without network; under the egress
        // proxy, Internet sockets (its namespace has loopback only) and Unix sockets only if
        // the policy allows them (a host process's socket could relay past the proxy).
        let families: &[i32] = match &confinement.egress {
            None => &[libc::AF_UNIX],
            Some(policy) if policy.unix_sockets.is_empty() => &[libc::AF_INET, libc::AF_INET6],
            Some(_) => &[libc::AF_UNIX, libc::AF_INET, libc::AF_INET6],
        };
        let other = families
            .iter()
            .map(|&family| {
                SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, family as u64)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|err| fail(err.to_string()))?;
        let rule = SeccompRule::new(other).map_err(|err| fail(err.to_string()))?;
        rules.insert(libc::SYS_socket, vec![rule]);
        rules.insert(libc::SYS_io_uring_setup, Vec::new());
    }
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|err| fail(err.to_string()))?;
    BpfProgram::try_from(filter).map_err(|err| fail(err.to_string()))
}

/// The filter of a sealed program: [`filter`] without network, and no socket of any family,
/// `AF_UNIX` included (a reader has no one to talk to). Built once.
pub(super) fn sealed_filter(confinement: &Confinement) -> Result<BpfProgram, OsSandboxError> {
    static SEALED: std::sync::OnceLock<Result<BpfProgram, String>> = std::sync::OnceLock::new();
    let built = SEALED.get_or_init(|| build(confinement, true).map_err(|err| err.to_string()));
    built.clone().map_err(|reason| OsSandboxError::Setup {
        policy: confinement.policy,
        reason,
    })
}

/// Installs `program` on the calling thread. Runs between `fork` and `exec`, so it only makes
/// system calls and never allocates, not even for its error.
pub(super) fn install(program: &BpfProgram) -> Result<(), ()> {
    seccompiler::apply_filter(program).map_err(|_| ())
}
