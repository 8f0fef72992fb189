//! The `Origin` check, against cross-site requests (CSRF): a browser names the page's origin
//! on every cross-origin request, even a no-cors one, and the server refuses those it does
//! not know.

use std::net::SocketAddr;

use http::{HeaderMap, header};

use crate::Refused;
use crate::headers::{shown, single};
use crate::host::{HostAllowList, HostPort};

/// The origins a request may come from: the server's own (an allowed host, over http or
/// https) and those configured (`*` for any but `null`).
#[derive(Clone, Debug, Default)]
pub struct OriginAllowList {
    /// Configured origins, lower case without a trailing slash.
    listed: Vec<String>,
    /// `*` was configured: any origin except `null`.
    any: bool,
}

/// An origin as compared: trimmed, without a trailing slash.
fn normal(origin: &str) -> &str {
    origin.trim().trim_end_matches('/')
}

impl OriginAllowList {
    /// The list from configured origins (`https://app.example`, or `*`).
    pub fn new(origins: &[String]) -> Self {
        Self {
            listed: origins
                .iter()
                .filter(|o| o.as_str() != "*")
                .map(|o| normal(o).to_ascii_lowercase())
                .collect(),
            any: origins.iter().any(|o| o == "*"),
        }
    }

    /// Whether `origin` is one configured (or `*` was), and not `null`.
    pub fn listed(&self, origin: &str) -> bool {
        let origin = normal(origin);
        let Some((_, authority)) = origin.split_once("://") else {
            return false; // `null`, or not an origin.
        };
        (self.any && HostPort::parse(authority).is_some())
            || self.listed.iter().any(|c| c.eq_ignore_ascii_case(origin))
    }

    /// Whether `origin` (an `Origin` header's value) is allowed: configured, or an `http` or
    /// `https` origin whose host `hosts` allows for a connection accepted on `local`. `null`
    /// (sandboxed frames, `file:` pages, some redirects) never is.
    pub fn allows(&self, origin: &str, hosts: &HostAllowList, local: Option<SocketAddr>) -> bool {
        if self.listed(origin) {
            return true;
        }
        let Some((scheme, authority)) = normal(origin).split_once("://") else {
            return false;
        };
        let default_port = match scheme.to_ascii_lowercase().as_str() {
            "http" => 80,
            "https" => 443,
            _ => return false,
        };
        HostPort::parse(authority).is_some_and(|host| hosts.allows(&host, default_port, local))
    }

    /// The `Origin` check of a request: no `Origin` (not a browser), or one allowed as
    /// [`allows`](Self::allows) says. Two `Origin` headers are refused.
    pub fn check(
        &self,
        headers: &HeaderMap,
        hosts: &HostAllowList,
        local: Option<SocketAddr>,
    ) -> Result<(), Refused> {
        let Some(origin) = single(headers, &header::ORIGIN)? else {
            return Ok(());
        };
        let allowed = origin.to_str().is_ok_and(|o| self.allows(o, hosts, local));
        if allowed {
            Ok(())
        } else {
            Err(Refused::OriginNotAllowed(shown(origin.as_bytes())))
        }
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

    #[test]
    fn a_trailing_slash_and_case_do_not_matter_and_listed_is_only_the_list() {
        let hosts = HostAllowList::default();
        let local: SocketAddr = ([127, 0, 0, 1], 8787).into();
        let list = OriginAllowList::new(&["https://App.example/".into()]);
        for ok in [
            "https://app.example",
            "https://app.example/",
            " HTTPS://APP.EXAMPLE ",
        ] {
            assert!(list.allows(ok, &hosts, Some(local)), "{ok}");
            assert!(list.listed(ok), "{ok}");
        }
        assert!(!list.listed("http://localhost:8787"));
        assert!(list.allows("http://localhost:8787", &hosts, Some(local)));
    }

    #[test]
    fn the_request_check_passes_requests_without_an_origin() {
        let hosts = HostAllowList::default();
        let list = OriginAllowList::default();
        let mut headers = HeaderMap::new();
        assert_eq!(list.check(&headers, &hosts, None), Ok(()));
        headers.append(
            header::ORIGIN,
            "http://evil.example"
                .parse()
                .unwrap_or(http::HeaderValue::from_static("x")),
        );
        assert_eq!(
            list.check(&headers, &hosts, None),
            Err(Refused::OriginNotAllowed("http://evil.example".into()))
        );
    }
}
