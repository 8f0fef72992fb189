//! The `Host` allow-list, against DNS rebinding: a page on an attacker's name that resolves to
//! 127.0.0.1 sends its own name as `Host`, which is not on the list.

use std::net::{Ipv6Addr, SocketAddr};

use http::{HeaderMap, Uri, header};

use crate::Refused;
use crate::headers::{shown, single};

/// A host name (lower case; IPv6 in brackets) and a port, as a `Host` header or an origin
/// names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPort {
    /// The name, lower case; an IPv6 address in brackets.
    pub name: String,
    /// The port, when one is named.
    pub port: Option<u16>,
}

impl HostPort {
    /// Parses `name[:port]` (a `Host` header value, or an origin's authority): a DNS name or
    /// IPv4 address of `A-Z a-z 0-9 . - _`, or an IPv6 address in brackets, then an optional
    /// port of 1 to 5 digits. Anything else (user info, paths, spaces, empty parts) is refused.
    pub fn parse(text: &str) -> Option<Self> {
        let (name, port) = match text.strip_prefix('[') {
            Some(v6) => {
                let (inside, rest) = v6.split_once(']')?;
                let address = |b: u8| b.is_ascii_hexdigit() || b == b':' || b == b'.';
                if inside.is_empty() || !inside.bytes().all(address) {
                    return None;
                }
                let port = match rest {
                    "" => None,
                    _ => Some(rest.strip_prefix(':')?),
                };
                (format!("[{}]", inside.to_ascii_lowercase()), port)
            }
            None => {
                let (name, port) = match text.split_once(':') {
                    Some((name, port)) => (name, Some(port)),
                    None => (text, None),
                };
                let label = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_');
                if name.is_empty() || !name.bytes().all(label) {
                    return None;
                }
                (name.to_ascii_lowercase(), port)
            }
        };
        let port = match port {
            None => None,
            Some(p) if (1..=5).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()) => {
                Some(p.parse::<u16>().ok()?)
            }
            Some(_) => return None,
        };
        Some(Self { name, port })
    }
}

/// A configured allowed host that is not `name`, `name:port`, `[v6]`, `[v6]:port` or a bare
/// IPv6 address.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("allowed host `{0}` is not `name` or `name:port`")]
pub struct InvalidHost(pub String);

/// Which hosts a server answers to.
#[derive(Clone, Debug, Default)]
pub struct HostAllowList {
    /// Configured entries: a name without a port matches it on any port.
    configured: Vec<HostPort>,
}

/// Names that reach this machine only.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// An entry of the configuration: what [`HostPort::parse`] takes, or a bare IPv6 address
/// (`::1`), trimmed.
fn entry(text: &str) -> Option<HostPort> {
    let text = text.trim();
    match text.parse::<Ipv6Addr>() {
        Ok(v6) => HostPort::parse(&format!("[{v6}]")),
        Err(_) => HostPort::parse(text),
    }
}

impl HostAllowList {
    /// The list from configured `name[:port]` entries; an unparsable entry is an error.
    pub fn new(entries: &[String]) -> Result<Self, InvalidHost> {
        let configured = entries
            .iter()
            .map(|e| entry(e).ok_or_else(|| InvalidHost(e.clone())))
            .collect::<Result<_, _>>()?;
        Ok(Self { configured })
    }

    /// The list from the entries that parse (the others match nothing).
    pub fn parsable(entries: &[String]) -> Self {
        let configured = entries.iter().filter_map(|e| entry(e)).collect();
        Self { configured }
    }

    /// Whether `host` (with `default_port` when it names none) may be served by a connection
    /// accepted on `local`. Allowed: configured entries; the local address itself; and
    /// `localhost`, `127.0.0.1`, `[::1]` on the local port (on any port when the local
    /// address is unknown, because another server accepted the connection or the caller
    /// asks for loopback names on any port).
    pub fn allows(&self, host: &HostPort, default_port: u16, local: Option<SocketAddr>) -> bool {
        let port = host.port.unwrap_or(default_port);
        let configured = self
            .configured
            .iter()
            .any(|e| e.name == host.name && e.port.is_none_or(|p| p == port));
        if configured {
            return true;
        }
        let loopback_name = LOOPBACK_NAMES.contains(&host.name.as_str());
        match local {
            None => loopback_name,
            Some(local) => {
                if port != local.port() {
                    return false;
                }
                // A dual-stack socket reports an IPv4 client's address as IPv4-mapped IPv6.
                let own = match local {
                    SocketAddr::V4(v4) => v4.ip().to_string(),
                    SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
                        Some(v4) => v4.to_string(),
                        None => format!("[{}]", v6.ip()),
                    },
                };
                loopback_name || host.name == own
            }
        }
    }

    /// The `Host` check of a request: one `Host` header that [`allows`](Self::allows)
    /// (port 80 when it names none), and an absolute-form target's authority
    /// (`POST http://name/path`) too, when there is one.
    pub fn check(
        &self,
        headers: &HeaderMap,
        uri: &Uri,
        local: Option<SocketAddr>,
    ) -> Result<(), Refused> {
        let value = single(headers, &header::HOST)?.ok_or(Refused::NoHost)?;
        let mut names = vec![value.as_bytes()];
        if let Some(authority) = uri.authority() {
            names.push(authority.as_str().as_bytes());
        }
        for name in names {
            let host = std::str::from_utf8(name).ok().and_then(HostPort::parse);
            if !host.is_some_and(|h| self.allows(&h, 80, local)) {
                return Err(Refused::HostNotAllowed(shown(name)));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn hp(text: &str) -> HostPort {
        HostPort::parse(text).unwrap_or(HostPort {
            name: "<unparsable>".into(),
            port: None,
        })
    }

    #[test]
    fn host_headers_parse_strictly() {
        assert_eq!(
            HostPort::parse("LocalHost:8080"),
            Some(HostPort {
                name: "localhost".into(),
                port: Some(8080)
            })
        );
        assert_eq!(
            HostPort::parse("[::1]:9"),
            Some(HostPort {
                name: "[::1]".into(),
                port: Some(9)
            })
        );
        assert_eq!(
            HostPort::parse("example.com"),
            Some(HostPort {
                name: "example.com".into(),
                port: None
            })
        );
        for bad in [
            "",
            "user@localhost:1",
            "localhost:",
            "localhost:99999",
            "localhost:1/x",
            "local host",
            "a\tb",
            ":80",
        ] {
            assert_eq!(HostPort::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn the_default_list_is_the_local_address_and_loopback_names_on_its_port() {
        let list = HostAllowList::default();
        let local: SocketAddr = ([127, 0, 0, 1], 8787).into();
        for ok in [
            "127.0.0.1:8787",
            "localhost:8787",
            "LOCALHOST:8787",
            "[::1]:8787",
        ] {
            assert!(list.allows(&hp(ok), 80, Some(local)), "{ok}");
        }
        for refused in [
            "evil.example:8787",
            "127.0.0.1:8788",
            "localhost",
            "127.0.0.2:8787",
            "localhost.evil.example:8787",
        ] {
            assert!(!list.allows(&hp(refused), 80, Some(local)), "{refused}");
        }
        let lan: SocketAddr = ([192, 168, 1, 5], 80).into();
        assert!(list.allows(&hp("192.168.1.5"), 80, Some(lan)));
        let mapped: SocketAddr =
            (std::net::Ipv4Addr::new(192, 168, 1, 5).to_ipv6_mapped(), 80).into();
        assert!(list.allows(&hp("192.168.1.5"), 80, Some(mapped)));
        let v6: SocketAddr = (std::net::Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1), 80).into();
        assert!(list.allows(&hp("[fd00::1]"), 80, Some(v6)));
        assert!(!list.allows(&hp("attacker.example"), 80, Some(lan)));
        assert!(list.allows(&hp("localhost:1234"), 80, None));
        assert!(!list.allows(&hp("attacker.example:1234"), 80, None));
    }

    #[test]
    fn configured_hosts_match_any_port_unless_they_name_one() {
        let list = HostAllowList::new(&["Agent.Example.com".into(), "proxy.internal:8443".into()])
            .unwrap_or_default();
        let local: SocketAddr = ([127, 0, 0, 1], 8787).into();
        assert!(list.allows(&hp("agent.example.com"), 80, Some(local)));
        assert!(list.allows(&hp("agent.example.com:444"), 80, Some(local)));
        assert!(list.allows(&hp("proxy.internal:8443"), 80, Some(local)));
        assert!(!list.allows(&hp("proxy.internal"), 80, Some(local)));
        assert!(HostAllowList::new(&["a@b".into()]).is_err());
    }

    #[test]
    fn configured_entries_take_bare_ipv6_and_refuse_junk() {
        let list =
            HostAllowList::new(&[" ::1 ".into(), "Agents.LAN:9000".into()]).unwrap_or_default();
        let elsewhere: SocketAddr = ([10, 0, 0, 1], 1).into();
        assert!(list.allows(&hp("[::1]:5"), 80, Some(elsewhere)));
        assert!(list.allows(&hp("agents.lan:9000"), 80, Some(elsewhere)));
        assert!(!list.allows(&hp("agents.lan"), 80, Some(elsewhere)));
        for bad in ["::1", "[::1", "[::g]", "[]"] {
            assert_eq!(HostPort::parse(bad), None, "{bad:?}");
        }
        for bad in ["a@b", "", "x:y", "http://x"] {
            assert_eq!(
                HostAllowList::new(&[bad.into()]).map(|_| ()),
                Err(InvalidHost(bad.into()))
            );
        }
        assert!(
            HostAllowList::parsable(&["a@b".into(), "ok.example".into()]).allows(
                &hp("ok.example"),
                80,
                Some(elsewhere)
            )
        );
    }

    #[test]
    fn the_request_check_wants_one_allowed_host_and_an_allowed_target() {
        let list = HostAllowList::default();
        let local = Some(([127, 0, 0, 1], 8080).into());
        let check = |hosts: &[&'static str], uri: &'static str| {
            let mut headers = HeaderMap::new();
            for h in hosts {
                headers.append(header::HOST, HeaderValue::from_static(h));
            }
            list.check(&headers, &Uri::from_static(uri), local)
        };
        assert_eq!(check(&["localhost:8080"], "/x"), Ok(()));
        assert_eq!(check(&[], "/x"), Err(Refused::NoHost));
        assert_eq!(
            check(&["localhost:8080", "localhost:8080"], "/x"),
            Err(Refused::DuplicateHeader(header::HOST))
        );
        assert_eq!(
            check(&["evil.example"], "/x"),
            Err(Refused::HostNotAllowed("evil.example".into()))
        );
        assert_eq!(
            check(&["localhost:8080"], "http://evil.example/x"),
            Err(Refused::HostNotAllowed("evil.example".into()))
        );
    }
}
