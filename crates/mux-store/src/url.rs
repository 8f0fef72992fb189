//! [`StoreUrl`]: which store a URL names, read without opening anything.

use std::path::PathBuf;

use crate::open_error::OpenError;

/// A store named by a URL: `memory:`, `file://DIR`, `sqlite://PATH` (or `sqlite:PATH`), or
/// `postgres://…` / `postgresql://…`. Schemes are read without regard to case.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// Sessions and runs in this process's memory.
    Memory,
    /// Sessions and runs in files under a directory.
    Files(PathBuf),
    /// One SQLite file (feature `sqlite`).
    Sqlite(PathBuf),
    /// A PostgreSQL database (feature `postgres`), by its URL as written.
    Postgres(String),
}

impl std::fmt::Debug for StoreUrl {
    // A PostgreSQL URL may carry a password: shown masked, as in every error.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Memory => f.write_str("Memory"),
            Self::Files(dir) => f.debug_tuple("Files").field(dir).finish(),
            Self::Sqlite(path) => f.debug_tuple("Sqlite").field(path).finish(),
            Self::Postgres(url) => f.debug_tuple("Postgres").field(&redact(url)).finish(),
        }
    }
}

impl std::str::FromStr for StoreUrl {
    type Err = OpenError;

    fn from_str(url: &str) -> Result<Self, OpenError> {
        Self::parse(url)
    }
}

impl StoreUrl {
    /// Reads `url`. A `sqlite` URL's query (`?mode=rwc`) is left out of the path; a `file`
    /// URL's path is taken as written (no query). Fails with an [`OpenError`] naming the URL
    /// (its password masked) when the scheme is none of these or no path follows it.
    pub fn parse(url: &str) -> Result<Self, OpenError> {
        let Some((scheme, rest)) = url.split_once(':') else {
            return Err(OpenError::UnknownScheme { url: redact(url) });
        };
        let path = |what: &'static str, rest: &str, query: bool| {
            let rest = rest.strip_prefix("//").unwrap_or(rest);
            let rest = if query {
                rest.split('?').next().unwrap_or_default()
            } else {
                rest
            };
            if rest.is_empty() {
                Err(OpenError::NoPath {
                    url: redact(url),
                    what,
                })
            } else {
                Ok(PathBuf::from(rest))
            }
        };
        match scheme.to_ascii_lowercase().as_str() {
            "memory" if rest.is_empty() || rest == "//" => Ok(Self::Memory),
            "memory" => Err(OpenError::Malformed {
                url: redact(url),
                reason: "`memory:` takes nothing after it",
            }),
            "file" => path("directory", rest, false).map(Self::Files),
            "sqlite" => path("file", rest, true).map(Self::Sqlite),
            "postgres" | "postgresql" if rest.starts_with("//") => {
                Ok(Self::Postgres(url.to_owned()))
            }
            "postgres" | "postgresql" => Err(OpenError::Malformed {
                url: redact(url),
                reason: "a PostgreSQL URL starts `postgres://`",
            }),
            _ => Err(OpenError::UnknownScheme { url: redact(url) }),
        }
    }

    /// The feature this store needs, if any (`sqlite`, `postgres`).
    pub fn feature(&self) -> Option<&'static str> {
        match self {
            Self::Memory | Self::Files(_) => None,
            Self::Sqlite(_) => Some("sqlite"),
            Self::Postgres(_) => Some("postgres"),
        }
    }
}

/// `url` fit for a message or a log: the password of its user info (`user:PASSWORD@host`)
/// and any `password=` in its query masked as `***`.
pub fn redact(url: &str) -> String {
    let mut out = url.to_owned();
    // User info: between `://` and the last `@` of the authority.
    if let Some(start) = out.find("://").map(|i| i + 3) {
        let authority_end = out[start..]
            .find(['/', '?', '#'])
            .map_or(out.len(), |i| start + i);
        if let Some(at) = out[start..authority_end].rfind('@').map(|i| start + i)
            && let Some(colon) = out[start..at].find(':').map(|i| start + i)
        {
            out.replace_range(colon + 1..at, "***");
        }
    }
    // Query parameters named `password` (any case).
    if let Some(query) = out.find('?') {
        let (head, tail) = out.split_at(query + 1);
        let masked: Vec<String> = tail
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        out = format!("{head}{}", masked.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_scheme_is_read_and_bad_urls_are_named() {
        let ok = |url: &str| StoreUrl::parse(url).unwrap();
        assert_eq!(ok("memory:"), StoreUrl::Memory);
        assert_eq!(ok("MEMORY://"), StoreUrl::Memory);
        assert_eq!(ok("file:///var/mux"), StoreUrl::Files("/var/mux".into()));
        assert_eq!(ok("file://rel/dir?x"), StoreUrl::Files("rel/dir?x".into()));
        assert_eq!(
            ok("sqlite://a/b.db?mode=rwc"),
            StoreUrl::Sqlite("a/b.db".into())
        );
        assert_eq!(ok("sqlite:c.db"), StoreUrl::Sqlite("c.db".into()));
        assert_eq!(ok("SQLite:///abs.db"), StoreUrl::Sqlite("/abs.db".into()));
        assert_eq!(
            ok("postgresql://u@localhost/db?host=/tmp"),
            StoreUrl::Postgres("postgresql://u@localhost/db?host=/tmp".into())
        );
        for (bad, says) in [
            ("sqlite://", "names no file"),
            ("sqlite:?mode=rwc", "names no file"),
            ("file://", "names no directory"),
            ("file:", "names no directory"),
            ("memory:x", "takes nothing"),
            ("postgres:db", "starts `postgres://`"),
            ("mysql://x", "mysql://x"),
            ("", "``"),
            ("no-scheme", "no-scheme"),
        ] {
            let err = StoreUrl::parse(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn passwords_never_reach_a_message() {
        for (url, shown) in [
            (
                "postgres://me:s3cret@db:5432/mux",
                "postgres://me:***@db:5432/mux",
            ),
            ("postgres://me:p@ss@db/mux", "postgres://me:***@db/mux"),
            (
                "postgresql://db/mux?user=me&password=s3cret&sslmode=require",
                "postgresql://db/mux?user=me&password=***&sslmode=require",
            ),
            ("postgres://me@db/mux", "postgres://me@db/mux"),
            ("mysql://root:s3cret@db/x", "mysql://root:***@db/x"),
        ] {
            assert_eq!(redact(url), shown);
        }
        let err = StoreUrl::parse("mysql://root:s3cret@db/x").unwrap_err();
        assert!(!err.to_string().contains("s3cret"), "{err}");
        let debug = format!("{:?}", StoreUrl::parse("postgres://a:s3cret@h/d").unwrap());
        assert!(!debug.contains("s3cret"), "{debug}");
    }
}
