//! Names to addresses, by the proxy itself: the system resolver's answer without the
//! addresses a sandboxed command may not reach (loopback, private, link-local, metadata, and
//! the IPv6 forms that carry one of those).

use std::net::SocketAddr;
use std::time::Duration;

use super::policy::NetworkPolicy;
use super::refusal::Refusal;
use super::rule::Host;
use crate::address::{classify_egress, classify_host};

/// How long a lookup may take.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(10);

/// Refuses `host` when it is internal as written: an internal IP address, or a name such as
/// `localhost` (unless a test mapped it).
pub(crate) fn refuse_internal(
    policy: &NetworkPolicy,
    host: &Host,
    port: u16,
) -> Result<(), Refusal> {
    match host {
        Host::Ip(ip) => match classify_egress(*ip) {
            Some(kind) => Err(Refusal::internal(host, port, None, *ip, kind)),
            None => Ok(()),
        },
        Host::Name(name) if policy.test_hosts.contains_key(name) => Ok(()),
        Host::Name(name) => match classify_host(name) {
            Some(kind) => Err(Refusal::internal_name(host, port, kind)),
            None => Ok(()),
        },
    }
}

/// The addresses `host:port` may be reached at, or why none.
pub(crate) async fn resolve(
    policy: &NetworkPolicy,
    host: &Host,
    port: u16,
) -> Result<Vec<SocketAddr>, Refusal> {
    refuse_internal(policy, host, port)?;
    let name = match host {
        Host::Ip(ip) => return Ok(vec![SocketAddr::new(*ip, port)]),
        Host::Name(name) => name,
    };
    if let Some(addrs) = policy.test_hosts.get(name) {
        return Ok(addrs.clone());
    }
    let lookup = format!("{name}:{port}");
    let found = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host(lookup))
        .await
        .map_err(|_| Refusal::unresolved(host, port, "the lookup timed out".into()))?
        .map_err(|err| Refusal::unresolved(host, port, err.to_string()))?;
    public_only(host, port, found.collect())
}

/// The public addresses of `found`; a refusal naming an internal one when none is left.
fn public_only(host: &Host, port: u16, found: Vec<SocketAddr>) -> Result<Vec<SocketAddr>, Refusal> {
    let mut internal = None;
    let kept: Vec<SocketAddr> = found
        .into_iter()
        .filter(|addr| match classify_egress(addr.ip()) {
            Some(kind) => {
                internal.get_or_insert((addr.ip(), kind));
                false
            }
            None => true,
        })
        .collect();
    match (kept.is_empty(), internal) {
        (true, Some((ip, kind))) => Err(Refusal::internal(host, port, Some(()), ip, kind)),
        (true, None) => Err(Refusal::unresolved(host, port, "no address found".into())),
        _ => Ok(kept),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap_or_else(|_| unreachable!())
    }

    #[test]
    fn internal_answers_are_dropped_and_named() {
        let host = Host::Name("mixed.test".into());
        let kept = public_only(
            &host,
            443,
            vec![addr("10.0.0.1:443"), addr("93.184.215.14:443")],
        );
        assert_eq!(kept.ok(), Some(vec![addr("93.184.215.14:443")]));
        for (answer, kind) in [
            ("127.0.0.1:443", "loopback"),
            ("169.254.169.254:443", "cloud metadata"),
            ("[::ffff:127.0.0.1]:443", "loopback"),
            ("[fd00::1]:443", "private"),
        ] {
            let err = public_only(&host, 443, vec![addr(answer)]).err();
            let text = err.map(|e| e.to_string()).unwrap_or_default();
            assert!(text.contains(kind) && text.contains("mixed.test"), "{text}");
        }
    }
}
