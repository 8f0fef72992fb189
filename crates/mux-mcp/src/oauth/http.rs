//! The HTTP client of the OAuth flow (metadata discovery, registration, token requests),
//! on mux's TLS setup.
//!
//! rmcp's own client builds reqwest clients with the process-wide rustls provider, which mux
//! does not install, so mux passes this one instead. It keeps rmcp's guard against
//! server-side request forgery: hosts named by discovered metadata may resolve to any public
//! address, but to a loopback or private one only when the server's own URL names one of
//! the same class; link-local (cloud instance metadata), unspecified, broadcast, multicast
//! and reserved addresses are always refused. Proxy hosts from the environment are exempt,
//! since the proxy resolves the target.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRedirectPolicy,
    OAuthHttpRequest,
};
use rustls::pki_types::CertificateDer;

use crate::tls;

/// A timeout for OAuth requests that do not suggest one.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest OAuth response body read.
const MAX_BODY: usize = 1024 * 1024;
/// The most redirects followed.
const MAX_REDIRECTS: usize = 10;
const PROXY_ENV_VARS: [&str; 6] = [
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
];

/// Where an address points, for the forgery guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AddressClass {
    Public,
    Loopback,
    Private,
    Blocked,
}

impl AddressClass {
    fn of(addr: IpAddr) -> Self {
        let addr = match addr {
            IpAddr::V6(v6) => embedded_ipv4(v6).map_or(IpAddr::V6(v6), IpAddr::V4),
            v4 => v4,
        };
        match addr {
            IpAddr::V4(v4) => {
                let [a, b, ..] = v4.octets();
                let shared = a == 100 && (64..=127).contains(&b);
                if v4.is_loopback() {
                    Self::Loopback
                } else if v4.is_private() || shared {
                    Self::Private
                } else if v4.is_link_local()
                    || v4.is_broadcast()
                    || v4.is_unspecified()
                    || v4.is_multicast()
                    || a == 0
                    || (a == 198 && matches!(b, 18 | 19))
                {
                    Self::Blocked
                } else {
                    Self::Public
                }
            }
            IpAddr::V6(v6) => {
                let s = v6.segments();
                if v6.is_loopback() {
                    Self::Loopback
                } else if (s[0] & 0xfe00) == 0xfc00 {
                    Self::Private
                } else if v6.is_unspecified()
                    || v6.is_multicast()
                    || (s[0] & 0xffc0) == 0xfe80
                    || s[..2] == [0x2001, 0]
                    || s[..3] == [0x64, 0xff9b, 1]
                {
                    Self::Blocked
                } else {
                    Self::Public
                }
            }
        }
    }
}

/// The IPv4 address inside IPv4-mapped, IPv4-compatible, NAT64 and 6to4 addresses.
fn embedded_ipv4(addr: Ipv6Addr) -> Option<Ipv4Addr> {
    let [a, b, c, d, e, f, g, h] = addr.segments();
    let low = Ipv4Addr::from((u32::from(g) << 16) | u32::from(h));
    match [a, b, c, d, e, f] {
        [0, 0, 0, 0, 0, 0xffff] | [0x64, 0xff9b, 0, 0, 0, 0] => Some(low),
        [0, 0, 0, 0, 0, 0] if !addr.is_loopback() && !addr.is_unspecified() => Some(low),
        [0x2002, ..] => Some(Ipv4Addr::from((u32::from(b) << 16) | u32::from(c))),
        _ => None,
    }
}

/// The IP address a URL's host is written as, if it is one.
fn literal_ip(url: &reqwest::Url) -> Option<IpAddr> {
    let host = url.host_str()?;
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .parse()
        .ok()
}

fn normalize_host(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

/// Which addresses OAuth requests for one server may reach.
#[derive(Debug, Clone)]
struct AddressPolicy {
    base_ip: Option<IpAddr>,
    base_classes: Vec<AddressClass>,
    unfiltered_hosts: Vec<String>,
}

impl AddressPolicy {
    fn new(base: &reqwest::Url, proxies: impl IntoIterator<Item = String>) -> Self {
        let base_ip = literal_ip(base);
        let base_classes = match (base_ip, base.host_str().map(normalize_host)) {
            (Some(ip), _) => vec![AddressClass::of(ip)],
            (None, Some(host)) if host == "localhost" || host.ends_with(".localhost") => {
                vec![AddressClass::Loopback]
            }
            _ => Vec::new(),
        };
        let unfiltered_hosts = proxies
            .into_iter()
            .filter_map(|proxy| {
                let proxy = if proxy.contains("://") {
                    proxy
                } else {
                    format!("http://{proxy}")
                };
                reqwest::Url::parse(&proxy)
                    .ok()?
                    .host_str()
                    .map(normalize_host)
            })
            .collect();
        Self {
            base_ip,
            base_classes,
            unfiltered_hosts,
        }
    }

    fn allows(&self, class: AddressClass) -> bool {
        match class {
            AddressClass::Public => true,
            AddressClass::Loopback | AddressClass::Private => self.base_classes.contains(&class),
            AddressClass::Blocked => false,
        }
    }

    /// Checks an IP-literal host, which reqwest connects to without resolving. The server
    /// URL's own literal is always allowed.
    fn allows_url(&self, url: &reqwest::Url) -> bool {
        match literal_ip(url) {
            Some(ip) => self.base_ip == Some(ip) || self.allows(AddressClass::of(ip)),
            None => true,
        }
    }
}

/// Resolves with the system resolver and drops the addresses the policy refuses.
struct FilteringResolver(Arc<AddressPolicy>);

impl Resolve for FilteringResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.0.clone();
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let resolved: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if policy.unfiltered_hosts.contains(&normalize_host(&host)) {
                return Ok(Box::new(resolved.into_iter()) as Addrs);
            }
            let allowed: Vec<SocketAddr> = resolved
                .into_iter()
                .filter(|addr| policy.allows(AddressClass::of(addr.ip())))
                .collect();
            if allowed.is_empty() {
                return Err(format!(
                    "no address of `{host}` is allowed for OAuth requests from this server"
                )
                .into());
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

/// The OAuth HTTP client for one server: two reqwest clients (following redirects or not)
/// on mux's TLS, with the address guard.
pub(crate) struct OAuthHttp {
    follow: reqwest::Client,
    stop: reqwest::Client,
    policy: Arc<AddressPolicy>,
}

impl OAuthHttp {
    /// The client for the server at `server_url`, trusting the platform's roots and
    /// `extra_roots`.
    pub(crate) fn new(
        server_url: &str,
        extra_roots: Vec<CertificateDer<'static>>,
    ) -> Result<Self, String> {
        let base =
            reqwest::Url::parse(server_url).map_err(|err| format!("bad server URL: {err}"))?;
        let proxies = PROXY_ENV_VARS
            .iter()
            .filter_map(|var| std::env::var(var).ok());
        let policy = Arc::new(AddressPolicy::new(&base, proxies));
        let build = |redirect: reqwest::redirect::Policy| {
            tls::client_builder(extra_roots.clone())?
                .timeout(DEFAULT_TIMEOUT)
                .redirect(redirect)
                .dns_resolver(FilteringResolver(policy.clone()))
                .build()
                .map_err(|err| format!("cannot build the OAuth HTTP client: {err}"))
        };
        let guard = policy.clone();
        let follow = reqwest::redirect::Policy::custom(move |attempt| {
            if !guard.allows_url(attempt.url()) {
                let refused = format!(
                    "OAuth redirect to `{}` refused: address not allowed for this server",
                    attempt.url()
                );
                attempt.error(refused)
            } else if attempt.previous().len() > MAX_REDIRECTS {
                attempt.error(format!("OAuth request exceeded {MAX_REDIRECTS} redirects"))
            } else {
                attempt.follow()
            }
        });
        Ok(Self {
            follow: build(follow)?,
            stop: build(reqwest::redirect::Policy::none())?,
            policy,
        })
    }
}

impl OAuthHttp {
    /// POSTs a form to `url` without following redirects (a token request the crate builds
    /// itself); returns the status and the body.
    pub(crate) async fn post_form(
        &self,
        url: &str,
        form: String,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpClientError> {
        let request = http::Request::post(url)
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .body(form.into_bytes())?;
        let outgoing = reqwest::Request::try_from(request)?;
        self.send(&self.stop, outgoing, None).await
    }

    async fn send(
        &self,
        client: &reqwest::Client,
        mut outgoing: reqwest::Request,
        timeout: Option<Duration>,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpClientError> {
        if !self.policy.allows_url(outgoing.url()) {
            return Err(format!(
                "OAuth request to `{}` refused: address not allowed for this server",
                outgoing.url()
            )
            .into());
        }
        if timeout.is_some() {
            *outgoing.timeout_mut() = timeout;
        }
        let mut response = client
            .execute(outgoing)
            .await
            .map_err(|err| Box::new(err) as OAuthHttpClientError)?;
        let mut builder = http::Response::builder()
            .status(response.status())
            .version(response.version());
        for (name, value) in response.headers() {
            builder = builder.header(name, value);
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|err| Box::new(err) as OAuthHttpClientError)?
        {
            if chunk.len() > MAX_BODY - body.len() {
                return Err(format!("OAuth response body exceeds {MAX_BODY} bytes").into());
            }
            body.extend_from_slice(&chunk);
        }
        builder
            .body(body)
            .map_err(|err| Box::new(err) as OAuthHttpClientError)
    }
}

impl OAuthHttpClient for OAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let client = match request.redirect_policy {
                OAuthHttpRedirectPolicy::Stop => &self.stop,
                _ => &self.follow,
            };
            let outgoing = reqwest::Request::try_from(request.request)
                .map_err(|err| Box::new(err) as OAuthHttpClientError)?;
            self.send(client, outgoing, request.timeout).await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(base: &str) -> AddressPolicy {
        AddressPolicy::new(&reqwest::Url::parse(base).unwrap(), Vec::new())
    }

    fn url(text: &str) -> reqwest::Url {
        reqwest::Url::parse(text).unwrap()
    }

    #[test]
    fn addresses_are_classified() {
        for (ip, class) in [
            ("127.0.0.1", AddressClass::Loopback),
            ("::1", AddressClass::Loopback),
            ("10.1.2.3", AddressClass::Private),
            ("100.64.0.1", AddressClass::Private),
            ("fd00::1", AddressClass::Private),
            ("169.254.169.254", AddressClass::Blocked),
            ("::ffff:169.254.169.254", AddressClass::Blocked),
            ("fe80::1", AddressClass::Blocked),
            ("0.0.0.0", AddressClass::Blocked),
            ("93.184.216.34", AddressClass::Public),
            ("2606:4700::1", AddressClass::Public),
        ] {
            assert_eq!(AddressClass::of(ip.parse().unwrap()), class, "{ip}");
        }
    }

    #[test]
    fn private_targets_need_a_private_server() {
        let public = policy("https://mcp.example.com/mcp");
        assert!(public.allows_url(&url("https://auth.example.com/token")));
        assert!(public.allows_url(&url("https://93.184.216.34/token")));
        assert!(!public.allows_url(&url("http://127.0.0.1/token")));
        assert!(!public.allows_url(&url("http://10.0.0.9/token")));
        assert!(!public.allows_url(&url("http://169.254.169.254/latest")));

        let local = policy("http://localhost:3000/mcp");
        assert!(local.allows_url(&url("http://127.0.0.1:4000/token")));
        assert!(local.allows_url(&url("http://[::1]:4000/token")));
        assert!(!local.allows_url(&url("http://10.0.0.9/token")));

        let private = policy("http://10.0.0.5/mcp");
        assert!(private.allows_url(&url("http://10.0.0.9/token")));
        assert!(!private.allows_url(&url("http://169.254.169.254/")));
    }

    #[test]
    fn proxy_hosts_are_not_filtered() {
        let policy = AddressPolicy::new(
            &url("https://mcp.example.com/mcp"),
            ["proxy.corp:3128".to_string(), "http://Other.Proxy./".into()],
        );
        assert_eq!(policy.unfiltered_hosts, ["proxy.corp", "other.proxy"]);
    }
}
