//! Tool calls on a live connection: the request, progress routing, cancellation, timeouts,
//! SEP-2322 `input_required` rounds and OAuth re-authorization.

use std::time::{Duration, Instant};

use mux_tool::ToolContext;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotificationParam,
    ClientRequest, InputRequiredResult, InputResponses, RequestMetaObject, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError};
use serde_json::Value;

use super::handler::answer_input;
use super::types::{PendingEntry, lock};
use super::{Inner, MAX_AUTH_ROUNDS, MAX_INPUT_ROUNDS, ServerConnection};
use crate::oauth::{Challenge, FlowContext, OAuth, request_challenge};
use crate::{AuthProgress, CallEnd, CallError, CallFailure, LogLevel, LogSource, McpEvent};

impl ServerConnection {
    /// Calls `tool` with `arguments` (a JSON object or null). Progress goes to `cx`'s
    /// progress sender; cancelling `cx` or passing `timeout` sends `notifications/cancelled`.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
        cx: &ToolContext,
        timeout: Duration,
    ) -> Result<CallToolResult, CallError> {
        let inner = &self.inner;
        let server = inner.spec.name.as_str();
        let fail = |failure| CallError::new(server, tool, failure);
        let arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            _ => {
                return Err(fail(CallFailure::InvalidArguments));
            }
        };
        let Some(link) = lock(&inner.link).clone() else {
            return Err(fail(CallFailure::NotConnected {
                state: self.state().name(),
            }));
        };
        let mut params = CallToolRequestParams::new(tool.to_string());
        params.arguments = arguments;
        params.meta = Some(effect_meta(cx));
        let lost = || fail(CallFailure::ConnectionLost);
        let call_id = cx.call_id().to_string();
        let cancel = cx.cancellation().child_token();
        let started = Instant::now();
        let deadline = started + timeout;
        let mut input_rounds = 0usize;
        let mut state_only_rounds = 0u32;
        let mut auth_rounds = 0u32;
        let oauth = lock(&inner.oauth).clone();
        let mut route: Option<Route<'_>> = None;
        let (result, end) = loop {
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()));
            let handle = match link
                .peer
                .send_request_with_option(request, PeerRequestOptions::no_options())
                .await
            {
                Ok(handle) => handle,
                // Nothing was announced yet: the call never started.
                Err(_) if input_rounds == 0 && auth_rounds == 0 => return Err(lost()),
                Err(_) => break (Err(lost()), CallEnd::Failed),
            };
            // Kept past the loop: progress that arrived before the result is delivered while
            // the barrier settles, and it needs the route.
            route = Some(Route::new(
                inner,
                handle.progress_token.clone(),
                PendingEntry {
                    cx: cx.clone(),
                    call_id: call_id.clone(),
                    tool: tool.to_string(),
                    started,
                    cancel: cancel.clone(),
                    deadline,
                    timed_out: false,
                },
            ));
            if input_rounds == 0 && auth_rounds == 0 {
                inner.shared.events.send_with(|| McpEvent::CallStarted {
                    server: server.to_string(),
                    tool: tool.to_string(),
                    call_id: call_id.clone(),
                });
            }
            let rmcp::service::RequestHandle {
                rx: response,
                id: request_id,
                peer,
                ..
            } = handle;
            let send_cancel = |reason: &str| {
                let peer = peer.clone();
                let params = CancelledNotificationParam::new(
                    Some(request_id.clone()),
                    Some(reason.to_string()),
                );
                // Boxed, as the other rare paths below: kept inline, they would make every
                // call's future several times larger (and copied that much more).
                Box::pin(async move {
                    // The server may already be gone; the call ends either way.
                    let _ =
                        tokio::time::timeout(Duration::from_secs(1), peer.notify_cancelled(params))
                            .await;
                })
            };
            let cancelled = || fail(CallFailure::Cancelled);
            let timed_out = || fail(CallFailure::TimedOut { timeout });
            // How a call whose token fired ends: timed out when the deadline keeper fired it.
            let stop = |route: Option<&Route<'_>>| {
                if route.is_some_and(Route::timed_out) {
                    (Err(timed_out()), CallEnd::TimedOut)
                } else {
                    (Err(cancelled()), CallEnd::Cancelled)
                }
            };
            let next = tokio::select! {
                biased;
                response = response => match response {
                    Ok(Ok(ServerResult::CallToolResult(result))) => break (Ok(result), CallEnd::Completed),
                    Ok(Ok(ServerResult::InputRequiredResult(asked))) => Next::Input(asked),
                    Ok(Ok(other)) => break (Err(fail(CallFailure::Protocol {
                        message: format!("expected a tool result, got {}", result_kind(&other)),
                    })), CallEnd::Failed),
                    Ok(Err(ServiceError::McpError(error))) => break (Err(fail(CallFailure::Protocol {
                        message: error.message.to_string(),
                    })), CallEnd::Failed),
                    Ok(Err(err)) => match request_challenge(&err) {
                        Some(challenge) if oauth.is_some() => Next::Challenge(challenge),
                        Some(_) => break (Err(fail(CallFailure::Protocol {
                            message: "the server refused the call's authorization (HTTP 401/403)".into(),
                        })), CallEnd::Failed),
                        None => break (Err(lost()), CallEnd::Failed),
                    },
                    Err(_) => break (Err(lost()), CallEnd::Failed),
                },
                () = link.closed.cancelled() => break (Err(lost()), CallEnd::Failed),
                // The caller, `cancel_call` or the connection's deadline keeper (one timer per
                // connection, not a timer per call: arming a timer per call costs a
                // cross-thread wake-up, and a token per call an allocation).
                () = cancel.cancelled() => {
                    let stopped = stop(route.as_ref());
                    let reason = match stopped.1 {
                        CallEnd::TimedOut => "timed out",
                        _ => "cancelled by the caller",
                    };
                    send_cancel(reason).await;
                    break stopped;
                }
            };
            let input_required = match next {
                Next::Input(asked) => asked,
                Next::Challenge(challenge) => {
                    // Authorize (again, or for more scopes), then send the same call again.
                    auth_rounds += 1;
                    let authorized = match (&oauth, auth_rounds <= MAX_AUTH_ROUNDS) {
                        (Some(oauth), true) => {
                            tokio::select! {
                                biased;
                                done = Box::pin(self.reauthorize(oauth, &challenge)) => done,
                                () = cancel.cancelled() => break stop(route.as_ref()),
                            }
                        }
                        _ => Err(format!(
                            "still refused after {MAX_AUTH_ROUNDS} authorizations"
                        )),
                    };
                    if let Err(message) = authorized {
                        break (
                            Err(fail(CallFailure::Protocol {
                                message: format!("authorization failed: {message}"),
                            })),
                            CallEnd::Failed,
                        );
                    }
                    continue;
                }
            };
            // SEP-2322: the server needs input first. Answer it, then retry the call with the
            // answers and the echoed request state.
            input_rounds += 1;
            if input_rounds >= MAX_INPUT_ROUNDS {
                break (
                    Err(fail(CallFailure::InputRequired {
                        message: format!("still asking for input after {MAX_INPUT_ROUNDS} rounds"),
                    })),
                    CallEnd::Failed,
                );
            }
            let answers = tokio::select! {
                biased;
                answers = Box::pin(self.answer_inputs(input_required, &mut state_only_rounds)) => answers,
                () = cancel.cancelled() => break stop(route.as_ref()),
                () = tokio::time::sleep_until(deadline.into()) => break (Err(timed_out()), CallEnd::TimedOut),
            };
            match answers {
                Ok((responses, state)) => {
                    params.input_responses = responses;
                    params.request_state = state;
                }
                Err(message) => {
                    break (
                        Err(fail(CallFailure::InputRequired { message })),
                        CallEnd::Failed,
                    );
                }
            }
        };
        if end == CallEnd::Completed {
            // Deliver the progress that arrived before the result before returning it.
            link.barrier.settle(Duration::from_millis(250)).await;
        }
        drop(route);
        inner.shared.events.send_with(|| McpEvent::CallEnded {
            server: server.to_string(),
            tool: tool.to_string(),
            call_id,
            duration: started.elapsed(),
            end,
        });
        result
    }

    /// Runs OAuth again while connected: a new authorization for a 401, more scopes for a
    /// 403 `insufficient_scope`. Steps are logged; the state stays connected.
    async fn reauthorize(&self, oauth: &OAuth, challenge: &Challenge) -> Result<(), String> {
        let inner = &self.inner;
        let shared = inner.shared.clone();
        let progress = move |progress: AuthProgress| {
            shared.log(
                LogLevel::Info,
                LogSource::Protocol,
                format!("re-authorizing: {progress:?}"),
            );
        };
        let cx = FlowContext {
            server: &inner.spec.name,
            handlers: lock(&inner.client).clone(),
            progress: &progress,
        };
        let limit = inner.options.authorization_timeout;
        let flow = async {
            match challenge {
                Challenge::Unauthorized(header) => oauth.authorize(header, &cx).await,
                Challenge::InsufficientScope(header) => oauth.upgrade(header, &cx).await,
            }
        };
        match tokio::time::timeout(limit, flow).await {
            Ok(result) => result,
            Err(_) => Err(format!("not completed within {limit:?}")),
        }
    }

    /// Answers every input request of an `input_required` result through the client
    /// handlers; returns the answers (if any) and the request state to echo.
    async fn answer_inputs(
        &self,
        asked: InputRequiredResult,
        state_only_rounds: &mut u32,
    ) -> Result<(Option<InputResponses>, Option<String>), String> {
        let requests = asked.input_requests.unwrap_or_default();
        if requests.is_empty() {
            if asked.request_state.is_none() {
                return Err("an input_required result with neither requests nor state".into());
            }
            // Only state to echo: back off a little so a polling server is not hammered.
            let pause = (50u64 << (*state_only_rounds).min(3)).min(250);
            tokio::time::sleep(Duration::from_millis(pause)).await;
            *state_only_rounds += 1;
            return Ok((None, asked.request_state));
        }
        *state_only_rounds = 0;
        let client = lock(&self.inner.client).clone();
        let shared = &self.inner.shared;
        let answers = futures::future::join_all(requests.into_iter().map(|(key, request)| {
            let client = client.clone();
            async move {
                let answer = answer_input(shared, client.as_ref(), request).await;
                (key, answer)
            }
        }))
        .await;
        let mut responses = InputResponses::new();
        for (key, answer) in answers {
            let value = answer.map_err(|message| format!("input request `{key}`: {message}"))?;
            responses.insert(key, value);
        }
        Ok((Some(responses), asked.request_state))
    }
}

/// What a call round asks for before the call can go on.
enum Next {
    /// SEP-2322 input.
    Input(InputRequiredResult),
    /// Authorization (HTTP 401 or 403 `insufficient_scope`).
    Challenge(Challenge),
}

/// Registers a call's pending entry (and so its progress route); removes it when dropped.
struct Route<'a> {
    inner: &'a Inner,
    token: rmcp::model::ProgressToken,
}

impl<'a> Route<'a> {
    fn new(inner: &'a Inner, token: rmcp::model::ProgressToken, entry: PendingEntry) -> Self {
        lock(&inner.pending).insert(token.clone(), entry);
        Self { inner, token }
    }
}

impl Route<'_> {
    /// Whether the deadline keeper expired this round of the call.
    fn timed_out(&self) -> bool {
        lock(&self.inner.pending)
            .get(&self.token)
            .is_some_and(|entry| entry.timed_out)
    }
}

impl Drop for Route<'_> {
    fn drop(&mut self) {
        lock(&self.inner.pending).remove(&self.token);
    }
}

fn result_kind(result: &ServerResult) -> String {
    serde_json::to_value(result)
        .ok()
        .and_then(|v| {
            v.as_object()
                .map(|o| o.keys().cloned().collect::<Vec<_>>().join(","))
        })
        .map_or_else(
            || "an unreadable result".to_string(),
            |keys| format!("a result with fields [{keys}]"),
        )
}

/// The call's effect key in the request's `_meta` ([`mux_tool::META_EFFECT_KEY`] and
/// [`mux_tool::META_ATTEMPT`]), so the server can make the call's effect happen once: the
/// same key comes again when a run that was taken over calls the tool a second time.
fn effect_meta(cx: &ToolContext) -> RequestMetaObject {
    let key = cx.effect_key();
    let mut meta = RequestMetaObject::new();
    meta.insert(
        mux_tool::META_EFFECT_KEY.to_owned(),
        Value::from(key.as_str()),
    );
    meta.insert(
        mux_tool::META_ATTEMPT.to_owned(),
        Value::from(key.attempt()),
    );
    meta
}
