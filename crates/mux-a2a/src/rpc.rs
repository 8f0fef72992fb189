//! The JSON-RPC 2.0 envelope: reading a request out of a body, and the error objects A2A 1.0
//! defines (standard codes, plus -32001 to -32009 with a `google.rpc.ErrorInfo` detail naming
//! the reason, as the official SDKs send and read them).

use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A JSON-RPC error, as sent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message} (JSON-RPC {code}, {reason})")]
pub struct RpcError {
    /// The JSON-RPC code.
    pub code: i64,
    /// The A2A reason (`TASK_NOT_FOUND`, ...).
    pub reason: &'static str,
    /// What was wrong, in words.
    pub message: String,
}

macro_rules! errors {
    ($($(#[$doc:meta])* $name:ident = $code:literal, $reason:literal;)*) => {
        impl RpcError {
            $(
                $(#[$doc])*
                pub fn $name(message: impl Into<String>) -> Self {
                    Self { code: $code, reason: $reason, message: message.into() }
                }
            )*
        }
    };
}

errors! {
    /// -32700: the body is not JSON.
    parse = -32700, "PARSE_ERROR";
    /// -32600: JSON, but not a JSON-RPC 2.0 request.
    invalid_request = -32600, "INVALID_REQUEST";
    /// -32601: no such method.
    method_not_found = -32601, "METHOD_NOT_FOUND";
    /// -32602: the parameters do not fit the method.
    invalid_params = -32602, "INVALID_PARAMS";
    /// -32603: the server failed.
    internal = -32603, "INTERNAL_ERROR";
    /// -32001: no such task.
    task_not_found = -32001, "TASK_NOT_FOUND";
    /// -32002: the task has ended.
    task_not_cancelable = -32002, "TASK_NOT_CANCELABLE";
    /// -32003: this server sends no push notifications.
    push_not_supported = -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED";
    /// -32004: not possible in the task's state.
    unsupported = -32004, "UNSUPPORTED_OPERATION";
    /// -32005: a part this agent cannot read.
    content_type = -32005, "CONTENT_TYPE_NOT_SUPPORTED";
    /// -32007: there is no extended card.
    no_extended_card = -32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED";
    /// -32009: the `A2A-Version` the client speaks is not 1.x.
    version = -32009, "VERSION_NOT_SUPPORTED";
}

/// The JSON-RPC code of an unreachable store: -32000, the first of the codes JSON-RPC leaves
/// to servers (A2A's own are -32001 to -32009), with the reason `UNAVAILABLE` (gRPC's name
/// for a failure a retry may cure, which the A2A gRPC binding uses).
pub const UNAVAILABLE: i64 = -32000;

/// Seconds a client is asked to wait before retrying after a store outage (a
/// `google.rpc.RetryInfo` detail of the error).
pub const RETRY_AFTER_SECS: u64 = 2;

impl RpcError {
    /// -32000 `UNAVAILABLE`: the `store` (`session`, `task`) did not answer. The cause goes
    /// to the log, not to the client, whose message names the store and the retry delay.
    pub fn unavailable(store: &str, cause: &dyn std::fmt::Display) -> Self {
        tracing::warn!(store, %cause, "mux-a2a: the {store} store is unavailable");
        Self {
            code: UNAVAILABLE,
            reason: "UNAVAILABLE",
            message: format!("the {store} store is unavailable; retry in {RETRY_AFTER_SECS} s"),
        }
    }

    /// The error as a client may see it: a message carrying an operating system's error
    /// (`… (os error 32)`, with its socket or file path) is logged and replaced by what
    /// failed.
    pub fn for_client(&self) -> std::borrow::Cow<'_, Self> {
        if !carries_os_error(&self.message) {
            return std::borrow::Cow::Borrowed(self);
        }
        tracing::warn!(code = self.code, reason = self.reason, cause = %self.message, "mux-a2a: a request failed");
        std::borrow::Cow::Owned(Self {
            code: self.code,
            reason: self.reason,
            message: "the server failed to answer this request; the cause is in its log".into(),
        })
    }
}

/// Whether `text` carries an operating system's error (`… (os error 32)`).
fn carries_os_error(text: &str) -> bool {
    text.contains("(os error ")
}

/// `text` as a client may see it in a task (a failed run's message): one carrying an OS
/// error is logged and replaced by a sentence saying where the cause is.
pub(crate) fn client_text(text: String) -> String {
    if !carries_os_error(&text) {
        return text;
    }
    tracing::warn!(cause = %text, "mux-a2a: a run failed");
    "The run failed; the cause is in the server's log.".to_owned()
}

/// The `ErrorInfo` domain of A2A errors.
const DOMAIN: &str = "a2a-protocol.org";

impl RpcError {
    /// The error object.
    pub fn to_json(&self) -> Value {
        let mut details = vec![json!({
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.reason,
            "domain": DOMAIN,
            "metadata": {},
        })];
        if self.code == UNAVAILABLE {
            details.push(json!({
                "@type": "type.googleapis.com/google.rpc.RetryInfo",
                "retryDelay": format!("{RETRY_AFTER_SECS}s"),
            }));
        }
        json!({
            "code": self.code,
            "message": self.message,
            "data": details,
        })
    }
}

/// A request's id: a string, a number, or null (for a request whose id could not be read).
#[derive(Clone, Debug, PartialEq)]
pub struct RequestId(pub Value);

impl RequestId {
    /// The id as JSON text.
    pub fn json(&self) -> String {
        self.0.to_string()
    }
}

/// A JSON-RPC error response.
pub fn error_response(id: &RequestId, error: &RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id.0, "error": error.to_json()})
}

/// A JSON-RPC result response, as text, from the result's JSON text.
pub fn result_text(id: &RequestId, result: &str) -> String {
    let id = id.json();
    let mut out = String::with_capacity(result.len() + id.len() + 32);
    out.push_str("{\"jsonrpc\":\"2.0\",\"id\":");
    out.push_str(&id);
    out.push_str(",\"result\":");
    out.push_str(result);
    out.push('}');
    out
}

/// A request read from a body: its id, method and parameters.
#[derive(Debug)]
pub struct Request {
    /// The id.
    pub id: RequestId,
    /// The method.
    pub method: String,
    /// The parameters (an object; `{}` when absent).
    pub params: Value,
}

impl Request {
    /// Reads a body; on failure, the id to answer with (null when unknown) and the error.
    pub fn read(body: &[u8]) -> Result<Self, (RequestId, RpcError)> {
        let null = || RequestId(Value::Null);
        let value: Value = serde_json::from_slice(body).map_err(|e| {
            (
                null(),
                RpcError::parse(format!("the body is not JSON: {e}")),
            )
        })?;
        let Value::Object(mut object) = value else {
            let what = if value.is_array() {
                "batch requests are not supported; send one request object"
            } else {
                "the body is not a JSON-RPC request object"
            };
            return Err((null(), RpcError::invalid_request(what)));
        };
        let id = match object.remove("id") {
            None | Some(Value::Null) => RequestId(Value::Null),
            Some(id @ (Value::String(_) | Value::Number(_))) => RequestId(id),
            Some(_) => {
                return Err((
                    null(),
                    RpcError::invalid_request("`id` must be a string, a number or null"),
                ));
            }
        };
        if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err((
                id,
                RpcError::invalid_request("`jsonrpc` must be exactly \"2.0\""),
            ));
        }
        let method = match object.remove("method") {
            Some(Value::String(method)) if !method.is_empty() => method,
            _ => {
                return Err((
                    id,
                    RpcError::invalid_request("`method` must be a non-empty string"),
                ));
            }
        };
        let params = match object.remove("params") {
            None | Some(Value::Null) => Value::Object(Default::default()),
            Some(params @ Value::Object(_)) => params,
            Some(_) => {
                return Err((
                    id,
                    RpcError::invalid_params(format!("`params` of {method} must be an object")),
                ));
            }
        };
        Ok(Self { id, method, params })
    }

    /// The parameters as `T`, or an invalid-params error naming the method and the problem.
    pub fn params<T: DeserializeOwned>(&self) -> Result<T, RpcError> {
        T::deserialize(&self.params).map_err(|e| {
            RpcError::invalid_params(format!("the params of {} do not fit: {e}", self.method))
        })
    }
}

/// At most 100 characters of a client's string, for messages.
pub(crate) fn shown(text: &str) -> String {
    text.chars().take(100).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn code(body: &str) -> i64 {
        Request::read(body.as_bytes()).unwrap_err().1.code
    }

    #[test]
    fn garbage_gets_the_standard_codes() {
        assert_eq!(code("{not json"), -32700);
        assert_eq!(code(""), -32700);
        assert_eq!(code("[]"), -32600);
        assert_eq!(
            code("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\"}]"),
            -32600
        );
        assert_eq!(code("42"), -32600);
        assert_eq!(code("{\"id\":1,\"method\":\"GetTask\"}"), -32600);
        assert_eq!(
            code("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"GetTask\"}"),
            -32600
        );
        assert_eq!(
            code("{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"GetTask\"}"),
            -32600
        );
        assert_eq!(
            code("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"GetTask\"}"),
            -32600
        );
        assert_eq!(code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}"), -32600);
        assert_eq!(
            code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}"),
            -32600
        );
        assert_eq!(
            code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":[1]}"),
            -32602
        );
    }

    #[test]
    fn the_id_is_kept_for_the_answer() {
        let (id, error) =
            Request::read(br#"{"jsonrpc":"2.0","id":"a-1","method":"x","params":7}"#).unwrap_err();
        assert_eq!(id, RequestId(Value::from("a-1")));
        let response = error_response(&id, &error);
        assert_eq!(response["id"], "a-1");
        assert_eq!(response["error"]["code"], -32602);
        assert_eq!(response["error"]["data"][0]["reason"], "INVALID_PARAMS");
        let ok = Request::read(br#"{"jsonrpc":"2.0","id":3,"method":"GetTask"}"#).unwrap();
        assert_eq!(
            result_text(&ok.id, "{}"),
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#
        );
    }
}
