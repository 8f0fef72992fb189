//! One `session/prompt`: a mux run, its events as `session/update`s, its approvals as
//! `session/request_permission`, and the stop reason it ended with.

use std::sync::Arc;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, SessionInfoUpdate, SessionNotification, SessionUpdate, StopReason,
    ToolCall, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use mux_orchestrator::{Answer, InputSender, LoopError, LoopEvent, LoopInput, Run};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::AcpError;
use crate::prompt::Prompt;
use crate::sessions::Session;
use crate::tool_view::{self, Described};

/// The ids of the four permission options.
const ALLOW_ONCE: &str = "allow_once";
const ALLOW_ALWAYS: &str = "allow_always";
const REJECT_ONCE: &str = "reject_once";
const REJECT_ALWAYS: &str = "reject_always";

/// What `ask_user` hears: ACP has no question in the middle of a prompt's run, so the model
/// asks in its reply.
const NO_QUESTIONS: &str = "The editor cannot answer questions while you work. End your \
                            reply with the question, and the user will answer.";

/// An `agent_message_chunk` notification.
pub(crate) fn message(session: &str, text: String) -> SessionNotification {
    SessionNotification::new(
        session.to_owned(),
        SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text))),
    )
}

/// Runs `prompt` in `session` to its end (ACP's "prompt turn"; in mux, a run) and answers
/// with its stop reason.
pub(crate) async fn run_prompt(
    session: Arc<Session>,
    prompt: Prompt,
    cx: ConnectionTo<Client>,
) -> Result<StopReason, AcpError> {
    let Run {
        mut events,
        input,
        handle,
    } = session.orchestrator.run_with(prompt.text, prompt.images)?;
    let cancel = handle.cancellation().clone();
    session.begin_run(cancel.clone());
    let view = RunView {
        session: Arc::clone(&session),
        cx,
    };
    while let Some(event) = events.recv().await {
        view.on_event(event, &input, &cancel).await;
    }
    session.end_run();
    let outcome = handle.wait().await;
    match outcome {
        Ok(_) if cancel.is_cancelled() => Ok(StopReason::Cancelled),
        Ok(summary) => Ok(stop_reason(&summary)),
        Err(LoopError::Cancelled) => Ok(StopReason::Cancelled),
        Err(LoopError::MaxIterations(_)) => Ok(StopReason::MaxTurnRequests),
        Err(err) => Err(err.into()),
    }
}

/// How a finished run reads in ACP: a token budget is `max_tokens`, any other budget
/// (calls, cost, wall time) `max_turn_requests`, the closest ACP has for "stopped by a limit".
fn stop_reason(summary: &mux_orchestrator::RunSummary) -> StopReason {
    match &summary.limit {
        Some(limit) if limit.is_tokens() => StopReason::MaxTokens,
        Some(_) => StopReason::MaxTurnRequests,
        None => match summary.stop_reason {
            mux_llm::StopReason::MaxTokens => StopReason::MaxTokens,
            mux_llm::StopReason::Refusal => StopReason::Refusal,
            _ => StopReason::EndTurn,
        },
    }
}

/// The run as the editor sees it.
struct RunView {
    session: Arc<Session>,
    cx: ConnectionTo<Client>,
}

impl RunView {
    fn send(&self, update: SessionUpdate) {
        let notification = SessionNotification::new(self.session.id().to_owned(), update);
        if let Err(err) = self.cx.send_notification(notification) {
            tracing::debug!(target: "mux_acp", error = %err, "could not send an update");
        }
    }

    fn update(&self, call_id: &str, fields: ToolCallUpdateFields) {
        self.send(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call_id.to_owned(),
            fields,
        )));
    }

    /// What the tool `name` says about itself and about a call with `args`.
    fn describe(&self, name: &str, args: &Value) -> Described {
        Described::of(self.session.orchestrator.tools(), name, args)
    }

    async fn on_event(&self, event: LoopEvent, input: &InputSender, cancel: &CancellationToken) {
        match event {
            LoopEvent::TextDelta { text } => self.send(SessionUpdate::AgentMessageChunk(
                ContentChunk::new(ContentBlock::from(text)),
            )),
            LoopEvent::ThinkingDelta { thinking } => self.send(SessionUpdate::AgentThoughtChunk(
                ContentChunk::new(ContentBlock::from(thinking)),
            )),
            LoopEvent::ToolCallArguments {
                call_id,
                name,
                input: args,
            } => self.announce(call_id, &name, args),
            LoopEvent::ApprovalRequired {
                call_id,
                name,
                input: args,
                reason,
                preview,
                ..
            } => self.ask(
                Asked {
                    call_id,
                    name,
                    args,
                    reason,
                    preview,
                },
                input,
                cancel,
            ),
            LoopEvent::ToolExecuting { call_id, .. } => self.update(
                &call_id,
                ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
            ),
            LoopEvent::ToolResult {
                call_id, output, ..
            } => self.finish(&call_id, &output),
            LoopEvent::AwaitingInput { call_id, .. } => {
                let text = NO_QUESTIONS.to_owned();
                input.send(LoopInput::UserResponse { call_id, text }).await;
            }
            LoopEvent::Usage { turn, .. } => {
                let used = turn.input_tokens
                    + turn.cache_read_tokens
                    + turn.cache_write_tokens
                    + turn.output_tokens;
                self.send(SessionUpdate::UsageUpdate(UsageUpdate::new(
                    used,
                    self.session.context_window,
                )));
            }
            LoopEvent::TitleGenerated { title } => {
                self.send(SessionUpdate::SessionInfoUpdate(
                    SessionInfoUpdate::new().title(title),
                ));
            }
            LoopEvent::ToolOutputDelta {
                call_id,
                update: mux_tool::ToolUpdate::Subagent { agent, event },
            } => self.nested(&call_id, &agent, &event),
            LoopEvent::McpServerFailed { server, reason } => {
                // Said at session/new already, when the servers were started there.
                tracing::debug!(target: "mux_acp", server, reason, "MCP server failed");
            }
            _ => {}
        }
    }

    /// A subagent's tool call, shown as its own tool call nested under the delegating one:
    /// id `{parent}/{child}`, `_meta.mux.parentToolCallId` naming the parent.
    fn nested(&self, parent: &str, agent: &str, event: &Value) {
        let Some(child) = event.get("call_id").and_then(Value::as_str) else {
            return;
        };
        let id = format!("{parent}/{child}");
        let name = event.get("name").and_then(Value::as_str).unwrap_or("tool");
        let tools = self.session.orchestrator.tools();
        let mut meta = serde_json::Map::new();
        meta.insert(
            "mux".to_owned(),
            serde_json::json!({"parentToolCallId": parent, "agent": agent}),
        );
        match event.get("type").and_then(Value::as_str) {
            Some("tool_call_arguments") => {
                let args = event.get("input").cloned().unwrap_or(Value::Null);
                let described = Described::of(tools, name, &args);
                let title = tool_view::title_of(name, &described.subject);
                let call = ToolCall::new(id, format!("{agent}: {title}"))
                    .kind(described.kind)
                    .status(ToolCallStatus::InProgress)
                    .raw_input(args)
                    .meta(meta);
                self.send(SessionUpdate::ToolCall(call));
            }
            Some("tool_result") => {
                let output = event.get("output");
                let failed = output
                    .and_then(|o| o.get("is_error"))
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let status = if failed {
                    ToolCallStatus::Failed
                } else {
                    ToolCallStatus::Completed
                };
                self.update(&id, ToolCallUpdateFields::new().status(status));
            }
            Some("tool_denied") => {
                self.update(
                    &id,
                    ToolCallUpdateFields::new().status(ToolCallStatus::Failed),
                );
            }
            _ => {}
        }
    }

    /// `tool_call` (pending) once the arguments are known: the kind from the tool's
    /// annotations, the title and location from its subject, and the raw input.
    fn announce(&self, call_id: String, name: &str, args: Value) {
        let described = self.describe(name, &args);
        let call = ToolCall::new(call_id, tool_view::title_of(name, &described.subject))
            .kind(described.kind)
            .status(ToolCallStatus::Pending)
            .locations(tool_view::subject_locations(
                &described.subject,
                self.session.root(),
            ))
            .raw_input(args);
        self.send(SessionUpdate::ToolCall(call));
    }

    /// The call's end: its status, and what its output presents. A successful call with
    /// diffs shows them in place of its text; presented locations replace the announced ones;
    /// a presented todo list is also sent as the session's `plan`.
    fn finish(&self, call_id: &str, output: &mux_tool::ToolOutput) {
        let status = if output.is_error {
            ToolCallStatus::Failed
        } else {
            ToolCallStatus::Completed
        };
        let shown = output.presentation().unwrap_or_default();
        let root = self.session.root();
        let mut fields = ToolCallUpdateFields::new().status(status);
        let diffs = tool_view::diffs_of(&shown, root);
        fields = if output.is_error || diffs.is_empty() {
            fields.content(vec![tool_view::text_content(output.to_text())])
        } else {
            fields.content(diffs)
        };
        if !shown.locations().is_empty() {
            fields = fields.locations(tool_view::locations_of(&shown, root));
        }
        self.update(call_id, fields);
        if let (false, Some(todos)) = (output.is_error, shown.todos()) {
            self.send(SessionUpdate::Plan(tool_view::plan_of(todos)));
        }
    }

    /// Asks the editor in a task of its own (the loop's events keep flowing), and answers the
    /// loop. A cancelled run stops waiting: dropping the request tells the client.
    fn ask(&self, asked: Asked, input: &InputSender, cancel: &CancellationToken) {
        let Asked {
            call_id,
            name,
            args,
            reason,
            preview,
        } = asked;
        if name == mux_orchestrator::NETWORK_APPROVAL {
            return self.ask_network(call_id, args, reason, input, cancel);
        }
        let name = name.as_str();
        let described = self.describe(name, &args);
        // What the call would do (the diff of an edit), so the user sees it before answering.
        let mut content = vec![tool_view::text_content(format!("Needs approval: {reason}"))];
        let mut fields = ToolCallUpdateFields::new()
            .title(tool_view::title_of(name, &described.subject))
            .kind(described.kind)
            .raw_input(args);
        if let Some(preview) = &preview {
            content.extend(tool_view::diffs_of(preview, &self.session.cwd));
            let locations = tool_view::locations_of(preview, &self.session.cwd);
            if !locations.is_empty() {
                fields = fields.locations(locations);
            }
        }
        let fields = fields.content(content);
        let request = RequestPermissionRequest::new(
            self.session.id().to_owned(),
            ToolCallUpdate::new(call_id.clone(), fields),
            permission_options(),
        );
        let (cx, input, cancel) = (self.cx.clone(), input.clone(), cancel.clone());
        let session = Arc::clone(&self.session);
        let tool = name.to_owned();
        tokio::spawn(async move {
            let Some(decision) = ask_editor(&cx, request, &cancel, |option| {
                decide(option, &session, &tool)
            })
            .await
            else {
                return;
            };
            input
                .send(LoopInput::ToolApproval {
                    call_id,
                    answer: decision,
                })
                .await;
        });
    }
}

/// Sends the editor `request` and makes an answer of its reply: `decide` reads the option
/// the user selected; a cancelled request or no answer denies. `None` when `cancel` fired
/// first (the run no longer waits).
async fn ask_editor(
    cx: &ConnectionTo<Client>,
    request: RequestPermissionRequest,
    cancel: &CancellationToken,
    decide: impl FnOnce(&str) -> Answer,
) -> Option<Answer> {
    let answer = tokio::select! {
        answer = cx.send_request(request).block_task() => answer,
        () = cancel.cancelled() => return None,
    };
    Some(match answer {
        Ok(response) => match response.outcome {
            RequestPermissionOutcome::Selected(selected) => decide(&selected.option_id.0),
            _ => Answer::deny("the user cancelled the request"),
        },
        Err(err) => Answer::deny(format!(
            "the editor did not answer the permission request: {err}"
        )),
    })
}

impl RunView {
    /// Asks the editor about a walled command's network destination. The question is not
    /// a call the editor was told of, so it is announced first as a tool call of its own
    /// (kind `fetch`, titled "Network access to host:port", under the approval's id), then
    /// asked about, then completed (allowed) or failed (refused). "Reject always" is not
    /// offered: a refusal holds for the rest of the command.
    fn ask_network(
        &self,
        call_id: String,
        args: Value,
        reason: String,
        input: &InputSender,
        cancel: &CancellationToken,
    ) {
        let destination = match (args["host"].as_str(), args["port"].as_u64()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            _ => reason.clone(),
        };
        let title = format!("Network access to {destination}");
        let call = ToolCall::new(call_id.clone(), title.clone())
            .kind(ToolKind::Fetch)
            .status(ToolCallStatus::Pending)
            .raw_input(args.clone());
        self.send(SessionUpdate::ToolCall(call));
        let fields = ToolCallUpdateFields::new()
            .title(title)
            .kind(ToolKind::Fetch)
            .raw_input(args)
            .content(vec![tool_view::text_content(format!(
                "Needs approval: {reason}"
            ))]);
        let options = permission_options()
            .into_iter()
            .filter(|option| option.option_id.0.as_ref() != REJECT_ALWAYS)
            .collect();
        let request = RequestPermissionRequest::new(
            self.session.id().to_owned(),
            ToolCallUpdate::new(call_id.clone(), fields),
            options,
        );
        let (cx, input, cancel) = (self.cx.clone(), input.clone(), cancel.clone());
        let session = Arc::clone(&self.session);
        tokio::spawn(async move {
            let Some(decision) = ask_editor(&cx, request, &cancel, |option| match option {
                ALLOW_ONCE => Answer::AllowOnce,
                ALLOW_ALWAYS => Answer::AllowAlways {
                    remember: session.always.clone(),
                },
                _ => Answer::deny(format!("the user refused network access to {destination}")),
            })
            .await
            else {
                return;
            };
            let status = if matches!(decision, Answer::Deny { .. }) {
                ToolCallStatus::Failed
            } else {
                ToolCallStatus::Completed
            };
            let update =
                ToolCallUpdate::new(call_id.clone(), ToolCallUpdateFields::new().status(status));
            let notification = SessionNotification::new(
                session.id().to_owned(),
                SessionUpdate::ToolCallUpdate(update),
            );
            if let Err(err) = cx.send_notification(notification) {
                tracing::debug!(target: "mux_acp", error = %err, "could not send an update");
            }
            input
                .send(LoopInput::ToolApproval {
                    call_id,
                    answer: decision,
                })
                .await;
        });
    }
}

/// A call the loop asks about, as the editor is asked.
struct Asked {
    call_id: String,
    name: String,
    args: Value,
    reason: String,
    /// What the call would do (the tool's preview).
    preview: Option<mux_tool::Presentation>,
}

/// The four options, in the order editors show them.
fn permission_options() -> Vec<PermissionOption> {
    [
        (ALLOW_ONCE, "Allow", PermissionOptionKind::AllowOnce),
        (
            ALLOW_ALWAYS,
            "Always allow",
            PermissionOptionKind::AllowAlways,
        ),
        (REJECT_ONCE, "Reject", PermissionOptionKind::RejectOnce),
        (
            REJECT_ALWAYS,
            "Always reject",
            PermissionOptionKind::RejectAlways,
        ),
    ]
    .into_iter()
    .map(|(id, name, kind)| PermissionOption::new(id.to_owned(), name, kind))
    .collect()
}

/// The loop's answer for the option the user picked. "Always allow" records the narrowest
/// rule covering the call where the agent says (the session scope by default); "always reject" denies the tool for the rest
/// of the session. Rejections reach the model as a refusal.
fn decide(option: &str, session: &Session, tool: &str) -> Answer {
    match option {
        ALLOW_ONCE => Answer::AllowOnce,
        ALLOW_ALWAYS => Answer::AllowAlways {
            remember: session.always.clone(),
        },
        REJECT_ALWAYS => {
            session.deny_tool(tool);
            Answer::Deny {
                reason: format!(
                    "the user refused this call and every further `{tool}` call in this session"
                ),
            }
        }
        _ => Answer::Deny {
            reason: "the user refused this call".to_owned(),
        },
    }
}

#[cfg(test)]
mod budget_tests {
    use super::*;
    use mux_orchestrator::{LimitReached, RunSummary};

    fn summary(limit: Option<LimitReached>) -> RunSummary {
        RunSummary {
            text: String::new(),
            stop_reason: mux_llm::StopReason::EndTurn,
            tool_calls: Vec::new(),
            iterations: 1,
            usage: mux_llm::Usage::default(),
            unapproved: Vec::new(),
            limit,
        }
    }

    #[test]
    fn budgets_map_to_the_acp_stop_reasons_that_fit() {
        let tokens = LimitReached::OutputTokens { max: 10, used: 12 };
        assert_eq!(stop_reason(&summary(Some(tokens))), StopReason::MaxTokens);
        let calls = LimitReached::ToolCalls { max: 3 };
        assert_eq!(
            stop_reason(&summary(Some(calls))),
            StopReason::MaxTurnRequests
        );
        let time = LimitReached::WallTime { max_ms: 5 };
        assert_eq!(
            stop_reason(&summary(Some(time))),
            StopReason::MaxTurnRequests
        );
        assert_eq!(stop_reason(&summary(None)), StopReason::EndTurn);
    }
}
