//! Client-side features a server may ask for: roots, sampling and elicitation. The upper
//! layers implement [`ClientHandlers`]; server log messages become [`McpEvent::Log`]
//! entries on their own.
//!
//! [`McpEvent::Log`]: crate::McpEvent::Log

use mux_tool::BoxFuture;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationAction, Root,
};
use serde_json::json;

/// Which client features a [`ClientHandlers`] offers; they are declared to servers as
/// capabilities, and servers only ask for declared ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientFeatures {
    /// `roots/list`.
    pub roots: bool,
    /// `sampling/createMessage`.
    pub sampling: bool,
    /// `elicitation/create`, form mode.
    pub elicitation_form: bool,
    /// `elicitation/create`, URL mode.
    pub elicitation_url: bool,
}

impl ClientFeatures {
    pub(crate) fn capabilities(self) -> ClientCapabilities {
        let mut caps = serde_json::Map::new();
        if self.roots {
            caps.insert("roots".into(), json!({"listChanged": false}));
        }
        if self.sampling {
            caps.insert("sampling".into(), json!({}));
        }
        if self.elicitation_form || self.elicitation_url {
            let mut modes = serde_json::Map::new();
            if self.elicitation_form {
                modes.insert("form".into(), json!({}));
            }
            if self.elicitation_url {
                modes.insert("url".into(), json!({}));
            }
            caps.insert("elicitation".into(), serde_json::Value::Object(modes));
        }
        serde_json::from_value(serde_json::Value::Object(caps)).unwrap_or_default()
    }
}

/// A refusal a handler returns; the server receives it as a JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct HandlerError(pub String);

/// What mux answers when a server asks the client for something. Every method names the
/// asking server. The defaults offer nothing: no roots, sampling refused, elicitation declined.
pub trait ClientHandlers: Send + Sync + 'static {
    /// The features to declare to servers.
    fn features(&self) -> ClientFeatures;

    /// The roots the server may work in.
    fn list_roots(&self, server: &str) -> BoxFuture<'_, Result<Vec<Root>, HandlerError>> {
        let _ = server;
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Runs an LLM completion for the server.
    fn create_message(
        &self,
        server: &str,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'_, Result<CreateMessageResult, HandlerError>> {
        let (_, _) = (server, params);
        Box::pin(async {
            Err(HandlerError(
                "sampling is not supported by this client".into(),
            ))
        })
    }

    /// Sends the user to an OAuth authorization server's page at `url` (in a browser, say) and
    /// returns the URL the browser was redirected to: the spec's redirect URI with `code` and
    /// `state` in its query. mux calls this when an HTTP server with an
    /// [`OAuthSpec`](crate::OAuthSpec) asks for authorization. The default refuses, so such a
    /// server fails to connect with [`ConnectError::Authorization`](crate::ConnectError).
    fn authorize(&self, server: &str, url: &str) -> BoxFuture<'_, Result<String, HandlerError>> {
        let (_, _) = (server, url);
        Box::pin(async {
            Err(HandlerError(
                "this client cannot send the user to an OAuth authorization page".into(),
            ))
        })
    }

    /// Asks the user for input (form) or to visit a URL.
    fn elicit(
        &self,
        server: &str,
        params: ElicitRequestParams,
    ) -> BoxFuture<'_, Result<ElicitResult, HandlerError>> {
        let (_, _) = (server, params);
        Box::pin(async { Ok(ElicitResult::new(ElicitationAction::Decline)) })
    }
}
