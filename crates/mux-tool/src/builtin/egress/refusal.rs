//! Why the proxy refused a destination, in words the model can read.

use std::fmt;
use std::net::IpAddr;

use super::rule::Host;
use crate::address::Internal;

/// A refused destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    target: String,
    reason: String,
}

impl Refusal {
    fn new(host: &Host, port: u16, reason: String) -> Self {
        Self {
            target: format!("{host}:{port}"),
            reason,
        }
    }

    /// A deny rule covers it.
    pub(crate) fn rule(host: &Host, port: u16, rule: &str) -> Self {
        Self::new(
            host,
            port,
            format!("denied by the network deny rule `{rule}`"),
        )
    }

    /// No rule covers it and there is no one to ask.
    pub(crate) fn no_rule(host: &Host, port: u16) -> Self {
        Self::new(
            host,
            port,
            "denied by the sandbox's network policy: no allowed domain covers it".into(),
        )
    }

    /// The asker said no.
    pub(crate) fn asked(host: &Host, port: u16) -> Self {
        Self::new(host, port, "denied by the user's answer".into())
    }

    /// An internal address, written as such (`resolved` is `None`) or resolved from a name.
    pub(crate) fn internal(
        host: &Host,
        port: u16,
        resolved: Option<()>,
        ip: IpAddr,
        kind: Internal,
    ) -> Self {
        let reason = match resolved {
            Some(()) => format!(
                "denied by the sandbox: {host} resolves to {ip}, {} {kind} address, which sandboxed commands may not reach",
                article(kind)
            ),
            None => format!(
                "denied by the sandbox: {ip} is {} {kind} address, which sandboxed commands may not reach",
                article(kind)
            ),
        };
        Self::new(host, port, reason)
    }

    /// A name that is internal itself (`localhost`, `metadata.google.internal`).
    pub(crate) fn internal_name(host: &Host, port: u16, kind: Internal) -> Self {
        Self::new(
            host,
            port,
            format!(
                "denied by the sandbox: {host} names {} {kind} host, which sandboxed commands may not reach",
                article(kind)
            ),
        )
    }

    /// The name did not resolve.
    pub(crate) fn unresolved(host: &Host, port: u16, why: String) -> Self {
        Self::new(host, port, format!("failed: cannot resolve {host}: {why}"))
    }

    /// The request is not what its envelope says (SNI, Host header).
    pub(crate) fn mismatch(host: &Host, port: u16, what: String) -> Self {
        Self::new(host, port, format!("denied by the proxy: {what}"))
    }

    /// The destination did not answer.
    pub(crate) fn unreachable(host: &Host, port: u16, why: String) -> Self {
        Self::new(host, port, format!("failed: cannot connect: {why}"))
    }

    /// Whether the destination was refused (not merely unreachable).
    pub(crate) fn is_denial(&self) -> bool {
        self.reason.starts_with("denied")
    }
}

/// `a` or `an` before `kind`.
fn article(kind: Internal) -> &'static str {
    if kind.as_str().starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "network access to {} {}", self.target, self.reason)
    }
}
