#![cfg_attr(docsrs, feature(doc_cfg))]
#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]

mod bearer;
mod headers;
mod host;
mod origin;
mod random;
pub mod serve;

pub use bearer::{BearerToken, bearer};
pub use headers::{is_json, require_json, shown, single};
pub use host::{HostAllowList, HostPort, InvalidHost};
pub use origin::OriginAllowList;
pub use random::{random_token, unguessable};

/// Why a request was refused before any route ran.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Refused {
    /// The request has no `Host` header (400).
    #[error("the request has no Host header")]
    NoHost,
    /// A header that must appear once appears more often (400).
    #[error("the request has more than one {0} header")]
    DuplicateHeader(http::HeaderName),
    /// The `Host` (or an absolute-form target's authority) is not allowed (403); the value,
    /// at most 120 characters.
    #[error("Host `{0}` is not allowed")]
    HostNotAllowed(String),
    /// The `Origin` is not allowed (403); the value, at most 120 characters.
    #[error("Origin `{0}` is not allowed")]
    OriginNotAllowed(String),
    /// A `POST` whose `Content-Type` is not `application/json` (415); what was given, or
    /// `none`.
    #[error("Content-Type must be application/json, not {0}")]
    NotJson(String),
}

impl Refused {
    /// The HTTP status this refusal is answered with.
    pub fn status(&self) -> http::StatusCode {
        match self {
            Self::NoHost | Self::DuplicateHeader(_) => http::StatusCode::BAD_REQUEST,
            Self::HostNotAllowed(_) | Self::OriginNotAllowed(_) => http::StatusCode::FORBIDDEN,
            Self::NotJson(_) => http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
        }
    }
}
