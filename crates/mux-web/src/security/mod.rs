//! The checks every AG-UI request passes before a route runs, in this order: `Host` (DNS
//! rebinding), `Origin` (cross-site requests), authentication (who asks), the probe limit,
//! and for `POST` a JSON `Content-Type` (no CORS-simple `text/plain` or form bodies).
//!
//! The `Host`, `Origin` and `Content-Type` checks are mux-http's, shared with mux-a2a and
//! mux-mcp's server; this module adds authentication, the probe limit and the refusal hook.

mod auth;
mod host;
mod probes;

use std::fmt;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

pub use auth::{Authenticator, BearerTokens, OnePrincipal, Principal};
pub use host::LocalAddr;
pub use mux_http::random_token;
pub use probes::ProbeLimit;

pub(crate) use host::HostAllowList;
pub(crate) use mux_http::OriginAllowList;
pub(crate) use mux_http::unguessable;
pub(crate) use probes::Probes;

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

impl From<mux_http::Refused> for WebError {
    fn from(refused: mux_http::Refused) -> Self {
        use mux_http::Refused;
        match refused {
            Refused::HostNotAllowed(host) => Self::HostNotAllowed(host),
            Refused::OriginNotAllowed(origin) => Self::OriginNotAllowed(origin),
            Refused::NotJson(given) => Self::UnsupportedMediaType(given),
            other => Self::BadRequest(other.to_string()),
        }
    }
}

impl Guard {
    /// The `Host` and the `Origin` (when one is sent): the checks of every route.
    fn check_public(&self, request: &Request) -> Result<(), WebError> {
        let local = request.extensions().get::<LocalAddr>().map(|l| l.0);
        self.hosts.check(request.headers(), request.uri(), local)?;
        self.origins.check(request.headers(), &self.hosts, local)?;
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
            mux_http::require_json(headers)?;
        }
        Ok(principal)
    }
}
