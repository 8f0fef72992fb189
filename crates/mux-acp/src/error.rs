//! What can go wrong between an editor and a mux agent.

use mux_orchestrator::LoopError;
use mux_orchestrator::session::SessionError;

use crate::CwdRefusal;

/// Why an ACP request failed. Each becomes a JSON-RPC error for the client; none ends the
/// connection.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AcpError {
    /// The session id is not one this agent serves.
    #[error("unknown session `{0}`")]
    UnknownSession(String),
    /// `session/new` or `session/load` named a `cwd` this agent does not take as a session's
    /// root.
    #[error("cwd `{cwd}` is refused as the session's root: {refusal}")]
    Cwd {
        /// The `cwd` as the client gave it.
        cwd: String,
        /// Why it was refused.
        refusal: CwdRefusal,
    },
    /// A prompt carried content this agent does not accept (it is not in its capabilities).
    #[error("{0} content is not supported in prompts by this agent")]
    UnsupportedContent(&'static str),
    /// The mode id is not one of `default`, `acceptEdits`, `plan`, `bypassPermissions`.
    #[error(
        "unknown session mode `{0}` (expected default, acceptEdits, plan or bypassPermissions)"
    )]
    UnknownMode(String),
    /// The application's policy has no session scope to set a mode in.
    #[error("this agent's permission policy has no session scope, so modes cannot be set")]
    NoSessionScope,
    /// `session/load` or `session/list` without a session store.
    #[error("this agent keeps no sessions (no session store is configured)")]
    NoSessionStore,
    /// `session/list` was given a cursor this agent did not hand out.
    #[error("`{0}` is not a session/list cursor")]
    BadCursor(String),
    /// `authenticate` named a method this agent does not offer.
    #[error("unknown authentication method `{0}`")]
    UnknownAuthMethod(String),
    /// `authenticate` named an environment-key method whose variable is not set.
    #[error("set {0} in the agent's environment and restart it")]
    MissingKey(String),
    /// The application could not set up a session (its factory failed).
    #[error("could not set up the session: {0}")]
    Setup(String),
    /// The loop failed.
    #[error(transparent)]
    Loop(#[from] LoopError),
    /// A session store operation failed.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The connection to the client failed.
    #[error("ACP connection: {0}")]
    Connection(String),
}

impl AcpError {
    /// The JSON-RPC error the client receives.
    pub(crate) fn to_rpc(&self) -> agent_client_protocol::Error {
        use agent_client_protocol::Error;
        let message = self.to_string();
        match self {
            Self::UnknownSession(_)
            | Self::Cwd { .. }
            | Self::Session(SessionError::NotFound(_) | SessionError::InvalidId(_))
            | Self::Loop(LoopError::Session(
                SessionError::NotFound(_) | SessionError::InvalidId(_),
            ))
            | Self::UnsupportedContent(_)
            | Self::UnknownMode(_)
            | Self::BadCursor(_)
            | Self::UnknownAuthMethod(_)
            // A session runs one prompt at a time: a second one while it is busy is the
            // client's mistake. ACP defines no busy code, so -32602 (invalid params), as for
            // any request that cannot apply to the session it names.
            | Self::Loop(LoopError::AlreadyRunning) => Error::invalid_params().data(message),
            Self::MissingKey(_) => Error::auth_required().data(message),
            _ => Error::internal_error().data(message),
        }
    }
}

impl From<agent_client_protocol::Error> for AcpError {
    fn from(err: agent_client_protocol::Error) -> Self {
        Self::Connection(err.to_string())
    }
}
