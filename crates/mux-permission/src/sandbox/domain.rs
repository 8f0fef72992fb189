//! Domain entries of the network wall: `example.com`, `*.example.com`, either with a
//! `:port`, or `*` for every host.

use std::fmt;

use crate::domain::host_of;

/// One host entry of the network wall, normalised as a URL's host is (lower case, punycode,
/// an IPv4 address however spelled in dotted decimal, IPv6 in brackets).
///
/// ```
/// use mux_permission::sandbox::WallDomain;
///
/// let npm = WallDomain::parse("*.NPMjs.org:443")?;
/// assert_eq!(npm.host.as_deref(), Some("npmjs.org"));
/// assert!(npm.subdomains_only && npm.port == Some(443));
/// assert!(npm.allows("registry.npmjs.org", 443) && !npm.allows("npmjs.org", 443));
/// assert!(!npm.allows("registry.npmjs.org", 80));
/// assert!(WallDomain::parse("example.com/path").is_err());
/// # Ok::<(), mux_permission::sandbox::WallDomainError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct WallDomain {
    /// The host; `None` for `*`, every host.
    pub host: Option<String>,
    /// `*.host`: its subdomains, not the host itself.
    pub subdomains_only: bool,
    /// The one port it is about; `None` for every port.
    pub port: Option<u16>,
}

/// A domain entry that is not a host, naming it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a domain (expected `example.com`, `*.example.com`, either with `:port`, or `*`)"
)]
pub struct WallDomainError(pub String);

impl WallDomain {
    /// Parses an entry of `allowedDomains` or `deniedDomains`, or the part after `domain:`
    /// of a `WebFetch` rule.
    pub fn parse(text: &str) -> Result<Self, WallDomainError> {
        let invalid = || WallDomainError(text.to_owned());
        let trimmed = text.trim();
        if trimmed == "*" {
            return Ok(Self {
                host: None,
                subdomains_only: false,
                port: None,
            });
        }
        let (rest, subdomains_only) = match trimmed.strip_prefix("*.") {
            Some(rest) => (rest, true),
            None => (trimmed, false),
        };
        let (host, port) = split_port(rest).ok_or_else(invalid)?;
        if host.is_empty()
            || !host.bytes().all(|b| {
                b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':' | b'[' | b']')
            })
            || (host.contains(':') && !host.starts_with('['))
        {
            return Err(invalid());
        }
        let host = host_of(&format!("http://{host}/")).ok_or_else(invalid)?;
        if subdomains_only && crate::domain::normalised_ip(&host).is_some() {
            return Err(invalid());
        }
        Ok(Self {
            host: Some(host),
            subdomains_only,
            port,
        })
    }

    /// Whether an allow entry lets a connection to `host` (normalised) on `port` through:
    /// the host itself, or for `*.` only its subdomains; on its port, if it names one.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        self.port_matches(port)
            && match &self.host {
                None => true,
                Some(own) if self.subdomains_only => is_subdomain(host, own),
                Some(own) => host == own,
            }
    }

    /// Whether a deny entry refuses a connection to `host` on `port`: the host and every
    /// subdomain of it (for `*.`, the subdomains only); on its port, if it names one.
    pub fn covers(&self, host: &str, port: u16) -> bool {
        self.port_matches(port)
            && match &self.host {
                None => true,
                Some(own) if self.subdomains_only => is_subdomain(host, own),
                Some(own) => host == own || is_subdomain(host, own),
            }
    }

    fn port_matches(&self, port: u16) -> bool {
        self.port.is_none_or(|own| own == port)
    }
}

impl fmt::Display for WallDomain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            None => f.write_str("*")?,
            Some(host) if self.subdomains_only => write!(f, "*.{host}")?,
            Some(host) => f.write_str(host)?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

/// `host` and its `:port`, if any; `None` when the port is not a number from 1 to 65535.
fn split_port(text: &str) -> Option<(&str, Option<u16>)> {
    let after_bracket = text.rfind(']').map_or(0, |at| at + 1);
    match text[after_bracket..].rfind(':') {
        None => Some((text, None)),
        Some(at) => {
            let at = after_bracket + at;
            let port = &text[at + 1..];
            if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let port: u16 = port.parse().ok().filter(|p| *p != 0)?;
            Some((&text[..at], Some(port)))
        }
    }
}

fn is_subdomain(host: &str, parent: &str) -> bool {
    host.len() > parent.len() + 1
        && host.ends_with(parent)
        && host.as_bytes()[host.len() - parent.len() - 1] == b'.'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings() {
        let d = |t: &str| WallDomain::parse(t).map(|d| d.to_string());
        assert_eq!(d("Example.COM.").as_deref(), Ok("example.com"));
        assert_eq!(d("example.com:8080").as_deref(), Ok("example.com:8080"));
        assert_eq!(d("*.example.com").as_deref(), Ok("*.example.com"));
        assert_eq!(d("0x7f.1").as_deref(), Ok("127.0.0.1"));
        assert_eq!(d("[::1]:443").as_deref(), Ok("[::1]:443"));
        assert_eq!(d("*").as_deref(), Ok("*"));
        for bad in [
            "",
            "*.",
            "example.com:",
            "example.com:0",
            "example.com:65536",
            "example.com:x",
            "http://example.com",
            "a b",
            "::1",
            "*.127.0.0.1",
            "example.com/x",
            "user@host",
        ] {
            assert!(WallDomain::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn allow_is_exact_and_deny_covers_subdomains() {
        let plain = WallDomain::parse("example.com").unwrap_or_else(|e| panic!("{e}"));
        assert!(plain.allows("example.com", 443));
        assert!(!plain.allows("api.example.com", 443));
        assert!(plain.covers("api.example.com", 1));
        assert!(!plain.covers("evilexample.com", 443));
        let all = WallDomain::parse("*").unwrap_or_else(|e| panic!("{e}"));
        assert!(all.allows("anything.io", 1) && all.covers("x", 2));
    }
}
