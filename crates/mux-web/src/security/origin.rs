//! The `Origin` check, against cross-site requests (CSRF): a browser names the page's origin
//! on every cross-origin request, even a no-cors one, and the server refuses those it does
//! not know.

use std::net::SocketAddr;

use super::host::{HostAllowList, HostPort};

/// The origins a request may come from: the server's own (an allowed host, over http or
/// https) and those configured for CORS.
#[derive(Clone, Debug, Default)]
pub(crate) struct OriginAllowList {
    /// Configured origins, lower case without a trailing slash.
    cors: Vec<String>,
    /// `*` was configured: any origin except `null`.
    any: bool,
}

impl OriginAllowList {
    pub(crate) fn new(cors_origins: &[String]) -> Self {
        Self {
            cors: cors_origins
                .iter()
                .filter(|o| o.as_str() != "*")
                .map(|o| o.trim().trim_end_matches('/').to_ascii_lowercase())
                .collect(),
            any: cors_origins.iter().any(|o| o == "*"),
        }
    }

    /// Whether `origin` (an `Origin` header's value) is allowed. `null` (sandboxed frames,
    /// `file:` pages, some redirects) never is.
    pub(crate) fn allows(
        &self,
        origin: &str,
        hosts: &HostAllowList,
        local: Option<SocketAddr>,
    ) -> bool {
        let origin = origin.trim();
        let Some((scheme, authority)) = origin.split_once("://") else {
            return false; // `null`, or not an origin.
        };
        let scheme = scheme.to_ascii_lowercase();
        let default_port = match scheme.as_str() {
            "http" => 80,
            "https" => 443,
            _ => return self.any && HostPort::parse(authority).is_some(),
        };
        let Some(host) = HostPort::parse(authority) else {
            return false;
        };
        if self.any || self.cors.iter().any(|c| c.eq_ignore_ascii_case(origin)) {
            return true;
        }
        hosts.allows(&host, default_port, local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_and_configured_origins_pass_and_nothing_else() {
        let hosts = HostAllowList::default();
        let local: SocketAddr = ([127, 0, 0, 1], 8787).into();
        let list = OriginAllowList::new(&["https://app.example".into()]);
        for ok in [
            "http://127.0.0.1:8787",
            "http://localhost:8787",
            "https://app.example",
            "HTTPS://APP.EXAMPLE",
        ] {
            assert!(list.allows(ok, &hosts, Some(local)), "{ok}");
        }
        for refused in [
            "null",
            "http://127.0.0.1:9999",
            "http://evil.example",
            "https://app.example.evil",
            "http://127.0.0.1:8787@evil.example",
            "file://",
            "",
            "chrome-extension://abc",
        ] {
            assert!(!list.allows(refused, &hosts, Some(local)), "{refused}");
        }
        let any = OriginAllowList::new(&["*".into()]);
        assert!(any.allows("https://anything.example", &hosts, Some(local)));
        assert!(!any.allows("null", &hosts, Some(local)));
    }
}
