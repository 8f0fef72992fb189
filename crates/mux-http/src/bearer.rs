//! `Authorization: Bearer <token>`: the credential's syntax, and a token kept as its SHA-256
//! digest and compared in constant time.

use std::fmt;

use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

/// The token of a `Bearer` credential: the scheme compared case-insensitively (RFC 9110
/// §11.1), then one or more spaces, then a non-empty token without spaces. Anything else is
/// `None`.
pub fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"bearer") {
        return None;
    }
    let token = rest.strip_prefix(b" ")?.trim_ascii();
    (!token.is_empty() && !token.contains(&b' ')).then_some(token)
}

/// A secret token, kept only as its SHA-256 digest: the comparison takes the same time
/// whatever the given token's length or content, and `Debug` shows nothing of it.
#[derive(Clone)]
pub struct BearerToken([u8; 32]);

impl BearerToken {
    /// The token `secret`. An empty or blank one matches nothing ([`bearer`] never yields
    /// an empty token); a server that refuses such a configuration checks it itself.
    pub fn new(secret: &str) -> Self {
        Self(Sha256::digest(secret.as_bytes()).into())
    }

    /// Whether `given` (a token from [`bearer`]) is this one, in constant time.
    pub fn matches(&self, given: &[u8]) -> bool {
        let digest: [u8; 32] = Sha256::digest(given).into();
        bool::from(digest.ct_eq(&self.0))
    }

    /// Whether an `Authorization` header value is `Bearer <this token>`.
    pub fn authorizes(&self, header: &[u8]) -> bool {
        bearer(header).is_some_and(|given| self.matches(given))
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheme_is_case_insensitive_and_the_token_exact() {
        let token = BearerToken::new("tok-a");
        for (value, ok) in [
            ("Bearer tok-a", true),
            ("bearer tok-a", true),
            ("BeArEr   tok-a", true),
            ("Bearer tok-a ", true),
            ("Bearer tok-", false),
            ("Bearer tok-aa", false),
            ("Bearer TOK-A", false),
            ("Basic tok-a", false),
            ("Bearertok-a", false),
            ("tok-a", false),
            ("Bearer ", false),
            ("Bearer", false),
            ("", false),
            ("Bearer tok-a extra", false),
        ] {
            assert_eq!(token.authorizes(value.as_bytes()), ok, "{value:?}");
        }
    }

    #[test]
    fn a_blank_token_matches_nothing_and_debug_hides_it() {
        for blank in ["", " "] {
            let token = BearerToken::new(blank);
            for value in ["Bearer ", "Bearer  ", "Bearer", "bearer \t"] {
                assert!(!token.authorizes(value.as_bytes()), "{blank:?} {value:?}");
            }
        }
        let text = format!("{:?}", BearerToken::new("s3cret"));
        assert!(!text.contains("s3cret"), "{text}");
    }
}
