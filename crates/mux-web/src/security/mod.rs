//! The checks every AG-UI request passes before a route runs, in this order: `Host` (DNS
//! rebinding), `Origin` (cross-site requests), authentication (who asks), the probe limit,
//! and for `POST` a JSON `Content-Type` (no CORS-simple `text/plain` or form bodies).

mod auth;
mod host;
mod origin;
mod probes;
mod random;

use std::fmt;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

pub use auth::{Authenticator, BearerTokens, OnePrincipal, Principal};
pub use host::LocalAddr;
pub use probes::ProbeLimit;
pub use random::random_token;

pub(crate) use host::HostAllowList;
pub(crate) use origin::OriginAllowList;
pub(crate) use probes::Probes;
pub(crate) use random::unguessable;

use crate::error::WebError;

/// A request refused before any route ran, as reported to [`crate::WebConfig::on_refusal`]
/// and logged (`tracing` warn).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Refusal {
    /// The HTTP status sent.
    pub status: u16,
    /// The `error` code sent.
    pub code: &'static str,
    /// The request's method.
    pub method: String,
    /// The request's path.
    pub path: String,
    /// What was wrong, in words.
    pub message: String,
}

/// A callback for refused requests.
#[derive(Clone)]
pub struct RefusalHook(pub(crate) Arc<dyn Fn(&Refusal) + Send + Sync>);

impl fmt::Debug for RefusalHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RefusalHook")
    }
}

/// The checks, shared by every request.
pub(crate) struct Guard {
    pub(crate) hosts: HostAllowList,
    pub(crate) origins: OriginAllowList,
    pub(crate) authenticator: Arc<dyn Authenticator>,
    pub(crate) probes: Arc<Probes>,
    pub(crate) on_refusal: Option<RefusalHook>,
}

/// The middleware: refuses what fails a check; otherwise puts the [`Principal`] in the
/// request's extensions and runs the route.
pub(crate) async fn guard(
    State(guard): State<Arc<Guard>>,
    mut request: Request,
    next: Next,
) -> Response {
    match guard.check(&request) {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(error) => guard.refuse(&request, error),
    }
}

/// The middleware of public routes (the chat page): the `Host` and `Origin` checks only, no
/// authentication.
#[cfg(feature = "page")]
pub(crate) async fn guard_public(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    match guard.check_public(&request) {
        Ok(()) => next.run(request).await,
        Err(error) => guard.refuse(&request, error),
    }
}

impl Guard {
    /// Reports a refusal (log and hook) and answers it.
    fn refuse(&self, request: &Request, error: WebError) -> Response {
        let refusal = Refusal {
            status: error.status().as_u16(),
            code: error.code(),
            method: request.method().to_string(),
            path: request.uri().path().chars().take(200).collect(),
            message: error.to_string(),
        };
        tracing::warn!(
            status = refusal.status,
            code = refusal.code,
            method = %refusal.method,
            path = %refusal.path,
            "mux-web refused a request: {}",
            refusal.message
        );
        if let Some(hook) = &self.on_refusal {
            (hook.0)(&refusal);
        }
        error.into_response()
    }
}

/// At most 120 characters of a header value, for error messages.
fn shown(value: &[u8]) -> String {
    String::from_utf8_lossy(value).chars().take(120).collect()
}

impl Guard {
    /// The `Host` and the `Origin` (when one is sent): the checks of every route.
    fn check_public(&self, request: &Request) -> Result<(), WebError> {
        let local = request.extensions().get::<LocalAddr>().map(|l| l.0);
        self.check_host(request, local)?;
        if let Some(origin) = single(request.headers(), header::ORIGIN)? {
            let allowed = origin
                .to_str()
                .is_ok_and(|o| self.origins.allows(o, &self.hosts, local));
            if !allowed {
                return Err(WebError::OriginNotAllowed(shown(origin.as_bytes())));
            }
        }
        Ok(())
    }

    fn check(&self, request: &Request) -> Result<Principal, WebError> {
        let headers = request.headers();
        self.check_public(request)?;
        if request.method() == Method::OPTIONS {
            // A preflight the CORS layer did not answer; no route takes OPTIONS.
            return Ok(Principal::local());
        }
        let principal = self
            .authenticator
            .authenticate(headers)
            .ok_or(WebError::Unauthorized)?;
        if let Some(wait) = self.probes.blocked(&principal) {
            return Err(WebError::TooManyMisses {
                retry_after_secs: wait.as_secs().max(1),
            });
        }
        if request.method() == Method::POST {
            let content_type = single(headers, header::CONTENT_TYPE)?;
            if !content_type.is_some_and(|v| is_json(v.as_bytes())) {
                let given = content_type.map_or_else(|| "none".to_owned(), |v| shown(v.as_bytes()));
                return Err(WebError::UnsupportedMediaType(given));
            }
        }
        Ok(principal)
    }

    fn check_host(
        &self,
        request: &Request,
        local: Option<std::net::SocketAddr>,
    ) -> Result<(), WebError> {
        let Some(value) = single(request.headers(), header::HOST)? else {
            return Err(WebError::BadRequest(
                "the request has no Host header".into(),
            ));
        };
        let mut names = vec![value.as_bytes()];
        // An absolute-form target (`POST http://name/agui`) names a host too; both must pass.
        if let Some(authority) = request.uri().authority() {
            names.push(authority.as_str().as_bytes());
        }
        for name in names {
            let host = std::str::from_utf8(name)
                .ok()
                .and_then(host::HostPort::parse);
            if !host.is_some_and(|h| self.hosts.allows(&h, 80, local)) {
                return Err(WebError::HostNotAllowed(shown(name)));
            }
        }
        Ok(())
    }
}

/// The header's only value; two values of one header are refused.
fn single(
    headers: &HeaderMap,
    name: header::HeaderName,
) -> Result<Option<&header::HeaderValue>, WebError> {
    let mut values = headers.get_all(&name).iter();
    let first = values.next();
    if values.next().is_some() {
        return Err(WebError::BadRequest(format!(
            "the request has more than one {name} header"
        )));
    }
    Ok(first)
}

/// Whether a `Content-Type` value is `application/json`, parameters allowed
/// (`application/json; charset=utf-8`), in any case.
fn is_json(value: &[u8]) -> bool {
    let essence = value.split(|&b| b == b';').next().unwrap_or_default();
    essence
        .trim_ascii()
        .eq_ignore_ascii_case(b"application/json")
}

#[cfg(test)]
mod tests {
    use super::is_json;

    #[test]
    fn only_application_json_is_json() {
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            " application/json ;charset=UTF-8",
        ] {
            assert!(is_json(ok.as_bytes()), "{ok}");
        }
        for refused in [
            "text/plain",
            "application/jsonx",
            "application/json+x",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "",
            "application/ json",
            "text/plain; application/json",
        ] {
            assert!(!is_json(refused.as_bytes()), "{refused}");
        }
    }
}
