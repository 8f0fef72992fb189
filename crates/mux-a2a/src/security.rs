//! The checks every request passes before a method runs, in this order: `Host` (DNS
//! rebinding), `Origin` (cross-site pages), the bearer token (JSON-RPC only; the card is
//! public), and for `POST` a JSON `Content-Type` (no form or `text/plain` bodies a page could
//! send without a preflight).
//!
//! The checks themselves are mux-http's, shared with mux-web and mux-mcp's server; this
//! module picks the A2A face's rules (loopback names on any port pass the `Host` check, a
//! page of the server's own loopback origin may call it) and its error codes.

use std::net::{Ipv4Addr, SocketAddr};

use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use mux_http::{BearerToken, HostAllowList, OriginAllowList, Refused, single};

use crate::config::A2aConfig;
#[cfg(test)]
use axum::http::HeaderValue;

/// A refused request: the status and what was wrong.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) reason: &'static str,
    pub(crate) message: String,
}

impl From<Refused> for Refusal {
    fn from(refused: Refused) -> Self {
        let reason = match &refused {
            Refused::NoHost => "BAD_HOST",
            Refused::DuplicateHeader(_) => "DUPLICATE_HEADER",
            Refused::HostNotAllowed(_) => "HOST_NOT_ALLOWED",
            Refused::OriginNotAllowed(_) => "ORIGIN_NOT_ALLOWED",
            Refused::NotJson(_) => "UNSUPPORTED_MEDIA_TYPE",
            _ => "BAD_REQUEST",
        };
        let message = match &refused {
            Refused::NoHost => "no Host header".to_owned(),
            other => other.to_string(),
        };
        Self {
            status: refused.status(),
            reason,
            message,
        }
    }
}

/// The checks, built once from the configuration.
#[derive(Debug)]
pub(crate) struct Guard {
    hosts: HostAllowList,
    origins: OriginAllowList,
    token: Option<BearerToken>,
}

impl Guard {
    pub(crate) fn new(config: &A2aConfig) -> Result<Self, String> {
        let hosts = HostAllowList::new(&config.allowed_hosts).map_err(|e| e.to_string())?;
        let origins = OriginAllowList::new(&config.allowed_origins);
        let token = config
            .bearer_token
            .as_ref()
            .map(|t| {
                if t.trim().is_empty() {
                    Err("the bearer token is empty".to_owned())
                } else {
                    Ok(BearerToken::new(t))
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
        // Loopback names on any port, and the configured hosts.
        self.hosts.check(headers, uri, None)?;
        if let Some(origin) = single(headers, &header::ORIGIN)? {
            let text = origin.to_str().unwrap_or_default();
            let allowed = match local_port {
                // Only the server's own loopback origin, not every allowed host's.
                Some(port) => self.origins.allows(
                    text,
                    &HostAllowList::default(),
                    Some(SocketAddr::from((Ipv4Addr::LOCALHOST, port))),
                ),
                None => self.origins.listed(text),
            };
            if !allowed {
                return Err(Refused::OriginNotAllowed(mux_http::shown(origin.as_bytes())).into());
            }
        }
        Ok(())
    }

    /// The bearer token (when one is configured) and, for `POST`, a JSON body.
    pub(crate) fn check_call(&self, method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
        if let Some(expected) = &self.token {
            let given = single(headers, &header::AUTHORIZATION)?;
            if !given.is_some_and(|v| expected.authorizes(v.as_bytes())) {
                return Err(Refusal {
                    status: StatusCode::UNAUTHORIZED,
                    reason: "UNAUTHENTICATED",
                    message: "a bearer token is required (Authorization: Bearer <token>)".into(),
                });
            }
        }
        if method == Method::POST {
            mux_http::require_json(headers)?;
        }
        Ok(())
    }
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
