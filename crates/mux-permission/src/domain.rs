//! Domain specifiers (`domain:example.com`, `domain:*.example.com`) and URL hosts.

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
    pub fn parse(domain: &str) -> Result<Self, DomainPatternError> {
        let lower = domain.trim().to_ascii_lowercase();
        let (host, subdomains_only) = match lower.strip_prefix("*.") {
            Some(rest) => (rest.to_owned(), true),
            None => (lower.clone(), false),
        };
        let host = host.trim_end_matches('.').to_owned();
        if host.is_empty() || !host.bytes().all(is_host_byte) {
            return Err(DomainPatternError(domain.to_owned()));
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

/// The lower-cased host of an absolute URL, or `None` when there is none a rule can trust
/// (no scheme, empty host, non-ASCII characters).
pub fn host_of(url: &str) -> Option<String> {
    let (scheme, rest) = url.trim().split_once("://")?;
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
    {
        return None;
    }
    let authority = rest.split(['/', '?', '#', '\\']).next().unwrap_or_default();
    let host_port = authority.rsplit('@').next().unwrap_or_default();
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        format!("[{}]", v6.split(']').next().unwrap_or_default())
    } else {
        host_port.split(':').next().unwrap_or_default().to_owned()
    };
    let host = host.to_ascii_lowercase();
    let host = host.trim_end_matches('.');
    (!host.is_empty() && host.bytes().all(is_host_byte)).then(|| host.to_owned())
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
        assert_eq!(host_of("https://ехample.com/"), None);
        assert_eq!(host_of("example.com"), None);
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
    }
}
