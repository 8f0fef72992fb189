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
mod confinement;
mod file_policy;
#[cfg(target_os = "linux")]
mod files;
#[cfg(target_os = "linux")]
mod git;
#[cfg(target_os = "linux")]
mod loopback;
mod placeholders;
mod policy;
#[cfg(target_os = "linux")]
mod privileges;
mod protected;
#[cfg(target_os = "linux")]
mod reaper;
#[cfg(target_os = "linux")]
mod spare;
#[cfg(target_os = "linux")]
mod spawn;
mod spawned;
#[cfg(target_os = "linux")]
mod step;
#[cfg(target_os = "linux")]
mod syscalls;
#[cfg(target_os = "linux")]
mod view;
mod wall;

pub use crate::protected::PROTECTED_NAMES;
pub(crate) use confinement::Confinement;
pub use file_policy::FilePolicy;
pub(crate) use file_policy::{Files, Place};
#[doc(hidden)]
pub use placeholders::set_placeholder_linger;
pub use policy::{OsSandboxError, SandboxPolicy};
#[cfg(target_os = "linux")]
pub use spare::{SPARE_MAX_BYTES, SPARE_MAX_STRINGS, SealedChild, SealedOutput, SealedSpare};
pub(crate) use spawned::Spawned;
pub use wall::{Wall, WalledChild};

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
