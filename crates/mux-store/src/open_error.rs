//! Why a store could not be opened.

use crate::runs::RunStoreError;
use crate::session::SessionError;

/// Why [`Store::open`](crate::Store::open) failed; each names the URL (its password masked).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// The scheme is none this crate knows.
    #[error("store URL `{url}` is neither memory:, file://DIR, sqlite://PATH nor postgres://…")]
    UnknownScheme {
        /// The URL.
        url: String,
    },
    /// The scheme needs a path and none follows it.
    #[error("store URL `{url}` names no {what}")]
    NoPath {
        /// The URL.
        url: String,
        /// What it should name: `file` or `directory`.
        what: &'static str,
    },
    /// The URL is wrong in another way.
    #[error("store URL `{url}`: {reason}")]
    Malformed {
        /// The URL.
        url: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The store needs a feature of mux-store this build was compiled without.
    #[error(
        "store URL `{url}` needs mux-store's feature `{feature}` (mux: `{feature}`), which this build does not have"
    )]
    FeatureOff {
        /// The URL.
        url: String,
        /// The feature: `sqlite` or `postgres`.
        feature: &'static str,
    },
    /// A directory the store needs could not be made.
    #[error("store URL `{url}`: cannot create {}: {source}", dir.display())]
    Directory {
        /// The URL.
        url: String,
        /// The directory.
        dir: std::path::PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The session store did not open.
    #[error("store URL `{url}`: opening its sessions: {source}")]
    Sessions {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: SessionError,
    },
    /// The run store did not open.
    #[error("store URL `{url}`: opening its runs: {source}")]
    Runs {
        /// The URL.
        url: String,
        /// Why.
        #[source]
        source: RunStoreError,
    },
}
