//! The decision hook for a domain no rule covers: the lead wires it to the approval path, so
//! the face asks "allow network access to `crates.io`?".

use std::fmt;
use std::sync::Arc;

use crate::BoxFuture;

/// A destination no rule covers, for a [`DomainAsker`] to decide.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DomainRequest {
    /// The host as the command named it: a lower-case name, or an IP address (`[v6]`).
    pub host: String,
    /// The port.
    pub port: u16,
}

impl DomainRequest {
    /// A request for `host` (lower-case name or IP address) on `port`, for askers' tests.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        Self {
            host: host.into(),
            port,
        }
    }
}

impl fmt::Display for DomainRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

/// What a [`DomainAsker`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DomainAnswer {
    /// Allowed for the rest of this command (every connection it makes to the host).
    AllowOnce,
    /// Allowed for the rest of this command; the asker's owner keeps it for later commands
    /// (for instance by adding an allow rule).
    AllowAlways,
    /// Refused for the rest of this command.
    Deny,
}

impl DomainAnswer {
    /// Whether the answer lets the connection through.
    pub fn allows(self) -> bool {
        !matches!(self, Self::Deny)
    }
}

/// Decides a domain no allow or deny rule covers. Asked at most once per host and port per
/// command (concurrent connections wait for the one answer). Without an asker, such a domain
/// is denied.
pub trait DomainAsker: Send + Sync + fmt::Debug {
    /// Decides `request`. The command's connection waits for the answer, within the call's
    /// own timeout.
    fn ask(&self, request: DomainRequest) -> BoxFuture<'_, DomainAnswer>;
}

/// Makes the [`DomainAsker`] of one tool call. An orchestrator puts one in each run's
/// [`Resources`](crate::Resources) (as [`CallDomainAskers`]); a walled `bash` call whose
/// [`NetworkPolicy`](super::NetworkPolicy) has no asker of its own asks through it, so the
/// person sees "allow network access to `crates.io:443`?" on the face that runs the agent.
pub trait DomainAskers: Send + Sync + fmt::Debug {
    /// The asker for the call `call_id`.
    fn for_call(&self, call_id: &str) -> Arc<dyn DomainAsker>;
}

/// The [`DomainAskers`] of a run, as stored in its [`Resources`](crate::Resources).
#[derive(Clone, Debug)]
pub struct CallDomainAskers(pub Arc<dyn DomainAskers>);
