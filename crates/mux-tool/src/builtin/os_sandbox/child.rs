//! What the child does between `fork` and `exec`, in order: a new session, the read-only view
//! (and the network namespace's loopback and proxy port), no capabilities, Landlock, seccomp. Each step only makes system calls on what the parent
//! prepared; a failure is reported to the parent through the `exec` error, as the step and its
//! `errno` (module `step`), and the command is not run.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use seccompiler::BpfProgram;

use super::loopback::Loopback;
use super::step::{Failed, Step};
use super::view::View;
use super::{files, privileges, syscalls};

/// Everything the child needs, prepared before `fork`.
pub(super) struct Setup {
    pub(super) view: Option<View>,
    /// The proxy's door, in the network namespace the view entered (module `loopback`).
    pub(super) loopback: Option<Loopback>,
    pub(super) ruleset: OwnedFd,
    pub(super) filter: BpfProgram,
    /// The process holds no capability to begin with (see [`privileges::drop_all`]).
    pub(super) unprivileged: bool,
}

impl Setup {
    /// Runs in the child between `fork` and `exec`.
    pub(super) fn run(&mut self) -> io::Result<()> {
        self.steps().map_err(Failed::encode)
    }

    fn steps(&mut self) -> Result<(), Failed> {
        // SAFETY: setsid has no memory effects.
        #[allow(unsafe_code)]
        if unsafe { libc::setsid() } < 0 {
            return Err(Failed::last(Step::Session));
        }
        if let Some(view) = &mut self.view {
            view.enter()?;
        }
        if let Some(loopback) = &self.loopback {
            loopback.open()?;
        }
        privileges::drop_all(self.unprivileged)?;
        files::restrict(self.ruleset.as_raw_fd()).map_err(|()| Failed::last(Step::Landlock))?;
        syscalls::install(&self.filter).map_err(|()| Failed::new(Step::Seccomp, libc::EINVAL))
    }
}
