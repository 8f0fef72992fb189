//! The connection state machine and its validated transitions.

use std::fmt;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;

/// One tool as a server lists it (the wire form, before qualification).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolInfo {
    /// The tool's name on the server.
    pub name: String,
    /// Its description.
    pub description: String,
    /// Its input JSON Schema.
    pub input_schema: Value,
    /// Its output JSON Schema, when it declares one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Its MCP annotations, as sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
}

/// Where an OAuth flow is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AuthProgress {
    /// The flow is starting.
    Starting,
    /// The user must open this URL.
    OpeningBrowser {
        /// The authorization URL.
        url: String,
    },
    /// Waiting for the redirect back.
    WaitingForCallback,
    /// Exchanging the code for a token.
    ExchangingToken,
}

/// The state of one server connection.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ConnectionState {
    /// Not started.
    Idle,
    /// Spawning or dialing, then the handshake and the first `tools/list`.
    Connecting,
    /// Authorizing before the handshake can complete.
    Authenticating {
        /// Where the flow is.
        progress: AuthProgress,
    },
    /// Ready; the tools the server offers.
    Connected {
        /// The server's tools, in the order it listed them.
        tools: Vec<ToolInfo>,
    },
    /// The last attempt failed or the connection was lost.
    Failed {
        /// What went wrong.
        message: String,
        /// How many reconnect attempts preceded this failure.
        retries: u32,
    },
    /// Waiting to try again.
    Reconnecting {
        /// This attempt's number, from 1.
        attempt: u32,
        /// The most attempts the policy allows.
        max_attempts: u32,
        /// When the attempt starts, if it is delayed.
        #[serde(skip_serializing_if = "Option::is_none")]
        next_at: Option<SystemTime>,
    },
    /// Closed on purpose.
    Disconnected,
}

impl ConnectionState {
    /// A short name: `idle`, `connecting`, `authenticating`, `connected`, `failed`,
    /// `reconnecting` or `disconnected`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Connecting => "connecting",
            Self::Authenticating { .. } => "authenticating",
            Self::Connected { .. } => "connected",
            Self::Failed { .. } => "failed",
            Self::Reconnecting { .. } => "reconnecting",
            Self::Disconnected => "disconnected",
        }
    }

    /// Whether the server is ready for calls.
    pub fn is_connected(&self) -> bool {
        matches!(self, Self::Connected { .. })
    }

    /// Whether the state is one a start ends in: connected, failed or disconnected.
    pub fn is_settled(&self) -> bool {
        matches!(
            self,
            Self::Connected { .. } | Self::Failed { .. } | Self::Disconnected
        )
    }

    /// The tools, when connected.
    pub fn tools(&self) -> &[ToolInfo] {
        match self {
            Self::Connected { tools } => tools,
            _ => &[],
        }
    }

    /// Whether the machine may go from `self` to `next`.
    ///
    /// ```
    /// use mux_mcp::ConnectionState as S;
    /// assert!(S::Idle.can_become(&S::Connecting));
    /// assert!(!S::Idle.can_become(&S::Connected { tools: vec![] }));
    /// ```
    pub fn can_become(&self, next: &ConnectionState) -> bool {
        use ConnectionState as S;
        match (self, next) {
            // Anything may be closed on purpose, and a closed or failed connection may start again.
            (_, S::Disconnected) => true,
            (
                S::Idle | S::Failed { .. } | S::Disconnected | S::Reconnecting { .. },
                S::Connecting,
            ) => true,
            (S::Connecting, S::Authenticating { .. })
            | (S::Authenticating { .. }, S::Authenticating { .. }) => true,
            (
                S::Connecting | S::Authenticating { .. },
                S::Connected { .. } | S::Failed { .. } | S::Idle,
            ) => true,
            // A tools/list_changed refresh, or a lost connection.
            (S::Connected { .. }, S::Connected { .. } | S::Failed { .. }) => true,
            (S::Failed { .. }, S::Reconnecting { .. }) => true,
            (S::Reconnecting { .. }, S::Failed { .. }) => true,
            _ => false,
        }
    }
}

impl fmt::Display for ConnectionState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Connected { tools } => write!(f, "connected ({} tools)", tools.len()),
            Self::Failed { message, retries } => {
                write!(f, "failed after {retries} retries: {message}")
            }
            Self::Reconnecting {
                attempt,
                max_attempts,
                ..
            } => write!(f, "reconnecting (attempt {attempt} of {max_attempts})"),
            other => f.write_str(other.name()),
        }
    }
}

/// A transition the state machine does not allow.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("MCP server `{server}` cannot go from {from} to {to}")]
pub struct TransitionError {
    /// The server.
    pub server: String,
    /// The current state's name.
    pub from: &'static str,
    /// The refused state's name.
    pub to: &'static str,
}

#[cfg(test)]
mod tests {
    use super::ConnectionState as S;

    fn all() -> Vec<S> {
        vec![
            S::Idle,
            S::Connecting,
            S::Authenticating {
                progress: super::AuthProgress::Starting,
            },
            S::Connected { tools: vec![] },
            S::Failed {
                message: "x".into(),
                retries: 0,
            },
            S::Reconnecting {
                attempt: 1,
                max_attempts: 3,
                next_at: None,
            },
            S::Disconnected,
        ]
    }

    #[test]
    fn the_transition_table_is_exactly_this() {
        let allowed = [
            ("idle", "connecting"),
            ("idle", "disconnected"),
            ("connecting", "authenticating"),
            ("connecting", "connected"),
            ("connecting", "failed"),
            ("connecting", "idle"),
            ("connecting", "disconnected"),
            ("authenticating", "authenticating"),
            ("authenticating", "connected"),
            ("authenticating", "failed"),
            ("authenticating", "idle"),
            ("authenticating", "disconnected"),
            ("connected", "connected"),
            ("connected", "failed"),
            ("connected", "disconnected"),
            ("failed", "connecting"),
            ("failed", "reconnecting"),
            ("failed", "disconnected"),
            ("reconnecting", "connecting"),
            ("reconnecting", "failed"),
            ("reconnecting", "disconnected"),
            ("disconnected", "connecting"),
            ("disconnected", "disconnected"),
        ];
        for from in all() {
            for to in all() {
                let expected = allowed.contains(&(from.name(), to.name()));
                assert_eq!(
                    from.can_become(&to),
                    expected,
                    "{} -> {}",
                    from.name(),
                    to.name()
                );
            }
        }
    }
}
