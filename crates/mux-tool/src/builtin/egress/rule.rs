//! Domain rules as Claude Code reads `sandbox.network.allowedDomains`, `deniedDomains` and
//! `WebFetch(domain:…)`: `example.com` (that name only), `*.example.com` (every name beneath
//! it, not the name itself), an IP address, `*` (every host; internal addresses stay refused
//! whatever the rules say), each with an optional `:port` suffix that narrows the rule to one
//! port.

use std::fmt;
use std::net::IpAddr;

/// A destination as a command names it: a lower-case name without a trailing dot, or an IP
/// address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Host {
    /// A name.
    Name(String),
    /// An IP address written as such (`[v6]` without its brackets).
    Ip(IpAddr),
}

impl Host {
    /// Reads a host as written in a request (`Example.COM.`, `10.0.0.1`, `[::1]`, `::1`).
    pub(crate) fn parse(text: &str) -> Option<Self> {
        let bare = text
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(text);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Some(Self::Ip(ip));
        }
        let name = text.strip_suffix('.').unwrap_or(text).to_ascii_lowercase();
        let valid = !name.is_empty()
            && name.len() <= 253
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            });
        valid.then_some(Self::Name(name))
    }

    /// Splits `host:port` (`[v6]:port` for IPv6) into its host and port.
    pub(crate) fn parse_authority(text: &str) -> Option<(Self, u16)> {
        let (host, port) = if let Some(rest) = text.strip_prefix('[') {
            let (v6, port) = rest.split_once("]:")?;
            (v6, port)
        } else {
            let (host, port) = text.rsplit_once(':')?;
            if host.contains(':') {
                return None; // an IPv6 address needs its brackets before a port
            }
            (host, port)
        };
        if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let port: u16 = port.parse().ok().filter(|&p| p != 0)?;
        let host = Self::parse(host)?;
        Some((host, port))
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Name(name) => f.write_str(name),
            Self::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]"),
            Self::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// A rule the settings could not be read as, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{rule}` is not a network domain rule: {reason} (write `example.com`, `*.example.com` or either with a `:port` suffix)"
)]
pub struct DomainRuleError {
    rule: String,
    reason: &'static str,
}

/// One domain rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DomainRule {
    /// As written, for messages.
    text: String,
    /// Whether it covers the names beneath `name` (`*.`), not `name` itself.
    wildcard: bool,
    /// `None` for `*`: every host.
    host: Option<Host>,
    port: Option<u16>,
}

impl DomainRule {
    /// Reads `text`.
    pub(crate) fn parse(text: &str) -> Result<Self, DomainRuleError> {
        let fail = |reason| DomainRuleError {
            rule: text.to_owned(),
            reason,
        };
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Err(fail("it is empty"));
        }
        if trimmed.contains("://") || trimmed.contains('/') {
            return Err(fail("a rule names a domain, not a URL or a path"));
        }
        if let Some(port) = trimmed
            .strip_prefix('*')
            .filter(|rest| !rest.starts_with('.'))
        {
            let port = match port.strip_prefix(':') {
                None if port.is_empty() => None,
                Some(port) => Some(
                    port.parse::<u16>()
                        .ok()
                        .filter(|&p| p != 0)
                        .ok_or_else(|| fail("its port (1 to 65535) is not valid"))?,
                ),
                None => return Err(fail("`*` is only allowed alone or as a leading `*.`")),
            };
            return Ok(Self {
                text: trimmed.to_owned(),
                wildcard: false,
                host: None,
                port,
            });
        }
        let (wildcard, rest) = match trimmed.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, trimmed),
        };
        if rest.contains('*') {
            return Err(fail("`*` is only allowed as a leading `*.`"));
        }
        let (host, port) = match Host::parse_authority(rest) {
            Some((host, port)) => (host, Some(port)),
            None => match Host::parse(rest) {
                Some(host) => (host, None),
                None if rest.rsplit_once(':').is_some_and(|(_, p)| !p.is_empty()) => {
                    return Err(fail("its host or its port (1 to 65535) is not valid"));
                }
                None => return Err(fail("it is not a valid host name or IP address")),
            },
        };
        if wildcard && matches!(host, Host::Ip(_)) {
            return Err(fail("an IP address takes no `*.`"));
        }
        if let Host::Name(name) = &host
            && !wildcard
            && !name.contains('.')
            && name.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(fail("a number is not a host"));
        }
        Ok(Self {
            text: trimmed.to_owned(),
            wildcard,
            host: Some(host),
            port,
        })
    }

    /// Whether the rule covers `host` on `port`.
    pub(crate) fn covers(&self, host: &Host, port: u16) -> bool {
        if self.port.is_some_and(|p| p != port) {
            return false;
        }
        match (&self.host, host) {
            (None, _) => true,
            (Some(Host::Name(rule)), Host::Name(name)) if self.wildcard => name
                .strip_suffix(rule.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.')),
            (Some(rule), host) => rule == host,
        }
    }
}

impl fmt::Display for DomainRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(text: &str) -> Host {
        Host::parse(text).unwrap_or_else(|| unreachable!("{text}"))
    }

    fn rule(text: &str) -> DomainRule {
        DomainRule::parse(text).unwrap_or_else(|err| unreachable!("{err}"))
    }

    #[test]
    fn a_star_covers_every_host_on_its_port() {
        let any = rule("*");
        assert!(any.covers(&name("example.com"), 443));
        assert!(any.covers(&name("10.0.0.1"), 80));
        let any_tls = rule("*:443");
        assert!(any_tls.covers(&name("example.com"), 443));
        assert!(!any_tls.covers(&name("example.com"), 80));
        for bad in ["*x", "*:0", "*:http", "**"] {
            assert!(DomainRule::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn exact_wildcard_and_port_forms() {
        let exact = rule("Example.com");
        assert!(exact.covers(&name("example.com."), 443));
        assert!(!exact.covers(&name("api.example.com"), 443));
        assert!(!exact.covers(&name("badexample.com"), 443));
        let wild = rule("*.example.com");
        assert!(wild.covers(&name("api.example.com"), 80));
        assert!(wild.covers(&name("a.b.EXAMPLE.com"), 80));
        assert!(!wild.covers(&name("example.com"), 80));
        assert!(!wild.covers(&name("evilexample.com"), 80));
        let port = rule("registry.npmjs.org:443");
        assert!(port.covers(&name("registry.npmjs.org"), 443));
        assert!(!port.covers(&name("registry.npmjs.org"), 80));
        let wild_port = rule("*.example.com:8443");
        assert!(wild_port.covers(&name("x.example.com"), 8443));
        assert!(!wild_port.covers(&name("x.example.com"), 443));
        let v6 = rule("[2001:db8::1]:443");
        assert!(v6.covers(
            &Host::parse("[2001:db8::1]").unwrap_or_else(|| unreachable!()),
            443
        ));
        assert!(!v6.covers(&name("example.com"), 443));
    }

    #[test]
    fn bad_rules_say_what_is_wrong() {
        for bad in [
            "",
            "*.",
            "a.*.com",
            "https://example.com",
            "example.com/path",
            "example.com:0",
            "example.com:99999",
            "example.com:",
            "exa mple.com",
            "*.10.0.0.1",
            "12345",
        ] {
            let err = DomainRule::parse(bad).err();
            assert!(err.is_some(), "{bad} was accepted");
            assert!(err.is_some_and(|e| e.to_string().contains("not a network domain rule")));
        }
    }

    #[test]
    fn authorities() {
        assert_eq!(
            Host::parse_authority("Example.com:443"),
            Some((name("example.com"), 443))
        );
        assert_eq!(
            Host::parse_authority("[::ffff:127.0.0.1]:80"),
            Some((
                Host::Ip(
                    "::ffff:127.0.0.1"
                        .parse()
                        .unwrap_or_else(|_| unreachable!())
                ),
                80
            ))
        );
        assert_eq!(Host::parse_authority("example.com"), None);
        assert_eq!(Host::parse_authority("example.com:x"), None);
        assert_eq!(Host::parse_authority("exa$mple.com:80"), None);
        assert_eq!(Host::parse_authority("::1:80"), None);
    }
}
