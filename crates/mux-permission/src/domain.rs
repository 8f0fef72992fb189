//! Domain specifiers (`domain:example.com`, `domain:*.example.com`) and URL hosts.
//!
//! Hosts are read with the `url` crate, the WHATWG URL parser reqwest itself uses, so a rule
//! sees the host the fetch connects to: `http://2852039166/`, `http://0xA9FEA9FE/`,
//! `http://0251.0376.0251.0376/`, `http://169.254.43518/` and `http://[::ffff:a9fe:a9fe]/` are
//! all `169.254.169.254`; userinfo (`http://example.com@evil.com/`), backslashes,
//! percent-encoding, case and a trailing dot are resolved as the fetcher resolves them.

use std::net::IpAddr;

use url::{Host, Url};

/// A compiled `domain:` specifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainPattern {
    host: String,
    subdomains_only: bool,
}

/// Why a domain specifier cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a host name (expected `domain:example.com` or `domain:*.example.com`)")]
pub struct DomainPatternError(pub String);

impl DomainPattern {
    /// Compiles the part after `domain:`.
    ///
    /// The host is normalised as a URL's host is (see [`host_of`]), so `domain:0x7f.1` is the
    /// rule `domain:127.0.0.1`.
    pub fn parse(domain: &str) -> Result<Self, DomainPatternError> {
        let trimmed = domain.trim();
        let (host, subdomains_only) = match trimmed.strip_prefix("*.") {
            Some(rest) => (rest, true),
            None => (trimmed, false),
        };
        let invalid = || DomainPatternError(domain.to_owned());
        let port = host
            .rsplit_once(']')
            .map_or(host, |(_, after)| after)
            .contains(':');
        if host.is_empty() || port || !host.bytes().all(is_host_byte) {
            return Err(invalid());
        }
        let host = host_of(&format!("http://{host}/")).ok_or_else(invalid)?;
        if subdomains_only && normalised_ip(&host).is_some() {
            return Err(invalid());
        }
        Ok(Self {
            host,
            subdomains_only,
        })
    }

    /// Whether an allow rule matches `host`: the host itself, or for `*.` only its subdomains.
    pub fn allows(&self, host: &str) -> bool {
        if self.subdomains_only {
            is_subdomain(host, &self.host)
        } else {
            host == self.host
        }
    }

    /// Whether a deny or ask rule matches `host`: the host and every subdomain.
    pub fn covers(&self, host: &str) -> bool {
        host == self.host || is_subdomain(host, &self.host)
    }
}

fn is_subdomain(host: &str, parent: &str) -> bool {
    host.len() > parent.len() + 1
        && host.ends_with(parent)
        && host.as_bytes()[host.len() - parent.len() - 1] == b'.'
}

fn is_host_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b':' | b'[' | b']')
}

/// The host of an absolute URL as the fetcher connects to it, or `None` when the URL does
/// not parse or has no host.
///
/// Parsed by the WHATWG rules of the `url` crate: a name comes back in lower-case ASCII
/// (internationalised names as punycode) without a trailing dot; an IPv4 address, however it
/// was spelled, in dotted decimal; an IPv6 address in brackets, compressed, except that one
/// carrying an IPv4 address (`[::ffff:a.b.c.d]`) comes back as that IPv4 address.
pub fn host_of(url: &str) -> Option<String> {
    let parsed = Url::parse(url.trim()).ok()?;
    let host = match parsed.host()? {
        Host::Domain(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            if name.is_empty() || !name.bytes().all(is_host_byte) {
                return None;
            }
            name
        }
        Host::Ipv4(v4) => v4.to_string(),
        Host::Ipv6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => format!("[{v6}]"),
        },
    };
    Some(host)
}

/// The IP address a normalised host names, if it is one.
pub(crate) fn normalised_ip(host: &str) -> Option<IpAddr> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        assert_eq!(
            host_of("https://Example.COM/a").as_deref(),
            Some("example.com")
        );
        assert_eq!(
            host_of("https://example.com@evil.com/").as_deref(),
            Some("evil.com")
        );
        assert_eq!(
            host_of("http://example.com.:8080?x").as_deref(),
            Some("example.com")
        );
        assert_eq!(
            host_of("https://ехample.com/").as_deref(),
            Some("xn--ample-ywe6i.com")
        );
        assert_eq!(host_of("example.com"), None);
        assert_eq!(
            host_of("http://2852039166/").as_deref(),
            Some("169.254.169.254")
        );
        assert_eq!(
            host_of("http://[::ffff:a9fe:a9fe]/").as_deref(),
            Some("169.254.169.254")
        );
        assert_eq!(host_of("http://[0:0::1]:80/").as_deref(), Some("[::1]"));
        assert_eq!(
            host_of("http://evil.com\\@example.com/").as_deref(),
            Some("evil.com")
        );
        assert_eq!(host_of("file:///etc/passwd"), None);
    }

    #[test]
    fn allow_is_exact_and_deny_covers_subdomains() {
        let p = DomainPattern::parse("example.com").unwrap_or_else(|_| unreachable!());
        assert!(p.allows("example.com"));
        assert!(!p.allows("api.example.com"));
        assert!(!p.allows("evilexample.com"));
        assert!(p.covers("api.example.com"));
        assert!(!p.covers("evilexample.com"));
        let wild = DomainPattern::parse("*.example.com").unwrap_or_else(|_| unreachable!());
        assert!(wild.allows("api.example.com"));
        assert!(!wild.allows("example.com"));
        let ip = DomainPattern::parse("0x7f.1").unwrap_or_else(|_| unreachable!());
        assert!(ip.allows("127.0.0.1"));
        assert!(DomainPattern::parse("*.127.0.0.1").is_err());
    }
}
