//! Starting a command inside the OS sandbox.
//!
//! Landlock and seccomp restrict the thread that applies them and everything it starts
//! afterwards. So the command is started from a thread of its own, which restricts itself with
//! Landlock, hands the child a seccomp filter to install after `fork`, spawns, and ends; the
//! process's other threads are never restricted.

use tokio::process::{Child, Command};
use tokio::sync::oneshot;

use super::{Confinement, OsSandboxError, SandboxPolicy, files, syscalls};
use crate::ToolError;

/// Starts `command` (the program named `program`, for messages) confined as `confinement`
/// says.
pub(crate) async fn spawn(
    mut command: Command,
    program: String,
    confinement: Confinement,
) -> Result<Child, ToolError> {
    if confinement.policy == SandboxPolicy::FullAccess {
        return command.spawn().map_err(|err| cannot_start(&program, err));
    }
    let runtime = tokio::runtime::Handle::current();
    let (tx, rx) = oneshot::channel();
    std::thread::Builder::new()
        .name("mux-sandbox-spawn".into())
        .spawn(move || {
            let spawned = confine_and_spawn(command, &confinement, &runtime)
                .map_err(|err| err.into_tool_error(&program));
            let _ = tx.send(spawned);
        })
        .map_err(|err| ToolError::failed(format!("cannot start the sandbox thread: {err}")))?;
    rx.await
        .map_err(|_| ToolError::failed("the sandbox thread ended without starting the command"))?
}

/// Why the sandbox thread could not start the command.
enum Failure {
    Sandbox(OsSandboxError),
    Spawn(std::io::Error),
}

impl Failure {
    fn into_tool_error(self, program: &str) -> ToolError {
        match self {
            Self::Sandbox(err) => err.into(),
            Self::Spawn(err) => cannot_start(program, err),
        }
    }
}

fn confine_and_spawn(
    mut command: Command,
    confinement: &Confinement,
    runtime: &tokio::runtime::Handle,
) -> Result<Child, Failure> {
    let filter = syscalls::filter(confinement).map_err(Failure::Sandbox)?;
    files::restrict_this_thread(confinement).map_err(Failure::Sandbox)?;
    install_after_fork(&mut command, filter);
    let _entered = runtime.enter();
    command.spawn().map_err(Failure::Spawn)
}

/// Has the child install the seccomp filter after `fork` (and after it became its group's
/// leader, which the filter would refuse), right before `exec`.
#[allow(unsafe_code)]
fn install_after_fork(command: &mut Command, program: seccompiler::BpfProgram) {
    // SAFETY: the closure runs in the forked child, where only async-signal-safe work is
    // allowed. `syscalls::install` makes two system calls (prctl and seccomp) on a program
    // compiled before the fork, allocates nothing, and maps any failure to an error kind
    // without allocating.
    unsafe {
        command.pre_exec(move || syscalls::install(&program));
    }
}

fn cannot_start(program: &str, err: std::io::Error) -> ToolError {
    ToolError::failed(format!("cannot start {program}: {err}"))
}
