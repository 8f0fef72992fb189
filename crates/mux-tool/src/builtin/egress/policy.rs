//! [`NetworkPolicy`]: which destinations a sandboxed command may reach through the agent's
//! proxy, and who decides the rest.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use super::ask::DomainAsker;
use super::rule::{DomainRule, DomainRuleError, Host};

/// The network a sandboxed command gets: a network namespace with loopback only, and the
/// agent's own HTTP and SOCKS5 proxy as its one way out, which lets a destination through by
/// its domain.
///
/// Rules are read as Claude Code reads `sandbox.network.allowedDomains`, `deniedDomains` and
/// `WebFetch(domain:…)` allow rules: `example.com` covers that name only, `*.example.com`
/// every name beneath it, an IP address itself; a `:port` suffix narrows a rule to one port.
/// A deny rule wins over an allow rule. A destination no rule covers goes to the
/// [`DomainAsker`], if there is one, and is denied otherwise. Whatever the rules say, the
/// proxy refuses loopback, private, link-local and cloud metadata addresses, written as such
/// or resolved from a name ([`classify_egress`](crate::address::classify_egress)).
///
/// ```
/// use mux_tool::builtin::NetworkPolicy;
///
/// let policy = NetworkPolicy::new()
///     .allow_domains(["registry.npmjs.org", "*.pypi.org", "files.pythonhosted.org:443"])?
///     .deny_domains(["uploads.pypi.org"])?;
/// # Ok::<(), mux_tool::builtin::DomainRuleError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct NetworkPolicy {
    pub(crate) allowed: Vec<DomainRule>,
    pub(crate) denied: Vec<DomainRule>,
    pub(crate) unix_sockets: Vec<PathBuf>,
    pub(crate) asker: Option<Arc<dyn DomainAsker>>,
    /// Names tests map to local listeners (see [`NetworkPolicy::resolve_for_tests`]).
    pub(crate) test_hosts: BTreeMap<String, Vec<SocketAddr>>,
}

/// What the rules alone say about a destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RuleVerdict {
    /// An allow rule covers it (and no deny rule).
    Allowed,
    /// The deny rule, as written.
    Denied(String),
    /// No rule covers it.
    Unknown,
}

impl NetworkPolicy {
    /// No domain allowed, none denied, no asker: every destination is refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds allow rules (`example.com`, `*.example.com`, either with `:port`).
    pub fn allow_domains<I, S>(mut self, rules: I) -> Result<Self, DomainRuleError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        for rule in rules {
            self.allowed.push(DomainRule::parse(rule.as_ref())?);
        }
        Ok(self)
    }

    /// Adds deny rules, which win over allow rules and the asker.
    pub fn deny_domains<I, S>(mut self, rules: I) -> Result<Self, DomainRuleError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        for rule in rules {
            self.denied.push(DomainRule::parse(rule.as_ref())?);
        }
        Ok(self)
    }

    /// Lets the command open Unix sockets (`allowUnixSockets`). Without any, a command under
    /// this policy cannot create a Unix socket at all (seccomp refuses `socket(AF_UNIX)`;
    /// `socketpair` still works), so it cannot relay through a host process's socket. Linux
    /// cannot check a `connect` path against a list before the command makes it, so naming
    /// any path opens Unix sockets for every path the command can see.
    pub fn allow_unix_socket(mut self, path: impl Into<PathBuf>) -> Self {
        self.unix_sockets.push(path.into());
        self
    }

    /// Sets who decides a domain no rule covers (the approval path).
    pub fn asker(mut self, asker: Arc<dyn DomainAsker>) -> Self {
        self.asker = Some(asker);
        self
    }

    /// For tests only: resolves `name` to `addrs` (local listeners) instead of asking the
    /// system, and lets those addresses through although they are loopback. Nothing but a
    /// test should call it.
    #[doc(hidden)]
    pub fn resolve_for_tests(mut self, name: &str, addrs: Vec<SocketAddr>) -> Self {
        self.test_hosts.insert(name.to_ascii_lowercase(), addrs);
        self
    }

    /// What the rules say about `host` on `port`: deny first.
    pub(crate) fn verdict(&self, host: &Host, port: u16) -> RuleVerdict {
        if let Some(rule) = self.denied.iter().find(|rule| rule.covers(host, port)) {
            return RuleVerdict::Denied(rule.to_string());
        }
        if self.allowed.iter().any(|rule| rule.covers(host, port)) {
            return RuleVerdict::Allowed;
        }
        RuleVerdict::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deny_wins() {
        let policy = NetworkPolicy::new()
            .allow_domains(["*.example.com", "example.com"])
            .and_then(|p| p.deny_domains(["secret.example.com"]))
            .unwrap_or_else(|err| unreachable!("{err}"));
        let host = |h: &str| Host::parse(h).unwrap_or_else(|| unreachable!());
        assert_eq!(
            policy.verdict(&host("api.example.com"), 443),
            RuleVerdict::Allowed
        );
        assert_eq!(
            policy.verdict(&host("secret.example.com"), 443),
            RuleVerdict::Denied("secret.example.com".into())
        );
        assert_eq!(
            policy.verdict(&host("other.org"), 443),
            RuleVerdict::Unknown
        );
    }
}
