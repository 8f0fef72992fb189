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

/// Why a tool call produced no result: the server and the tool, named once, and what failed.
#[derive(Debug, Clone, PartialEq)]
pub struct CallError {
    /// The server's name.
    pub server: String,
    /// The tool's name.
    pub tool: String,
    /// What failed.
    pub failure: CallFailure,
}

/// What failed in a [`CallError`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CallFailure {
    /// No server has this name.
    UnknownServer,
    /// The server is not connected.
    NotConnected {
        /// The connection's state name.
        state: &'static str,
    },
    /// The connection was lost while the call was in flight.
    ConnectionLost,
    /// The caller cancelled the call; the server was sent `notifications/cancelled`.
    Cancelled,
    /// The call took longer than the timeout; the server was sent `notifications/cancelled`.
    TimedOut {
        /// The timeout.
        timeout: Duration,
    },
    /// The arguments are not a JSON object.
    InvalidArguments,
    /// The server asked for input (a 2026-07-28 `input_required` result) that could not be
    /// given: a handler refused, the client lacks the feature, or the rounds ran out.
    InputRequired {
        /// What went wrong.
        message: String,
    },
    /// The server answered with a JSON-RPC error or something that is not a tool result.
    Protocol {
        /// The error.
        message: String,
    },
}

impl CallError {
    /// `failure` of a call to `tool` on `server`.
    pub fn new(server: impl Into<String>, tool: impl Into<String>, failure: CallFailure) -> Self {
        Self {
            server: server.into(),
            tool: tool.into(),
            failure,
        }
    }
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            server,
            tool,
            failure,
        } = self;
        match failure {
            CallFailure::UnknownServer => {
                write!(f, "no MCP server named `{server}` (for the tool `{tool}`)")
            }
            CallFailure::NotConnected { state } => write!(
                f,
                "MCP server `{server}` is not connected (it is {state}); tool `{tool}` cannot run now"
            ),
            CallFailure::ConnectionLost => write!(
                f,
                "MCP server `{server}` closed the connection during a call to `{tool}`"
            ),
            CallFailure::Cancelled => {
                write!(f, "call to `{tool}` on MCP server `{server}` was cancelled")
            }
            CallFailure::TimedOut { timeout } => write!(
                f,
                "call to `{tool}` on MCP server `{server}` timed out after {timeout:?}"
            ),
            CallFailure::InvalidArguments => write!(
                f,
                "arguments for `{tool}` on MCP server `{server}` must be a JSON object"
            ),
            CallFailure::InputRequired { message } => write!(
                f,
                "MCP server `{server}` asked for input during `{tool}` that mux could not give: \
                 {message}"
            ),
            CallFailure::Protocol { message } => write!(
                f,
                "MCP server `{server}` rejected the call to `{tool}`: {message}"
            ),
        }
    }
}

impl std::error::Error for CallError {}
