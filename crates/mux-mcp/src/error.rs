//! Errors of connecting and calling.

use std::time::Duration;

use crate::{ConfigError, TokenStoreError, TransitionError};

/// Why a connection attempt failed.
///
/// It is neither `Clone` nor `PartialEq`, because [`ConnectError::Spawn`] keeps the
/// [`std::io::Error`] of the failed spawn; match on the variants instead.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectError {
    /// The server process could not be started. The OS error is kept as the source, so a
    /// caller can tell a missing command ([`std::io::ErrorKind::NotFound`]) from, say, a
    /// permission problem:
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use mux_mcp::ConnectError;
    ///
    /// fn is_missing_command(err: &ConnectError) -> bool {
    ///     matches!(err, ConnectError::Spawn { source, .. } if source.kind() == ErrorKind::NotFound)
    /// }
    /// # let err = ConnectError::Cancelled { server: "s".into() };
    /// # assert!(!is_missing_command(&err));
    /// ```
    #[error("MCP server `{server}`: cannot start `{command}`: {source}")]
    Spawn {
        /// The server.
        server: String,
        /// The command.
        command: String,
        /// The OS error, such as [`std::io::ErrorKind::NotFound`] for a missing command.
        #[source]
        source: std::io::Error,
    },
    /// The transport could not be set up (a bad header, say).
    #[error("MCP server `{server}`: {reason}")]
    Transport {
        /// The server.
        server: String,
        /// What went wrong.
        reason: String,
    },
    /// The spec cannot be used: a CA certificate file is missing or bad, say. The
    /// [`ConfigError`] names the server and the field.
    #[error(transparent)]
    Config(ConfigError),
    /// The TLS handshake with an `https://` server failed: most often its certificate is
    /// not signed by a trusted CA (see [`ServerSpec::with_ca_certificate`](crate::ServerSpec::with_ca_certificate)).
    #[error("MCP server `{server}`: TLS handshake failed: {reason}")]
    Tls {
        /// The server.
        server: String,
        /// What rustls reported, such as `invalid peer certificate: UnknownIssuer`.
        reason: String,
    },
    /// The handshake or the first `tools/list` failed.
    #[error("MCP server `{server}`: handshake failed: {reason}")]
    Handshake {
        /// The server.
        server: String,
        /// What rmcp reported.
        reason: String,
    },
    /// The server requires OAuth authorization and it could not be completed.
    #[error("MCP server `{server}`: authorization failed: {reason}")]
    Authorization {
        /// The server.
        server: String,
        /// What went wrong.
        reason: String,
    },
    /// The OAuth token store could not be read (a corrupt token file, say). The error names
    /// the file, never the tokens.
    #[error("MCP server `{server}`: {source}")]
    TokenStore {
        /// The server.
        server: String,
        /// What the store reported.
        source: TokenStoreError,
    },
    /// The server did not finish the handshake and `tools/list` in time.
    #[error("MCP server `{server}`: no answer within {timeout:?} while connecting")]
    Timeout {
        /// The server.
        server: String,
        /// The connect timeout.
        timeout: Duration,
    },
    /// The attempt was cancelled.
    #[error("MCP server `{server}`: connection attempt cancelled")]
    Cancelled {
        /// The server.
        server: String,
    },
    /// The connection is in a state that cannot start an attempt.
    #[error(transparent)]
    State(#[from] TransitionError),
    /// No server has this name.
    #[error("no MCP server named `{server}`")]
    UnknownServer {
        /// The name asked for.
        server: String,
    },
}

/// Why a tool call produced no result.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// No server has this name.
    #[error("no MCP server named `{server}`")]
    UnknownServer {
        /// The name asked for.
        server: String,
    },
    /// The server is not connected.
    #[error("MCP server `{server}` is not connected (it is {state}); tool `{tool}` cannot run now")]
    NotConnected {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The connection's state name.
        state: &'static str,
    },
    /// The connection was lost while the call was in flight.
    #[error("MCP server `{server}` closed the connection during a call to `{tool}`")]
    ConnectionLost {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// The caller cancelled the call; the server was sent `notifications/cancelled`.
    #[error("call to `{tool}` on MCP server `{server}` was cancelled")]
    Cancelled {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// The call took longer than the timeout; the server was sent `notifications/cancelled`.
    #[error("call to `{tool}` on MCP server `{server}` timed out after {timeout:?}")]
    TimedOut {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The arguments are not a JSON object.
    #[error("arguments for `{tool}` on MCP server `{server}` must be a JSON object")]
    InvalidArguments {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
    },
    /// The server asked for input (a 2026-07-28 `input_required` result) that could not be
    /// given: a handler refused, the client lacks the feature, or the rounds ran out.
    #[error(
        "MCP server `{server}` asked for input during `{tool}` that mux could not give: {message}"
    )]
    InputRequired {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// What went wrong.
        message: String,
    },
    /// The server answered with a JSON-RPC error or something that is not a tool result.
    #[error("MCP server `{server}` rejected the call to `{tool}`: {message}")]
    Protocol {
        /// The server.
        server: String,
        /// The tool.
        tool: String,
        /// The error.
        message: String,
    },
}
