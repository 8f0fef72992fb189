//! Who is asking: the [`Authenticator`] seam, the one-principal default and bearer tokens.

use std::fmt;
use std::sync::Arc;

use axum::http::{HeaderMap, header};
use mux_http::{BearerToken, bearer};

/// Who makes a request. A thread belongs to the principal that created it; another principal
/// sees neither the thread nor its runs.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Principal(Arc<str>);

impl Principal {
    /// A principal named `name` (a user id, a tenant, ...).
    pub fn new(name: impl Into<String>) -> Self {
        Self(Arc::from(name.into()))
    }

    /// The one principal of a server without per-user auth (also the owner of threads stored
    /// before owners were recorded).
    pub fn local() -> Self {
        Self::new("local")
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Principal({})", self.0)
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Maps a request to the principal making it, or refuses it (401). Called once per request
/// before any route runs, with the request's headers; keep it quick (cache remote lookups).
pub trait Authenticator: Send + Sync + 'static {
    /// The principal, or `None` to refuse the request.
    fn authenticate(&self, headers: &HeaderMap) -> Option<Principal>;
}

/// No authentication: every request is [`Principal::local`]. The default, for a server on
/// 127.0.0.1 behind the Host and Origin checks.
#[derive(Clone, Copy, Debug, Default)]
pub struct OnePrincipal;

impl Authenticator for OnePrincipal {
    fn authenticate(&self, _headers: &HeaderMap) -> Option<Principal> {
        Some(Principal::local())
    }
}

/// `Authorization: Bearer <token>` (the scheme in any case), each token naming a principal.
/// Tokens are compared in constant time (by SHA-256 digest, mux-http's [`BearerToken`]), and
/// every token is compared.
#[derive(Clone, Default)]
pub struct BearerTokens {
    tokens: Vec<(BearerToken, Principal)>,
}

impl fmt::Debug for BearerTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the tokens.
        f.debug_struct("BearerTokens")
            .field(
                "principals",
                &self.tokens.iter().map(|(_, p)| p).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl BearerTokens {
    /// No tokens yet (refuses every request until one is added).
    pub fn new() -> Self {
        Self::default()
    }

    /// One token for [`Principal::local`]: a single-user server that still wants a secret.
    pub fn single(token: impl Into<String>) -> Self {
        Self::new().token(token, Principal::local())
    }

    /// Adds `token` for `principal`. An empty token is ignored (it would match an empty
    /// header).
    pub fn token(mut self, token: impl Into<String>, principal: Principal) -> Self {
        let token = token.into();
        if !token.is_empty() {
            self.tokens.push((BearerToken::new(&token), principal));
        }
        self
    }
}

impl Authenticator for BearerTokens {
    fn authenticate(&self, headers: &HeaderMap) -> Option<Principal> {
        let mut values = headers.get_all(header::AUTHORIZATION).iter();
        let value = values.next()?;
        if values.next().is_some() {
            return None; // two Authorization headers: ambiguous, refused.
        }
        let given = bearer(value.as_bytes())?;
        let mut found = None;
        for (token, principal) in &self.tokens {
            if token.matches(given) && found.is_none() {
                found = Some(principal.clone());
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for v in values {
            map.append(
                header::AUTHORIZATION,
                HeaderValue::from_str(v).unwrap_or_else(|_| HeaderValue::from_static("x")),
            );
        }
        map
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive_and_the_token_exact() {
        let auth = BearerTokens::new()
            .token("tok-a", Principal::new("alice"))
            .token("tok-b", Principal::new("bob"));
        for (value, who) in [
            ("Bearer tok-a", Some("alice")),
            ("bearer tok-a", Some("alice")),
            ("BEARER tok-b", Some("bob")),
            ("BeArEr   tok-b", Some("bob")),
            ("Bearer tok-", None),
            ("Bearer tok-aa", None),
            ("Bearer TOK-A", None),
            ("Basic tok-a", None),
            ("Bearertok-a", None),
            ("tok-a", None),
            ("Bearer ", None),
            ("Bearer tok-a extra", None),
        ] {
            let got = auth.authenticate(&headers(&[value]));
            assert_eq!(got.as_ref().map(Principal::name), who, "{value}");
        }
        assert_eq!(auth.authenticate(&HeaderMap::new()), None);
        assert_eq!(
            auth.authenticate(&headers(&["Bearer tok-a", "Bearer tok-a"])),
            None
        );
        assert_eq!(
            BearerTokens::single("").authenticate(&headers(&["Bearer "])),
            None
        );
    }

    #[test]
    fn debug_never_prints_a_token() {
        let text = format!("{:?}", BearerTokens::single("s3cret"));
        assert!(!text.contains("s3cret"), "{text}");
    }
}
