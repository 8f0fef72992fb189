//! API keys that never show up in `Debug`, `Display`, errors or logs.

use std::fmt;

/// An API key. `Debug` prints `ApiKey([redacted])`; there is no `Display`.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// Reads a key from an environment variable; `None` when unset or empty.
    pub fn from_env(var: &str) -> Option<Self> {
        std::env::var(var)
            .ok()
            .filter(|key| !key.trim().is_empty())
            .map(|key| Self(key.trim().to_owned()))
    }

    /// The key itself, for building a request header. Do not log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_key() {
        let key = ApiKey::new("sk-ant-very-secret");
        assert_eq!(format!("{key:?}"), "ApiKey([redacted])");
        assert!(!format!("{:?}", Some(key)).contains("very-secret"));
    }
}
