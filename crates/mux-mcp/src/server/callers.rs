//! Reaching the client that made a call: elicitation, sampling and roots requests on behalf of
//! a running tool or of the approval gate.
//!
//! A client at 2025-11-25 (or older) gets ordinary server-to-client requests over its session.
//! A client at 2026-07-28 gets them as an `input_required` result (SEP-2322): the call pauses,
//! the client answers and sends the call again with the answers and the `requestState`. Either
//! way the code asking waits on one future; the handler does the protocol.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, ElicitRequestParams, InputRequest,
    InputRequests, InputResponses, RequestId, RequestMetaObject,
};
use rmcp::service::RequestContext;
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};

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
    Peer(Peer<RoleServer>),
    /// `input_required` rounds, run by the handler that serves the call (2026-07-28).
    Rounds,
}

/// What a call's client declared it can answer, decoded on the first question: most calls
/// ask none, and decoding a 2026-07-28 request's capabilities from its `_meta` (or copying a
/// session's) on every call cost more than the rest of the call's bookkeeping.
pub(crate) struct Declared {
    /// Where to read them: the request's `_meta` and its session (the fallback of a legacy
    /// session), exactly as [`RequestContext::client_capabilities`] reads them.
    source: Option<(RequestMetaObject, Peer<RoleServer>)>,
    decoded: OnceLock<ClientCapabilities>,
}

impl Declared {
    /// Capabilities already known.
    #[cfg(test)]
    pub(crate) fn known(capabilities: ClientCapabilities) -> Self {
        Self {
            source: None,
            decoded: OnceLock::from(capabilities),
        }
    }

    /// The capabilities of the request whose `_meta` is `meta`, made over `peer`'s session.
    pub(crate) fn of_request(meta: RequestMetaObject, peer: Peer<RoleServer>) -> Self {
        Self {
            source: Some((meta, peer)),
            decoded: OnceLock::new(),
        }
    }

    fn get(&self) -> &ClientCapabilities {
        self.decoded.get_or_init(|| match &self.source {
            Some((meta, peer)) => {
                let mut cx = RequestContext::new(RequestId::Number(0), peer.clone());
                cx.meta = meta.clone();
                cx.client_capabilities().unwrap_or_default()
            }
            None => ClientCapabilities::default(),
        })
    }
}

/// One call in progress: how to reach its client, what that client declared, the capability
/// it was found to lack (see [`Callers::require`]) and, for rounds, the questions waiting for
/// the handler. One allocation per call holds all of it.
pub(crate) struct Call {
    route: Route,
    capabilities: Declared,
    missing: OnceLock<&'static str>,
    /// Questions for the handler to put to a 2026-07-28 client; `None` once the call ended,
    /// so that a late question fails at once instead of waiting for an answer.
    rounds: Mutex<Option<VecDeque<Round>>>,
    asked: Notify,
}

impl Call {
    /// Whether the call's questions go to its client as `input_required` rounds (so the
    /// call may be parked between requests).
    pub(crate) fn asks_in_rounds(&self) -> bool {
        matches!(self.route, Route::Rounds)
    }

    /// The capability a tool required and the client lacks (the call then answers `-32021`).
    pub(crate) fn missing(&self) -> Option<&'static str> {
        self.missing.get().copied()
    }

    fn rounds(&self) -> std::sync::MutexGuard<'_, Option<VecDeque<Round>>> {
        self.rounds
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The next round of questions asked of a 2026-07-28 client (never, for a session peer).
    pub(crate) async fn next_round(&self) -> Round {
        loop {
            let notified = self.asked.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(round) = self.rounds().as_mut().and_then(VecDeque::pop_front) {
                return round;
            }
            notified.await;
        }
    }

    /// Queues `round` for the handler; `Err` gives it back when the call has ended.
    fn ask(&self, round: Round) -> Result<(), Round> {
        match self.rounds().as_mut() {
            Some(queue) => queue.push_back(round),
            None => return Err(round),
        }
        self.asked.notify_one();
        Ok(())
    }
}

/// The calls in progress and how to reach their callers, shared by the server and by whoever
/// asks (the approval gate's asker, a tool). Clones share the same table, and the same
/// numbering: calls of two servers sharing one table never get the same id.
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
    table: Arc<Table>,
}

#[derive(Default)]
struct Table {
    /// By call number: ordered, so no hashing per call (the numbers are the server's own).
    calls: Mutex<BTreeMap<u64, Arc<Call>>>,
    /// The number of the last call named (`mcp-<n>`, from 1).
    named: AtomicU64,
}

/// The prefix of the ids the server gives its calls.
const CALL_ID_PREFIX: &str = "mcp-";

/// The number in a call id the server gave (`mcp-<n>`, `n` written without a sign or
/// leading zeros); anything else names no call.
fn call_number(call_id: &str) -> Option<u64> {
    let digits = call_id.strip_prefix(CALL_ID_PREFIX)?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if canonical { digits.parse().ok() } else { None }
}

impl std::fmt::Debug for Callers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Callers")
            .field("calls", &self.lock().len())
            .finish()
    }
}

/// A call's entry in the table, removed when this drops (the call ended or was given up).
pub(crate) struct CallGuard {
    callers: Callers,
    number: u64,
    call: Arc<Call>,
}

impl CallGuard {
    /// The call.
    pub(crate) fn call(&self) -> &Call {
        &self.call
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.callers.lock().remove(&self.number);
        // Questions still queued get no answer: their askers hear so at once.
        let queued = self.call.rounds().take();
        drop(queued);
    }
}

impl Callers {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Call>>> {
        self.table
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Names a new call (`mcp-<n>`) and records how to reach its caller until the guard
    /// drops.
    pub(crate) fn enter(&self, route: Route, capabilities: Declared) -> (String, CallGuard) {
        let number = self.table.named.fetch_add(1, Ordering::Relaxed) + 1;
        let rounds = matches!(route, Route::Rounds).then(VecDeque::new);
        let call = Arc::new(Call {
            route,
            capabilities,
            missing: OnceLock::new(),
            rounds: Mutex::new(rounds),
            asked: Notify::new(),
        });
        self.lock().insert(number, Arc::clone(&call));
        let guard = CallGuard {
            callers: self.clone(),
            number,
            call,
        };
        (format!("{CALL_ID_PREFIX}{number}"), guard)
    }

    /// Whether the caller of `call_id` can answer `request` (it declared the capability).
    pub fn supports(&self, call_id: &str, request: &InputRequest) -> Result<(), CallerError> {
        let call = self.call(call_id)?;
        check(call.capabilities.get(), request)
    }

    /// Like [`supports`](Self::supports), for a call that cannot go on without `request`:
    /// when the client did not declare the capability, the server answers the whole call
    /// with the protocol's `-32021` (MissingRequiredClientCapability, naming it) rather than
    /// with the tool's result.
    pub fn require(&self, call_id: &str, request: &InputRequest) -> Result<(), CallerError> {
        let call = self.call(call_id)?;
        check(call.capabilities.get(), request).inspect_err(|err| {
            if let CallerError::Unsupported { capability } = err {
                let _ = call.missing.set(capability);
            }
        })
    }

    fn call(&self, call_id: &str) -> Result<Arc<Call>, CallerError> {
        call_number(call_id)
            .and_then(|number| self.lock().get(&number).cloned())
            .ok_or_else(|| CallerError::UnknownCall {
                call_id: call_id.to_string(),
            })
    }

    /// Sends `requests` (keyed by names of the caller's choosing) to the client of `call_id`
    /// and returns its results by the same keys, as JSON (`ElicitResult`, `CreateMessageResult`,
    /// `ListRootsResult`). Waits at most [`CALLER_TIMEOUT`].
    pub async fn request(
        &self,
        call_id: &str,
        requests: InputRequests,
    ) -> Result<InputResponses, CallerError> {
        let call = self.call(call_id)?;
        for request in requests.values() {
            check(call.capabilities.get(), request)?;
        }
        let answered = async {
            match &call.route {
                Route::Peer(peer) => {
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
                Route::Rounds => {
                    let (reply, answer) = oneshot::channel();
                    call.ask(Round { requests, reply })
                        .map_err(|_| CallerError::NoAnswer {
                            reason: "the call ended".into(),
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
        let (c1, guard) = callers.enter(
            Route::Rounds,
            Declared::known(ClientCapabilities::default()),
        );
        let request = approval_request("run?").unwrap();
        assert_eq!(
            callers.require(&c1, &request),
            Err(CallerError::Unsupported {
                capability: "elicitation"
            })
        );
        assert_eq!(guard.call().missing(), Some("elicitation"));
        // `supports` only asks; it records nothing.
        let (c2, other) = callers.enter(
            Route::Rounds,
            Declared::known(ClientCapabilities::default()),
        );
        assert!(callers.supports(&c2, &request).is_err());
        assert_eq!(other.call().missing(), None);
    }

    #[tokio::test]
    async fn a_client_without_elicitation_is_refused_with_the_reason() {
        let callers = Callers::new();
        let (call_id, _guard) = callers.enter(
            Route::Rounds,
            Declared::known(ClientCapabilities::default()),
        );
        match callers.ask_approval(&call_id, "run?").await {
            CallerAnswer::Deny { reason } => {
                assert!(
                    reason.contains("neither elicitation nor input_required"),
                    "{reason}"
                )
            }
            CallerAnswer::Allow => panic!("allowed unasked"),
        }
    }

    #[test]
    fn calls_are_numbered_per_table_and_only_their_exact_ids_name_them() {
        let callers = Callers::new();
        let shared = callers.clone();
        let (first, _a) = callers.enter(
            Route::Rounds,
            Declared::known(ClientCapabilities::default()),
        );
        let (second, _b) = shared.enter(
            Route::Rounds,
            Declared::known(ClientCapabilities::default()),
        );
        assert_eq!((first.as_str(), second.as_str()), ("mcp-1", "mcp-2"));
        let request = approval_request("run?").unwrap();
        for other in [
            "mcp-01", "mcp-+1", "mcp- 1", "mcp-", "mcp-3", "1", "MCP-1", "mcp-1 ",
        ] {
            assert_eq!(
                callers.supports(other, &request),
                Err(CallerError::UnknownCall {
                    call_id: other.to_string()
                }),
                "{other}"
            );
        }
        assert!(matches!(
            callers.supports("mcp-1", &request),
            Err(CallerError::Unsupported { .. })
        ));
    }

    #[tokio::test]
    async fn a_question_for_a_call_that_ended_fails_at_once() {
        let elicit = || {
            let mut caps = ClientCapabilities::default();
            caps.elicitation = Some(Default::default());
            caps
        };
        let callers = Callers::new();
        let (call_id, guard) = callers.enter(Route::Rounds, Declared::known(elicit()));
        let asking = callers.clone();
        let id = call_id.clone();
        let asked = tokio::spawn(async move { asking.ask_approval(&id, "run?").await });
        // The handler sees the round; then the call ends without answering it.
        let round = guard.call().next_round().await;
        assert!(round.requests.contains_key(APPROVAL_KEY));
        drop(round);
        match asked.await.unwrap() {
            CallerAnswer::Deny { reason } => assert!(reason.contains("not resumed"), "{reason}"),
            CallerAnswer::Allow => panic!("allowed unanswered"),
        }
        drop(guard);
        match callers.ask_approval(&call_id, "run?").await {
            CallerAnswer::Deny { reason } => assert!(reason.contains(&call_id), "{reason}"),
            CallerAnswer::Allow => panic!("allowed after the end"),
        }
    }
}
