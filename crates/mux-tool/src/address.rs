//! Internal network addresses: the hosts a fetch must not reach unless someone allowed them
//! by name (loopback, link-local, cloud metadata services, the unspecified address).
//!
//! The checks take a host already normalised by a URL parser (the WHATWG one in the `url`
//! crate, which reqwest uses): an IP address, or a lower-case ASCII name. IPv6 addresses that
//! embed an IPv4 address (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64
//! `64:ff9b::a.b.c.d`) are judged by that IPv4 address.
//!
//! ```
//! use mux_tool::address::{Internal, classify_host};
//!
//! assert_eq!(classify_host("169.254.169.254"), Some(Internal::Metadata));
//! assert_eq!(classify_host("[::ffff:127.0.0.1]"), Some(Internal::Loopback));
//! assert_eq!(classify_host("Metadata.Google.Internal."), Some(Internal::Metadata));
//! assert_eq!(classify_host("example.com"), None);
//! ```

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why a host is internal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Internal {
    /// The machine itself: 127.0.0.0/8, `::1`, `localhost` and `*.localhost`.
    Loopback,
    /// Link-local: 169.254.0.0/16, `fe80::/10`.
    LinkLocal,
    /// A cloud instance metadata service: 169.254.169.254 (AWS, GCP, Azure, Oracle),
    /// 169.254.170.2 (AWS ECS), `fd00:ec2::254` (AWS IPv6), 100.100.100.200 (Alibaba),
    /// 192.0.0.192 (Oracle), `metadata.google.internal`, `metadata.goog`, `instance-data`.
    Metadata,
    /// The unspecified address, which reaches the machine itself: 0.0.0.0/8, `::`.
    Unspecified,
    /// A private network (only [`classify_egress`] reports it): 10.0.0.0/8, 172.16.0.0/12,
    /// 192.168.0.0/16, the shared 100.64.0.0/10, unique local `fc00::/7` and site-local
    /// `fec0::/10`.
    Private,
}

impl Internal {
    /// A short name: `loopback`, `link-local`, `cloud metadata`, `unspecified`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Loopback => "loopback",
            Self::LinkLocal => "link-local",
            Self::Metadata => "cloud metadata",
            Self::Unspecified => "unspecified",
            Self::Private => "private",
        }
    }
}

impl fmt::Display for Internal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Names of metadata services that resolve to one of the addresses above.
const METADATA_NAMES: &[&str] = &[
    "metadata.google.internal",
    "metadata.goog",
    "metadata",
    "instance-data",
    "instance-data.ec2.internal",
];

/// Metadata services' IPv4 addresses.
const METADATA_V4: &[Ipv4Addr] = &[
    Ipv4Addr::new(169, 254, 169, 254),
    Ipv4Addr::new(169, 254, 170, 2),
    Ipv4Addr::new(169, 254, 169, 123),
    Ipv4Addr::new(100, 100, 100, 200),
    Ipv4Addr::new(192, 0, 0, 192),
];

/// AWS's IPv6 metadata address.
const METADATA_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254);

/// What kind of internal host `host` is, if it is one: an IP address (IPv6 with or without
/// brackets) or a name (any case, with or without a trailing dot).
pub fn classify_host(host: &str) -> Option<Internal> {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return classify_ip(ip);
    }
    let name = host.trim_end_matches('.').to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        Some(Internal::Loopback)
    } else if METADATA_NAMES.contains(&name.as_str()) {
        Some(Internal::Metadata)
    } else {
        None
    }
}

/// What kind of internal address `ip` is, if it is one.
pub fn classify_ip(ip: IpAddr) -> Option<Internal> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Internal> {
    if METADATA_V4.contains(&ip) {
        Some(Internal::Metadata)
    } else if ip.is_loopback() {
        Some(Internal::Loopback)
    } else if ip.is_link_local() {
        Some(Internal::LinkLocal)
    } else if ip.octets()[0] == 0 {
        Some(Internal::Unspecified)
    } else {
        None
    }
}

fn classify_v6(ip: Ipv6Addr) -> Option<Internal> {
    if ip.is_loopback() {
        return Some(Internal::Loopback);
    }
    if ip.is_unspecified() {
        return Some(Internal::Unspecified);
    }
    if ip == METADATA_V6 {
        return Some(Internal::Metadata);
    }
    let segments = ip.segments();
    if segments[0] & 0xffc0 == 0xfe80 {
        return Some(Internal::LinkLocal);
    }
    embedded_v4(ip).and_then(classify_v4)
}

/// What kind of internal address `ip` is for a sandboxed command's egress: what
/// [`classify_ip`] reports, and private networks too (a command must not reach the machine's
/// neighbours through the agent's proxy). IPv6 forms that carry an IPv4 address are judged
/// by it, as in [`classify_ip`].
pub fn classify_egress(ip: IpAddr) -> Option<Internal> {
    classify_ip(ip).or_else(|| match ip {
        IpAddr::V4(v4) => private_v4(v4),
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            if first & 0xfe00 == 0xfc00 || first & 0xffc0 == 0xfec0 {
                Some(Internal::Private)
            } else {
                embedded_v4(v6).and_then(private_v4)
            }
        }
    })
}

fn private_v4(ip: Ipv4Addr) -> Option<Internal> {
    let [a, b, ..] = ip.octets();
    let shared = a == 100 && b & 0xc0 == 64;
    (ip.is_private() || shared).then_some(Internal::Private)
}

/// The IPv4 address an IPv6 address carries: mapped, compatible (deprecated, still routed by
/// some stacks) or NAT64 (`64:ff9b::/96`, translated by a gateway).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    let compatible = s[..6].iter().all(|&x| x == 0);
    let nat64 = s[0] == 0x64 && s[1] == 0xff9b && s[2..6].iter().all(|&x| x == 0);
    (compatible || nat64).then_some(low)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        let cases = [
            ("127.0.0.1", Some(Internal::Loopback)),
            ("127.255.1.2", Some(Internal::Loopback)),
            ("169.254.0.1", Some(Internal::LinkLocal)),
            ("169.254.169.254", Some(Internal::Metadata)),
            ("0.0.0.0", Some(Internal::Unspecified)),
            ("0.1.2.3", Some(Internal::Unspecified)),
            ("[::1]", Some(Internal::Loopback)),
            ("::", Some(Internal::Unspecified)),
            ("[fe80::1]", Some(Internal::LinkLocal)),
            ("[febf::1]", Some(Internal::LinkLocal)),
            ("[fec0::1]", None),
            ("[fd00:ec2::254]", Some(Internal::Metadata)),
            ("[::ffff:a9fe:a9fe]", Some(Internal::Metadata)),
            ("[::127.0.0.1]", Some(Internal::Loopback)),
            ("[64:ff9b::169.254.169.254]", Some(Internal::Metadata)),
            ("[::ffff:8.8.8.8]", None),
            ("[2001:db8::1]", None),
            ("8.8.8.8", None),
            ("10.0.0.1", None),
            ("localhost", Some(Internal::Loopback)),
            ("LOCALHOST.", Some(Internal::Loopback)),
            ("api.localhost", Some(Internal::Loopback)),
            ("notlocalhost", None),
            ("metadata.google.internal", Some(Internal::Metadata)),
            ("example.com", None),
        ];
        for (host, expected) in cases {
            assert_eq!(classify_host(host), expected, "{host}");
        }
    }

    #[test]
    fn egress_adds_private_networks() {
        let cases = [
            ("10.0.0.1", Some(Internal::Private)),
            ("172.16.5.4", Some(Internal::Private)),
            ("172.32.0.1", None),
            ("192.168.1.1", Some(Internal::Private)),
            ("100.64.0.1", Some(Internal::Private)),
            ("100.128.0.1", None),
            ("fd12::1", Some(Internal::Private)),
            ("fec0::1", Some(Internal::Private)),
            ("::ffff:10.1.2.3", Some(Internal::Private)),
            ("64:ff9b::192.168.0.1", Some(Internal::Private)),
            ("::ffff:127.0.0.1", Some(Internal::Loopback)),
            ("169.254.169.254", Some(Internal::Metadata)),
            ("8.8.8.8", None),
            ("2606:4700::1111", None),
        ];
        for (ip, expected) in cases {
            let ip: IpAddr = ip.parse().unwrap_or_else(|_| unreachable!());
            assert_eq!(classify_egress(ip), expected, "{ip}");
        }
    }
}
