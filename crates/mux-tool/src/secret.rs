//! Secrets (API keys, bearer tokens, secret headers) that never show up in `Debug`,
//! `Display`, errors or logs.

use std::fmt;

/// A secret value: an API key, a bearer token, a secret header. `Debug` prints
/// `Secret([redacted])`; there is no `Display`. Every crate of mux holds its secrets in it.
///
/// ```
/// use mux_tool::Secret;
///
/// let key = Secret::new("sk-very-secret");
/// assert_eq!(format!("{key:?}"), "Secret([redacted])");
/// assert_eq!(key.expose(), "sk-very-secret");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// Reads a secret from an environment variable; `None` when unset or empty.
    pub fn from_env(var: &str) -> Option<Self> {
        std::env::var(var)
            .ok()
            .filter(|key| !key.trim().is_empty())
            .map(|key| Self(key.trim().to_owned()))
    }

    /// The secret itself, for the header or config that sends it. Do not log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_key() {
        let key = Secret::new("sk-ant-very-secret");
        assert_eq!(format!("{key:?}"), "Secret([redacted])");
        assert!(!format!("{:?}", Some(key)).contains("very-secret"));
    }
}
