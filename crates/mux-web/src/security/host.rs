//! The `Host` allow-list, against DNS rebinding: a page on an attacker's name that resolves to
//! 127.0.0.1 sends its own name as `Host`, which is not on the list.

use std::net::SocketAddr;

use crate::error::ConfigError;

/// The local address a connection was accepted on; [`crate::serve`] puts it in every request's
/// extensions, so the default allow-list knows the server's own address and port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalAddr(pub SocketAddr);

/// A host name (lower case; IPv6 in brackets) and a port, as a `Host` header or an origin
/// names them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HostPort {
    pub(crate) name: String,
    pub(crate) port: Option<u16>,
}

impl HostPort {
    /// Parses `name[:port]` (a `Host` header value, or an origin's authority): a DNS name or
    /// IPv4 address of `A-Z a-z 0-9 . - _`, or an IPv6 address in brackets, then an optional
    /// port of 1 to 5 digits. Anything else (user info, paths, spaces, empty parts) is refused.
    pub(crate) fn parse(text: &str) -> Option<Self> {
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

/// Which hosts the server answers to.
#[derive(Clone, Debug, Default)]
pub(crate) struct HostAllowList {
    /// Configured entries: a name without a port matches it on any port.
    configured: Vec<HostPort>,
}

const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl HostAllowList {
    /// The list from configured `name[:port]` entries; unparsable entries are errors.
    pub(crate) fn new(entries: &[String]) -> Result<Self, ConfigError> {
        let configured = entries
            .iter()
            .map(|e| {
                HostPort::parse(e.trim()).ok_or_else(|| ConfigError::InvalidAllowedHost(e.clone()))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { configured })
    }

    /// The list from the entries that parse (the others match nothing).
    pub(crate) fn parsable(entries: &[String]) -> Self {
        let configured = entries
            .iter()
            .filter_map(|e| HostPort::parse(e.trim()))
            .collect();
        Self { configured }
    }

    /// Whether `host` (with `default_port` when it names none) may be served by a connection
    /// accepted on `local`. Allowed: configured entries; the local address itself; and
    /// `localhost`, `127.0.0.1`, `[::1]` on the local port (on any port when the local
    /// address is unknown because another server accepted the connection).
    pub(crate) fn allows(
        &self,
        host: &HostPort,
        default_port: u16,
        local: Option<SocketAddr>,
    ) -> bool {
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
