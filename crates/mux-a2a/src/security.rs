//! The checks every request passes before a method runs, in this order: `Host` (DNS
//! rebinding), `Origin` (cross-site pages), the bearer token (JSON-RPC only; the card is
//! public), and for `POST` a JSON `Content-Type` (no form or `text/plain` bodies a page could
//! send without a preflight).
//!
//! The same rules as mux-web's and mux-mcp's servers, written again here (a few dozen lines)
//! because neither sits below this crate.

use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use sha2::{Digest, Sha256};

use crate::config::A2aConfig;

/// A refused request: the status and what was wrong.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

fn refuse(status: StatusCode, reason: &'static str, message: String) -> Refusal {
    Refusal {
        status,
        reason,
        message,
    }
}

/// The checks, built once from the configuration.
#[derive(Debug)]
pub(crate) struct Guard {
    hosts: Vec<(String, Option<u16>)>,
    origins: Vec<String>,
    token: Option<[u8; 32]>,
}

/// Names that reach this machine only.
const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

impl Guard {
    pub(crate) fn new(config: &A2aConfig) -> Result<Self, String> {
        let mut hosts: Vec<(String, Option<u16>)> =
            LOOPBACK.iter().map(|h| ((*h).to_owned(), None)).collect();
        for host in &config.allowed_hosts {
            let parsed = host_port(host)
                .ok_or_else(|| format!("allowed host `{host}` is not `name` or `name:port`"))?;
            hosts.push(parsed);
        }
        let origins = config
            .allowed_origins
            .iter()
            .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
            .collect();
        let token = config
            .bearer_token
            .as_ref()
            .map(|t| {
                if t.trim().is_empty() {
                    Err("the bearer token is empty".to_owned())
                } else {
                    Ok(Sha256::digest(t.as_bytes()).into())
                }
            })
            .transpose()?;
        Ok(Self {
            hosts,
            origins,
            token,
        })
    }

    /// The `Host` and `Origin` checks; `local_port` is the port the request came in on, when
    /// known (a page of the server's own loopback origin may call it).
    pub(crate) fn check_public(
        &self,
        headers: &HeaderMap,
        uri: &Uri,
        local_port: Option<u16>,
    ) -> Result<(), Refusal> {
        let host = single(headers, header::HOST)?
            .ok_or_else(|| refuse(StatusCode::BAD_REQUEST, "BAD_HOST", "no Host header".into()))?;
        let mut names = vec![host.as_bytes()];
        if let Some(authority) = uri.authority() {
            names.push(authority.as_str().as_bytes());
        }
        for name in names {
            let allowed = std::str::from_utf8(name)
                .ok()
                .and_then(host_port)
                .is_some_and(|(host, port)| {
                    self.hosts
                        .iter()
                        .any(|(h, p)| *h == host && (p.is_none() || *p == port))
                });
            if !allowed {
                return Err(refuse(
                    StatusCode::FORBIDDEN,
                    "HOST_NOT_ALLOWED",
                    format!("Host `{}` is not allowed", shown(name)),
                ));
            }
        }
        if let Some(origin) = single(headers, header::ORIGIN)? {
            let text = origin.to_str().unwrap_or_default().trim_end_matches('/');
            if !self.origin_allowed(&text.to_ascii_lowercase(), local_port) {
                return Err(refuse(
                    StatusCode::FORBIDDEN,
                    "ORIGIN_NOT_ALLOWED",
                    format!("Origin `{}` is not allowed", shown(origin.as_bytes())),
                ));
            }
        }
        Ok(())
    }

    fn origin_allowed(&self, origin: &str, local_port: Option<u16>) -> bool {
        if self.origins.iter().any(|o| o == origin) {
            return true;
        }
        let Some(port) = local_port else {
            return false;
        };
        LOOPBACK
            .iter()
            .any(|host| origin == format!("http://{host}:{port}"))
    }

    /// The bearer token (when one is configured) and, for `POST`, a JSON body.
    pub(crate) fn check_call(&self, method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
        if let Some(expected) = &self.token {
            let given = single(headers, header::AUTHORIZATION)?
                .and_then(|v| v.to_str().ok())
                .and_then(|v| {
                    let (scheme, token) = v.split_once(' ')?;
                    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
                });
            let ok = given.is_some_and(|token| {
                let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
                digest
                    .iter()
                    .zip(expected)
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
            });
            if !ok {
                return Err(refuse(
                    StatusCode::UNAUTHORIZED,
                    "UNAUTHENTICATED",
                    "a bearer token is required (Authorization: Bearer <token>)".into(),
                ));
            }
        }
        if method == Method::POST {
            let content_type = single(headers, header::CONTENT_TYPE)?;
            if !content_type.is_some_and(|v| is_json(v.as_bytes())) {
                let given = content_type.map_or_else(|| "none".to_owned(), |v| shown(v.as_bytes()));
                return Err(refuse(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "UNSUPPORTED_MEDIA_TYPE",
                    format!("Content-Type must be application/json, not {given}"),
                ));
            }
        }
        Ok(())
    }
}

/// `name`, `name:port`, `[v6]` or `[v6]:port`, lowercased; `None` when it is none of these.
fn host_port(text: &str) -> Option<(String, Option<u16>)> {
    let text = text.trim();
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (format!("[{inside}]"), port)
    } else if text == "::1" {
        ("[::1]".to_owned(), None)
    } else {
        match text.split_once(':') {
            Some((host, port)) => (host.to_owned(), Some(port)),
            None => (text.to_owned(), None),
        }
    };
    let valid = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._[]:".contains(&b));
    if !valid {
        return None;
    }
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => Some(p.parse().ok()?),
        Some(_) => return None,
    };
    Some((host.to_ascii_lowercase(), port))
}

/// The header's only value; two values are refused.
fn single(headers: &HeaderMap, name: header::HeaderName) -> Result<Option<&HeaderValue>, Refusal> {
    let mut values = headers.get_all(&name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "DUPLICATE_HEADER",
            format!("the request has more than one {name} header"),
        ));
    }
    Ok(first)
}

/// Whether a `Content-Type` is `application/json`, parameters allowed.
fn is_json(value: &[u8]) -> bool {
    let essence = value.split(|&b| b == b';').next().unwrap_or_default();
    essence
        .trim_ascii()
        .eq_ignore_ascii_case(b"application/json")
}

fn shown(value: &[u8]) -> String {
    String::from_utf8_lossy(value).chars().take(120).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn public(guard: &Guard, pairs: &[(&'static str, &str)]) -> Result<(), StatusCode> {
        guard
            .check_public(&headers(pairs), &Uri::from_static("/a2a"), Some(8080))
            .map_err(|r| r.status)
    }

    #[test]
    fn only_loopback_and_listed_hosts_pass() {
        let guard = Guard::new(&A2aConfig::default().allowed_host("agents.lan:9000")).unwrap();
        for ok in [
            "localhost",
            "localhost:8080",
            "127.0.0.1:1",
            "[::1]:8080",
            "LOCALHOST",
            "agents.lan:9000",
        ] {
            assert_eq!(public(&guard, &[("host", ok)]), Ok(()), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8080",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "agents.lan",
            "agents.lan:9001",
            "localhost:",
            "localhost:99999",
            "[::1",
            "local host",
            "",
        ] {
            assert!(public(&guard, &[("host", bad)]).is_err(), "{bad}");
        }
        assert_eq!(public(&guard, &[]), Err(StatusCode::BAD_REQUEST));
        assert_eq!(
            public(&guard, &[("host", "localhost"), ("host", "evil.example")]),
            Err(StatusCode::BAD_REQUEST)
        );
    }

    #[test]
    fn pages_of_other_origins_are_refused() {
        let guard =
            Guard::new(&A2aConfig::default().allowed_origin("https://app.example")).unwrap();
        let with = |origin: &str| public(&guard, &[("host", "localhost:8080"), ("origin", origin)]);
        for ok in [
            "http://localhost:8080",
            "http://127.0.0.1:8080",
            "https://app.example",
            "https://APP.example/",
        ] {
            assert_eq!(with(ok), Ok(()), "{ok}");
        }
        for bad in [
            "http://localhost:3000",
            "null",
            "http://evil.example",
            "https://app.example.evil",
            "file://",
        ] {
            assert_eq!(with(bad), Err(StatusCode::FORBIDDEN), "{bad}");
        }
    }

    #[test]
    fn calls_need_the_token_and_a_json_body() {
        let guard = Guard::new(&A2aConfig::default().bearer_token("s3cret")).unwrap();
        let call = |pairs: &[(&'static str, &str)]| {
            guard
                .check_call(&Method::POST, &headers(pairs))
                .map_err(|r| r.status)
        };
        let json = ("content-type", "application/json");
        assert_eq!(call(&[("authorization", "Bearer s3cret"), json]), Ok(()));
        assert_eq!(call(&[("authorization", "bearer s3cret"), json]), Ok(()));
        for bad in [
            "Bearer s3cre",
            "Bearer s3cret2",
            "Basic s3cret",
            "s3cret",
            "Bearer ",
        ] {
            assert_eq!(
                call(&[("authorization", bad), json]),
                Err(StatusCode::UNAUTHORIZED),
                "{bad}"
            );
        }
        assert_eq!(call(&[json]), Err(StatusCode::UNAUTHORIZED));
        assert_eq!(
            call(&[
                ("authorization", "Bearer s3cret"),
                ("content-type", "text/plain")
            ]),
            Err(StatusCode::UNSUPPORTED_MEDIA_TYPE)
        );
        assert!(Guard::new(&A2aConfig::default().bearer_token(" ")).is_err());
    }
}
