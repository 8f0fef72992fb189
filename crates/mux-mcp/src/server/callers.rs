//! Reaching the client that made a call: elicitation, sampling and roots requests on behalf of
//! a running tool or of the approval gate.
//!
//! A client at 2025-11-25 (or older) gets ordinary server-to-client requests over its session.
//! A client at 2026-07-28 gets them as an `input_required` result (SEP-2322): the call pauses,
//! the client answers and sends the call again with the answers and the `requestState`. Either
//! way the code asking waits on one future; the handler does the protocol.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, ElicitRequestParams, InputRequest,
    InputRequests, InputResponses,
};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// How long a request to the caller may wait for its answer.
pub const CALLER_TIMEOUT: Duration = Duration::from_secs(300);

/// Why the caller could not be asked or did not answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallerError {
    /// The call id names no call in progress (it ended, or it was never served here).
    #[error("no MCP call `{call_id}` is in progress")]
    UnknownCall {
        /// The call id asked about.
        call_id: String,
    },
    /// The client did not declare the capability the request needs.
    #[error("the MCP client does not support {capability}")]
    Unsupported {
        /// `elicitation`, `sampling` or `roots`.
        capability: &'static str,
    },
    /// The client did not answer in time, went away, or the call ended meanwhile.
    #[error("the MCP client did not answer: {reason}")]
    NoAnswer {
        /// What happened.
        reason: String,
    },
    /// The client answered something that is not a valid result for the request.
    #[error("the MCP client's answer to `{key}` is not valid: {reason}")]
    BadAnswer {
        /// The request's key.
        key: String,
        /// What was wrong.
        reason: String,
    },
}

/// The caller's answer to a call that needs approval.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallerAnswer {
    /// Run it.
    Allow,
    /// Do not run it.
    Deny {
        /// Why (what the caller chose, or why it could not be asked).
        reason: String,
    },
}

/// One round of questions a paused 2026-07-28 call puts to its client.
pub(crate) struct Round {
    pub(crate) requests: InputRequests,
    pub(crate) reply: oneshot::Sender<InputResponses>,
}

/// Where the questions of one call go.
pub(crate) enum Route {
    /// A session peer (2025-11-25 and older).
    Peer {
        peer: Peer<RoleServer>,
        capabilities: ClientCapabilities,
    },
    /// `input_required` rounds, run by the handler that serves the call (2026-07-28).
    Rounds {
        asks: mpsc::Sender<Round>,
        capabilities: ClientCapabilities,
    },
}

impl Route {
    fn capabilities(&self) -> &ClientCapabilities {
        match self {
            Self::Peer { capabilities, .. } | Self::Rounds { capabilities, .. } => capabilities,
        }
    }
}

/// The calls in progress and how to reach their callers, shared by the server and by whoever
/// asks (the approval gate's asker, a tool). Clones share the same table.
///
/// Build one, hand a clone to [`McpServer::with_callers`](crate::McpServer::with_callers),
/// and call [`Callers::ask_approval`] from the gate's asker with the call id the gate got
/// (the server names each call; a tool reads the same id from `ToolContext::call_id`).
///
/// ```no_run
/// use mux_mcp::{CallerAnswer, Callers, HttpOptions, McpServer};
/// use mux_tool::{Executor, Registry, approval::gate_fn};
///
/// # async fn run(registry: Registry) -> Result<(), Box<dyn std::error::Error>> {
/// let callers = Callers::new();
/// let asking = callers.clone();
/// let gate = gate_fn(move |request| {
///     let callers = asking.clone();
///     async move {
///         let question = format!("Run {}?", request.call.name);
///         match callers.ask_approval(&request.call.id, question).await {
///             CallerAnswer::Allow => mux_tool::GateVerdict::allow(),
///             CallerAnswer::Deny { reason } => mux_tool::GateVerdict::deny(reason),
///             _ => mux_tool::GateVerdict::deny("unknown answer"),
///         }
///     }
/// });
/// let executor = Executor::builder(registry).gate(gate).build();
/// let server = McpServer::new(executor).with_callers(callers);
/// let http = server.serve_http(HttpOptions::loopback(8848)).await?;
/// http.wait().await;
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct Callers {
    routes: Arc<Mutex<HashMap<String, Entry>>>,
}

/// One call in progress: how to reach its client, and the capability it was found to lack
/// (see [`Callers::require`]).
#[derive(Clone)]
struct Entry {
    route: Arc<Route>,
    missing: Missing,
}

/// The capability a call needs and its client did not declare, set by [`Callers::require`]:
/// the server then answers the call with `-32021` instead of its result.
pub(crate) type Missing = Arc<OnceLock<&'static str>>;

impl std::fmt::Debug for Callers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Callers")
            .field("calls", &self.lock().len())
            .finish()
    }
}

/// Removes a call's route when the call ends.
pub(crate) struct RouteGuard {
    callers: Callers,
    call_id: String,
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        self.callers.lock().remove(&self.call_id);
    }
}

impl Callers {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        self.routes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records how to reach the caller of `call_id` until the guard drops.
    pub(crate) fn enter(&self, call_id: &str, route: Route, missing: Missing) -> RouteGuard {
        let entry = Entry {
            route: Arc::new(route),
            missing,
        };
        self.lock().insert(call_id.to_string(), entry);
        RouteGuard {
            callers: self.clone(),
            call_id: call_id.to_string(),
        }
    }

    /// Whether the caller of `call_id` can answer `request` (it declared the capability).
    pub fn supports(&self, call_id: &str, request: &InputRequest) -> Result<(), CallerError> {
        let route = self.route(call_id)?;
        check(route.capabilities(), request)
    }

    /// Like [`supports`](Self::supports), for a call that cannot go on without `request`:
    /// when the client did not declare the capability, the server answers the whole call
    /// with the protocol's `-32021` (MissingRequiredClientCapability, naming it) rather than
    /// with the tool's result.
    pub fn require(&self, call_id: &str, request: &InputRequest) -> Result<(), CallerError> {
        let entry = self.entry(call_id)?;
        check(entry.route.capabilities(), request).inspect_err(|err| {
            if let CallerError::Unsupported { capability } = err {
                let _ = entry.missing.set(capability);
            }
        })
    }

    fn entry(&self, call_id: &str) -> Result<Entry, CallerError> {
        self.lock()
            .get(call_id)
            .cloned()
            .ok_or_else(|| CallerError::UnknownCall {
                call_id: call_id.to_string(),
            })
    }

    fn route(&self, call_id: &str) -> Result<Arc<Route>, CallerError> {
        self.entry(call_id).map(|entry| entry.route)
    }

    /// Sends `requests` (keyed by names of the caller's choosing) to the client of `call_id`
    /// and returns its results by the same keys, as JSON (`ElicitResult`, `CreateMessageResult`,
    /// `ListRootsResult`). Waits at most [`CALLER_TIMEOUT`].
    pub async fn request(
        &self,
        call_id: &str,
        requests: InputRequests,
    ) -> Result<InputResponses, CallerError> {
        let route = self.route(call_id)?;
        for request in requests.values() {
            check(route.capabilities(), request)?;
        }
        let answered = async {
            match route.as_ref() {
                Route::Peer { peer, .. } => {
                    let mut responses = InputResponses::new();
                    for (key, request) in requests {
                        let value = ask_peer(peer, request).await.map_err(|reason| {
                            CallerError::NoAnswer {
                                reason: format!("`{key}`: {reason}"),
                            }
                        })?;
                        responses.insert(key, value);
                    }
                    Ok(responses)
                }
                Route::Rounds { asks, .. } => {
                    let (reply, answer) = oneshot::channel();
                    asks.send(Round { requests, reply }).await.map_err(|_| {
                        CallerError::NoAnswer {
                            reason: "the call ended".into(),
                        }
                    })?;
                    answer.await.map_err(|_| CallerError::NoAnswer {
                        reason: "the call was not resumed (the client did not send it again in time, or the server holds too many paused calls)".into(),
                    })
                }
            }
        };
        tokio::time::timeout(CALLER_TIMEOUT, answered)
            .await
            .unwrap_or_else(|_| {
                Err(CallerError::NoAnswer {
                    reason: format!("no answer within {} s", CALLER_TIMEOUT.as_secs()),
                })
            })
    }

    /// Asks the caller of `call_id` whether the call may run, by a form elicitation with one
    /// boolean field `approve`. Anything but an accepted `approve: true` is a denial, and so
    /// is a caller that cannot be asked: the reason says which.
    pub async fn ask_approval(&self, call_id: &str, message: impl Into<String>) -> CallerAnswer {
        let message = message.into();
        let request = match approval_request(&message) {
            Ok(request) => request,
            Err(err) => {
                return CallerAnswer::Deny {
                    reason: err.to_string(),
                };
            }
        };
        let mut requests = InputRequests::new();
        requests.insert(APPROVAL_KEY.to_string(), request);
        match self.request(call_id, requests).await {
            Ok(mut responses) => match responses.remove(APPROVAL_KEY) {
                Some(answer) => approval_answer(&answer),
                None => CallerAnswer::Deny {
                    reason: "the MCP client sent no answer to the approval request".into(),
                },
            },
            Err(CallerError::Unsupported { capability }) => CallerAnswer::Deny {
                reason: format!(
                    "this call needs approval, and the MCP client supports neither elicitation \
                     nor input_required ({capability} not declared); refused without running"
                ),
            },
            Err(err) => CallerAnswer::Deny {
                reason: format!("this call needs approval and was refused: {err}"),
            },
        }
    }
}

/// The key of the approval request in an `input_required` result.
pub const APPROVAL_KEY: &str = "mux_approval";

/// The form elicitation that asks for approval.
fn approval_request(message: &str) -> Result<InputRequest, CallerError> {
    let params = json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {
                "approve": {
                    "type": "boolean",
                    "title": "Allow this call",
                    "description": "true runs the call; false refuses it",
                }
            },
            "required": ["approve"],
        }
    });
    // The shape above is fixed; a unit test pins that rmcp reads it.
    let params: ElicitRequestParams =
        serde_json::from_value(params).map_err(|err| CallerError::BadAnswer {
            key: APPROVAL_KEY.into(),
            reason: format!("the approval form could not be built: {err}"),
        })?;
    Ok(InputRequest::Elicitation(rmcp::model::ElicitRequest::new(
        params,
    )))
}

/// An elicitation result as an approval answer.
fn approval_answer(answer: &Value) -> CallerAnswer {
    match answer["action"].as_str() {
        Some("accept") if answer["content"]["approve"] == Value::Bool(true) => CallerAnswer::Allow,
        Some("accept") => CallerAnswer::Deny {
            reason: "the caller did not approve the call".into(),
        },
        Some("decline") => CallerAnswer::Deny {
            reason: "the caller declined the call".into(),
        },
        Some("cancel") => CallerAnswer::Deny {
            reason: "the caller cancelled the approval".into(),
        },
        _ => CallerAnswer::Deny {
            reason: "the caller's answer to the approval request was not an elicitation result"
                .into(),
        },
    }
}

/// Whether `capabilities` cover `request`.
pub(crate) fn check(
    capabilities: &ClientCapabilities,
    request: &InputRequest,
) -> Result<(), CallerError> {
    let (declared, capability) = match request {
        InputRequest::Elicitation(_) => (capabilities.elicitation.is_some(), "elicitation"),
        InputRequest::CreateMessage(_) => (capabilities.sampling.is_some(), "sampling"),
        InputRequest::ListRoots(_) => (capabilities.roots.is_some(), "roots"),
        _ => (false, "this request"),
    };
    if declared {
        Ok(())
    } else {
        Err(CallerError::Unsupported { capability })
    }
}

/// One request over a session, its result as JSON.
pub(crate) async fn ask_peer(
    peer: &Peer<RoleServer>,
    request: InputRequest,
) -> Result<Value, String> {
    let value = match request {
        InputRequest::Elicitation(request) => {
            let result = peer
                .create_elicitation(request.params)
                .await
                .map_err(|err| err.to_string())?;
            serde_json::to_value(result)
        }
        InputRequest::CreateMessage(request) => {
            let params: CreateMessageRequestParams = request.params;
            let result = peer
                .create_message(params)
                .await
                .map_err(|err| err.to_string())?;
            serde_json::to_value(result)
        }
        InputRequest::ListRoots(_) => {
            let result = peer.list_roots().await.map_err(|err| err.to_string())?;
            serde_json::to_value(result)
        }
        _ => return Err("a request kind this server cannot send".into()),
    };
    value.map_err(|err| err.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn only_an_accepted_true_allows() {
        let allow = json!({"action": "accept", "content": {"approve": true}});
        assert_eq!(approval_answer(&allow), CallerAnswer::Allow);
        for answer in [
            json!({"action": "accept", "content": {"approve": false}}),
            json!({"action": "accept", "content": {"approve": "true"}}),
            json!({"action": "accept"}),
            json!({"action": "decline"}),
            json!({"action": "cancel"}),
            json!("garbage"),
        ] {
            assert!(
                matches!(approval_answer(&answer), CallerAnswer::Deny { .. }),
                "{answer}"
            );
        }
    }

    #[test]
    fn the_approval_form_is_a_form_elicitation() {
        let request = approval_request("run `ls`?").unwrap();
        let wire = serde_json::to_value(&request).unwrap();
        assert_eq!(wire["method"], "elicitation/create");
        assert_eq!(wire["params"]["mode"], "form");
        assert_eq!(
            wire["params"]["requestedSchema"]["properties"]["approve"]["type"],
            "boolean"
        );
    }

    #[tokio::test]
    async fn an_unknown_call_cannot_be_asked_and_is_denied() {
        let callers = Callers::new();
        let answer = callers.ask_approval("nope", "run?").await;
        match answer {
            CallerAnswer::Deny { reason } => assert!(reason.contains("`nope`"), "{reason}"),
            CallerAnswer::Allow => panic!("allowed an unknown call"),
        }
    }

    #[tokio::test]
    async fn a_required_capability_the_client_lacks_is_recorded_for_the_server() {
        let callers = Callers::new();
        let (asks, _rx) = mpsc::channel(1);
        let missing = Missing::default();
        let _guard = callers.enter(
            "c1",
            Route::Rounds {
                asks,
                capabilities: ClientCapabilities::default(),
            },
            Arc::clone(&missing),
        );
        let request = approval_request("run?").unwrap();
        assert_eq!(
            callers.require("c1", &request),
            Err(CallerError::Unsupported {
                capability: "elicitation"
            })
        );
        assert_eq!(missing.get(), Some(&"elicitation"));
        // `supports` only asks; it records nothing.
        let other = Missing::default();
        let (asks, _rx2) = mpsc::channel(1);
        let _guard2 = callers.enter(
            "c2",
            Route::Rounds {
                asks,
                capabilities: ClientCapabilities::default(),
            },
            Arc::clone(&other),
        );
        assert!(callers.supports("c2", &request).is_err());
        assert_eq!(other.get(), None);
    }

    #[tokio::test]
    async fn a_client_without_elicitation_is_refused_with_the_reason() {
        let callers = Callers::new();
        let (asks, _rx) = mpsc::channel(1);
        let _guard = callers.enter(
            "c1",
            Route::Rounds {
                asks,
                capabilities: ClientCapabilities::default(),
            },
            Missing::default(),
        );
        match callers.ask_approval("c1", "run?").await {
            CallerAnswer::Deny { reason } => {
                assert!(
                    reason.contains("neither elicitation nor input_required"),
                    "{reason}"
                )
            }
            CallerAnswer::Allow => panic!("allowed unasked"),
        }
    }
}
