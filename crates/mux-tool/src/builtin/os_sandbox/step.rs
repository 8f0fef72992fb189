//! The steps the child takes before `exec`, and how a step's failure travels to the parent:
//! encoded in the `exec` error as the step and its `errno`, decoded into an
//! [`OsSandboxError`].

use std::fmt;
use std::io;

use super::{OsSandboxError, SandboxPolicy};

/// The steps, for messages. The discriminant is encoded in the error the parent receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    Session = 1,
    Namespaces = 2,
    IdMaps = 3,
    Mounts = 4,
    Capabilities = 5,
    Landlock = 6,
    Seccomp = 7,
    Network = 8,
}

impl Step {
    const ALL: [Step; 8] = [
        Step::Session,
        Step::Namespaces,
        Step::IdMaps,
        Step::Mounts,
        Step::Capabilities,
        Step::Landlock,
        Step::Seccomp,
        Step::Network,
    ];
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Session => "starting a new session (setsid)",
            Step::Namespaces => "entering a user and mount namespace (unshare)",
            Step::IdMaps => "mapping the user and group ids",
            Step::Mounts => "mounting the read-only view",
            Step::Capabilities => "dropping capabilities",
            Step::Landlock => "restricting with Landlock",
            Step::Seccomp => "installing the seccomp filter",
            Step::Network => "opening the network namespace's loopback and proxy port",
        })
    }
}

/// The `errno` values are below this; a step's failure is `step * STEP_BASE + errno`.
const STEP_BASE: i32 = 1 << 16;

/// A step that failed in the child, with its `errno`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Failed {
    step: Step,
    errno: i32,
}

impl Failed {
    /// The failure of `step` with `errno`.
    pub(super) fn new(step: Step, errno: i32) -> Self {
        Self { step, errno }
    }

    /// The failure of `step` with the current `errno`.
    pub(super) fn last(step: Step) -> Self {
        Self {
            step,
            errno: io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EINVAL),
        }
    }

    /// As an `io::Error` that carries the step to the parent (allocates nothing).
    pub(super) fn encode(self) -> io::Error {
        io::Error::from_raw_os_error(self.step as i32 * STEP_BASE + self.errno)
    }

    /// The step failure `err` carries, if it is one.
    fn decode(err: &io::Error) -> Option<Self> {
        let raw = err.raw_os_error()?;
        let step = Step::ALL
            .into_iter()
            .find(|step| raw / STEP_BASE == *step as i32)?;
        Some(Self {
            step,
            errno: raw % STEP_BASE,
        })
    }

    /// The typed error: a machine that lacks a feature is `Unsupported`, anything else
    /// `Setup`.
    fn into_error(self, policy: SandboxPolicy) -> OsSandboxError {
        let errno = io::Error::from_raw_os_error(self.errno);
        let missing = matches!(
            self.errno,
            libc::EPERM | libc::EINVAL | libc::ENOSPC | libc::EUSERS | libc::ENOSYS | libc::EACCES
        );
        match self.step {
            Step::Namespaces | Step::IdMaps if missing => OsSandboxError::Unsupported {
                policy,
                reason: format!(
                    "unprivileged user namespaces are not available ({}: {errno}); \
                     Bash::mount_view(false) runs without the read-only view",
                    self.step
                ),
            },
            Step::Landlock if matches!(self.errno, libc::ENOSYS | libc::EOPNOTSUPP) => {
                OsSandboxError::Unsupported {
                    policy,
                    reason: format!("the kernel does not enforce Landlock ({errno})"),
                }
            }
            step => OsSandboxError::Setup {
                policy,
                reason: format!("{step} failed: {errno}"),
            },
        }
    }
}

/// The sandbox's half of a spawn failure: the typed error of the step that failed in the
/// child, or `None` when `err` is not one (the program could not be executed).
pub(super) fn explain(err: &io::Error, policy: SandboxPolicy) -> Option<OsSandboxError> {
    Failed::decode(err).map(|failed| failed.into_error(policy))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_failure_survives_the_trip_through_exec() {
        let err = Failed {
            step: Step::Namespaces,
            errno: libc::EPERM,
        }
        .encode();
        let typed = explain(&err, SandboxPolicy::WorkspaceWrite).unwrap();
        assert!(
            matches!(typed, OsSandboxError::Unsupported { .. }),
            "{typed}"
        );
        assert!(typed.to_string().contains("user namespaces"), "{typed}");
        let mounts = Failed {
            step: Step::Mounts,
            errno: libc::EBUSY,
        }
        .encode();
        let typed = explain(&mounts, SandboxPolicy::WorkspaceWrite).unwrap();
        assert!(matches!(typed, OsSandboxError::Setup { .. }), "{typed}");
        assert!(
            explain(
                &io::Error::from_raw_os_error(libc::ENOENT),
                SandboxPolicy::ReadOnly
            )
            .is_none()
        );
    }
}
