//! Starting a command inside the OS sandbox: the parent prepares everything (protected
//! paths, the view, the Landlock ruleset, the seccomp filter), then the child applies it
//! between `fork` and `exec` (module `child`).
//!
//! Why `pre_exec` and not a helper program that re-executes itself (as Codex's
//! `codex-linux-sandbox` does) or bubblewrap: a library cannot count on shipping a second
//! binary or on the host's `main` answering a helper's arguments, and the child of `fork` is
//! single-threaded, which `unshare(CLONE_NEWUSER)` requires. Each step is a handful of system
//! calls on buffers prepared before the fork, which is what `pre_exec` allows.

use tokio::process::{Child, Command};

use super::child::Setup;
use super::loopback::Loopback;
use super::step;
use super::view::View;
use super::{Confinement, OsSandboxError, SandboxPolicy, Spawned, files, git, protected, syscalls};
use crate::ToolError;
use crate::builtin::egress::Proxy;

/// Starts `command` (the program named `program`, for messages) confined as `confinement`
/// says.
pub(crate) fn spawn(
    mut command: Command,
    program: String,
    confinement: Confinement,
) -> Result<Spawned, ToolError> {
    if confinement.policy == SandboxPolicy::FullAccess {
        command.process_group(0);
        return Ok(Spawned {
            child: command.spawn().map_err(|err| cannot_start(&program, err))?,
            placeholders: protected::Placeholders::default(),
            _proxy: None,
        });
    }
    let git = git::wall(&confinement).map_err(|err| OsSandboxError::Setup {
        policy: confinement.policy,
        reason: format!("cannot prepare git's configuration: {err}"),
    })?;
    command.envs(git.vars);
    let protection = protected::protect(&confinement, &git.gitfiles)?;
    let view = if confinement.mount_view {
        Some(View::new(&confinement, &protection.paths)?)
    } else {
        None
    };
    let (loopback, door) = match &confinement.egress {
        None => (None, None),
        Some(_) if view.is_none() => {
            return Err(OsSandboxError::Setup {
                policy: confinement.policy,
                reason: "the network policy needs the mount view's namespaces \
                         (Bash::mount_view(true))"
                    .into(),
            }
            .into());
        }
        Some(_) => {
            let (loopback, door) = Loopback::new(confinement.policy)?;
            (Some(loopback), Some(door))
        }
    };
    let setup = Setup {
        view,
        loopback,
        ruleset: files::ruleset(&confinement)?,
        filter: syscalls::filter(&confinement)?,
        unprivileged: !confinement.mount_view && !rustix::process::geteuid().is_root(),
    };
    let child =
        start(command, setup).map_err(|err| match step::explain(&err, confinement.policy) {
            Some(sandbox) => sandbox.into(),
            None => cannot_start(&program, err),
        })?;
    let proxy = match (door, confinement.egress) {
        (Some(door), Some(policy)) => {
            let listener = door.take(confinement.policy).and_then(|listener| {
                tokio::net::TcpListener::from_std(listener).map_err(|err| OsSandboxError::Setup {
                    policy: confinement.policy,
                    reason: format!("cannot serve the network proxy: {err}"),
                })
            })?;
            Some(Proxy::serve(listener, policy))
        }
        _ => None,
    };
    Ok(Spawned {
        child,
        placeholders: protection.placeholders,
        _proxy: proxy,
    })
}

fn start(mut command: Command, mut setup: Setup) -> std::io::Result<Child> {
    // SAFETY: the closure runs in the forked child, where only async-signal-safe work is
    // allowed. `Setup::run` makes system calls on buffers, paths, a file descriptor and a
    // seccomp program all prepared before the fork; it allocates nothing, not even for its
    // error (a number).
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || setup.run());
    }
    command.spawn()
}

/// Seals `command` (a standard, synchronous one) under the tightest wall: a new session, no
/// capability, the whole file system read-only (Landlock; only `/dev/null`-like devices are
/// writable), no socket of any family, no `io_uring`, no way to leave the process group. For
/// programs that only read their arguments and environment and print, such as bash reading a
/// command it must not run.
pub(crate) fn seal(command: &mut std::process::Command) -> Result<(), OsSandboxError> {
    use std::os::unix::process::CommandExt;

    let mut setup = sealed_setup()?;
    // SAFETY: as in `start`: the closure only makes system calls on what was prepared before
    // the fork, and allocates nothing.
    #[allow(unsafe_code)]
    unsafe {
        command.pre_exec(move || setup.run());
    }
    Ok(())
}

/// The child's steps for the tightest wall (see [`seal`]): no view, no network namespace,
/// everything read-only, no socket.
pub(super) fn sealed_setup() -> Result<Setup, OsSandboxError> {
    let confinement = Confinement {
        policy: SandboxPolicy::ReadOnly,
        network: false,
        egress: None,
        root: "/".into(),
        scratch: "/dev/null".into(),
        mount_view: false,
        git_writes: false,
        nested_git: false,
        files: super::Files::default(),
    };
    Ok(Setup {
        view: None,
        loopback: None,
        ruleset: files::sealed_ruleset(&confinement)?,
        filter: syscalls::sealed_filter(&confinement)?,
        unprivileged: !rustix::process::geteuid().is_root(),
    })
}

fn cannot_start(program: &str, err: std::io::Error) -> ToolError {
    ToolError::failed(format!("cannot start {program}: {err}"))
}
