//! `web_fetch`'s DNS resolver: the system's answer without internal addresses.
//!
//! The permission layer judges the URL's host as written, so a name such as
//! `169.254.169.254.nip.io` that resolves to a metadata or loopback address would pass it.
//! This resolver drops the addresses [`classify_ip`] calls internal from a name's answer,
//! and fails when none is left, so a fetch by name reaches only what the name's public
//! addresses reach. Names that are internal themselves (`localhost`, `metadata.google.internal`)
//! are resolved as they are: the permission layer denies them unless a rule names them.
//! IP addresses written in the URL never come here.

use std::net::{SocketAddr, ToSocketAddrs};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use crate::address::{classify_host, classify_ip};

/// Resolves with the system resolver, keeping public addresses only.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PublicDns;

impl Resolve for PublicDns {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let lookup = host.clone();
            let found = tokio::task::spawn_blocking(move || {
                (lookup.as_str(), 0).to_socket_addrs().map(Vec::from_iter)
            })
            .await??;
            let kept = keep_public(&host, found)?;
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

/// The addresses of `host` a fetch may connect to.
fn keep_public(host: &str, found: Vec<SocketAddr>) -> Result<Vec<SocketAddr>, String> {
    if classify_host(host).is_some() {
        return Ok(found);
    }
    let mut internal = None;
    let kept: Vec<SocketAddr> = found
        .into_iter()
        .filter(|addr| match classify_ip(addr.ip()) {
            Some(kind) => {
                internal = Some((addr.ip(), kind));
                false
            }
            None => true,
        })
        .collect();
    match (kept.is_empty(), internal) {
        (true, Some((ip, kind))) => Err(format!(
            "{host} resolves to {ip}, a {kind} address; web_fetch does not reach internal \
             addresses through a name (write the address, or `localhost`, for a permission rule to allow)"
        )),
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
    fn internal_answers_are_dropped() {
        let both = vec![addr("169.254.169.254:0"), addr("93.184.215.14:0")];
        assert_eq!(
            keep_public("mixed.example", both),
            Ok(vec![addr("93.184.215.14:0")])
        );
        let err = keep_public("169.254.169.254.nip.io", vec![addr("169.254.169.254:0")]);
        assert!(err.is_err_and(|e| e.contains("cloud metadata")));
        let err = keep_public("evil.example", vec![addr("[::ffff:127.0.0.1]:0")]);
        assert!(err.is_err_and(|e| e.contains("loopback")));
        assert_eq!(
            keep_public("localhost", vec![addr("127.0.0.1:0")]),
            Ok(vec![addr("127.0.0.1:0")])
        );
        assert_eq!(keep_public("nothing.example", Vec::new()), Ok(Vec::new()));
    }
}
