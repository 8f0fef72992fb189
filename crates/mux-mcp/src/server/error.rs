//! Why serving failed.

use std::net::SocketAddr;

/// Why serving failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The HTTP listener could not bind.
    #[error("MCP server: cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A non-loopback address without a bearer token.
    #[error(
        "MCP server: refusing to listen on {addr} without a bearer token; \
         use a loopback address or set `HttpOptions::bearer_token`"
    )]
    Unprotected {
        /// The address.
        addr: SocketAddr,
    },
    /// The session over stdio or a stream failed to start or ended in error.
    #[error("MCP server: the session failed: {0}")]
    Session(String),
}
