//! One run of the loop: inject context, stream the model, run the tools, repeat.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use mux_llm::{
    Accumulator, ContentBlock, Message, OnRetry, Request, Response, Role, StopReason, StreamEvent,
    Usage,
};
use mux_tool::{BoxFuture, CallScope, EffectScope, Executor, ProgressSender, ToolCall, ToolOutput};
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::approval::{LoopAsker, LoopGate};
use crate::ask_user::AskUserLink;
use crate::compaction::{compact, estimate_tokens, split_point};
use crate::config::ToolParallelism;
use crate::convert::tool_result_block;
use crate::core::{Behind, Core, OnFailure};
use crate::dangling::{self, Resolution};
use crate::event::LoopEvent;
use crate::failure::FailureTracker;
use crate::hooks::{CompactAction, HookError, PromptAction, StopAction};
use crate::journal::Journal;
use crate::limits::{Budget, LimitReached};
use crate::run_state::RunShared;
use crate::session::HistoryRecord;
use crate::state::LoopState;
use crate::summary::{RunSummary, ToolCallRecord};
use crate::tool_hooks::{AskUserIsAllowed, PostToolHooks, PreToolHooks};
use crate::{LoopError, telemetry, title};

/// How many ready stream events in a row the loop takes before it checks for cancellation
/// (it also checks whenever the stream waits).
const CANCEL_CHECK_EVERY: u32 = 32;

/// A deadline that never comes, for a run without a wall-time budget (the branch is disabled).
const FAR_FUTURE: std::time::Duration = std::time::Duration::from_secs(86_400 * 365);

/// The wall-time limit the deadline stands for.
fn out_of(limit: &Option<LimitReached>) -> Halt {
    Halt::Limit(
        limit
            .clone()
            .unwrap_or(LimitReached::WallTime { max_ms: 0 }),
    )
}

/// What a run starts from: the prompt's text, which hooks see and may rewrite, and blocks
/// sent with it (images).
pub(crate) struct UserPrompt {
    pub(crate) text: String,
    pub(crate) attachments: Vec<ContentBlock>,
}

impl UserPrompt {
    pub(crate) fn new(text: impl Into<String>, attachments: Vec<ContentBlock>) -> Self {
        Self {
            text: text.into(),
            attachments,
        }
    }
}

/// Runs the loop and reports how it ended: the final state, and `Finished` or `Error`.
pub(crate) async fn drive(
    orch: &Core,
    run: &Arc<RunShared>,
    prompt: Option<UserPrompt>,
) -> Result<RunSummary, LoopError> {
    let span = telemetry::invoke_agent_span(orch, run);
    let result = Turns::new(orch, run)
        .run(prompt)
        .instrument(span.clone())
        .await;
    telemetry::record_run(&span, &result);
    match &result {
        Ok(summary) => {
            run.emit(LoopEvent::Finished {
                text: summary.text.clone(),
                iterations: summary.iterations,
                usage: summary.usage,
                limit: summary.limit.clone(),
            })
            .await;
        }
        Err(err) => {
            let terminal = if matches!(err, LoopError::Cancelled) {
                LoopState::Cancelled
            } else {
                LoopState::Error
            };
            if !run.state().is_terminal() {
                run.set_state(terminal).await;
            }
            run.emit(LoopEvent::Error {
                kind: err.kind().to_owned(),
                message: err.to_string(),
            })
            .await;
        }
    }
    result
}

/// Compacts outside a run (the manual trigger).
pub(crate) async fn compact_now(
    orch: &Core,
    run: &Arc<RunShared>,
) -> Result<Option<(u64, u64)>, LoopError> {
    // Without a configuration, keep only the last turn: the caller asked for compaction.
    let keep = orch
        .services
        .config
        .compaction
        .as_ref()
        .map_or(1, |c| c.keep_last_turns);
    let compacted = Turns::new(orch, run).compact(keep).await?;
    if run.state() == LoopState::Compacting {
        run.set_state(LoopState::Idle).await;
    }
    Ok(compacted)
}

/// Why the turns stopped before their end: an error, or a budget reached (a clean stop).
enum Halt {
    Error(LoopError),
    Limit(LimitReached),
}

impl<E: Into<LoopError>> From<E> for Halt {
    fn from(err: E) -> Self {
        Self::Error(err.into())
    }
}

struct Turns<'a> {
    orch: &'a Core,
    run: &'a Arc<RunShared>,
    budget: Budget,
    /// The last reply's text and stop reason, for a run stopped by its budget.
    last_reply: (String, StopReason),
    iterations: u32,
    usage: Usage,
    tool_calls: Vec<ToolCallRecord>,
    failures: FailureTracker,
    continued_by_stop_hook: bool,
    /// The write that takes the run's messages to the store behind the loop.
    behind: Behind,
    /// The calls run again that may have run before, with their attempt (see
    /// [`Turns::effect_scope`]); empty but while an open turn is resolved.
    retries: Vec<(String, u32)>,
    /// The session's id, the first part of every effect key.
    session: Arc<str>,
}

impl<'a> Turns<'a> {
    fn new(orch: &'a Core, run: &'a Arc<RunShared>) -> Self {
        Self {
            orch,
            run,
            budget: Budget::under(
                orch.services.config.limits.clone(),
                run.parent.as_ref().map(|p| p.budget.clone()),
            ),
            last_reply: (String::new(), StopReason::EndTurn),
            iterations: 0,
            usage: Usage::default(),
            tool_calls: Vec::new(),
            failures: FailureTracker::new(orch.services.config.failure_threshold),
            continued_by_stop_hook: false,
            behind: Behind::default(),
            retries: Vec::new(),
            session: Arc::from(orch.lock().meta.id.as_str()),
        }
    }

    async fn run(mut self, prompt: Option<UserPrompt>) -> Result<RunSummary, LoopError> {
        let outcome = self.finish(prompt).await;
        // What the store did not take while it was unreachable goes out now, or the run
        // fails (the records stay held for the conversation's next write).
        let wait = self.orch.services.config.store_outage;
        let flushed = self.orch.flush(wait, &self.run.cancel).await;
        match (outcome, flushed) {
            (Ok(_), Err(err)) => Err(err),
            (outcome, _) => outcome,
        }
    }

    async fn finish(&mut self, prompt: Option<UserPrompt>) -> Result<RunSummary, LoopError> {
        match self.turns(prompt).await {
            Ok(summary) => Ok(summary),
            Err(Halt::Error(err)) => Err(err),
            Err(Halt::Limit(limit)) => {
                tracing::info!(limit = limit.kind(), "{limit}");
                self.run.set_state(LoopState::Complete).await;
                let (text, stop_reason) =
                    std::mem::replace(&mut self.last_reply, (String::new(), StopReason::EndTurn));
                let mut summary = self.summary(text, stop_reason);
                summary.limit = Some(limit);
                Ok(summary)
            }
        }
    }

    async fn turns(&mut self, prompt: Option<UserPrompt>) -> Result<RunSummary, Halt> {
        let model = &self.orch.services.config.model;
        if self.budget.unpriced(model) {
            return Err(Halt::Error(LoopError::Unpriced {
                model: model.clone(),
            }));
        }
        let session_id = self.orch.lock().meta.id.clone();
        for hook in self.orch.services.hooks.snapshot() {
            self.call_hook(hook.name(), "session_start", || {
                hook.session_start(&session_id)
            })
            .await?;
        }
        let executor = self.executor();
        // The results of calls an earlier run left open lead the prompt's message; without a
        // prompt (a paused run resumed), they are the message. A prompt leaves the open turn
        // behind: nothing of it runs or asks again, so the prompt is stored before anything
        // can wait for a person (see [`dangling`]).
        // Boxed, as are the turn's other large steps below: a task is as large as its
        // largest state, and a run idles in one (a tool that waits), so the rare and the
        // short ones live on the heap only while they run.
        let prompted = prompt.is_some();
        let left_behind = prompted.then_some(dangling::LeftBehind::NewPrompt);
        let mut content = Box::pin(self.resolve_unanswered(&executor, left_behind)).await?;
        match prompt {
            Some(prompt) => {
                let text = Box::pin(self.submit_prompt(prompt.text)).await?;
                content.push(ContentBlock::text(text));
                content.extend(prompt.attachments);
            }
            // The session ends with the user's turn (a prompt, or results) that no model call
            // answered: its process stopped during that call, which is issued again.
            None if content.is_empty() && self.ends_with_user_turn() => {}
            None if content.is_empty() => return Err(LoopError::NothingToResume.into()),
            None => {}
        }
        if !content.is_empty() {
            self.append_said(Message::new(Role::User, content)).await?;
        }
        if prompted {
            let written = self.orch.services.store.is_none() || {
                let conversation = self.orch.lock();
                conversation.persisted && conversation.unwritten.is_empty()
            };
            if !written && self.orch.services.config.prompts_need_store {
                // Not acknowledged, so not kept: the prompt's message leaves the conversation
                // (and its record the held ones) before the model sees it.
                let held = self.withdraw_last_message();
                self.run.prompt_appended(false);
                return Err(LoopError::Unwritten {
                    records: held.max(1),
                    reason: "the session store did not take the prompt, which was withdrawn"
                        .to_owned(),
                }
                .into());
            }
            self.run.prompt_appended(written);
        }

        loop {
            self.check_stop()?;
            // Decided first, so a turn that needs no compaction makes no boxed future.
            if let Some(keep) = self.compaction_due() {
                Box::pin(self.compact(keep)).await?;
            }
            self.budget.before_model_call().map_err(Halt::Limit)?;
            self.iterations += 1;
            let limit = self.orch.services.config.max_iterations;
            if self.iterations > limit {
                return Err(LoopError::MaxIterations(limit).into());
            }
            self.refresh_tools().await;
            let turn = tracing::info_span!("turn", iteration = self.iterations);
            let response = Box::pin(self.stream_turn().instrument(turn.clone())).await?;
            let calls: Vec<ToolCall> = response
                .tool_calls()
                .map(|(id, name, input)| ToolCall::new(id, name, input.clone()))
                .collect();
            let text = response.text();
            let stop_reason = response.stop_reason.clone();
            // The response's blocks move into the conversation, uncopied.
            self.append(Message::new(Role::Assistant, response.content))
                .await?;
            title::maybe_generate(self.orch, &self.run.emitter);
            self.last_reply = (text.clone(), stop_reason.clone());

            if calls.is_empty() {
                let queued = self.run.take_queued_messages();
                let follow_up = if queued.is_empty() {
                    Box::pin(self.stop_hooks(&text)).await?
                } else {
                    Some(queued.join("\n\n"))
                };
                self.run
                    .emit(LoopEvent::TurnComplete {
                        iteration: self.iterations,
                        has_more: follow_up.is_some(),
                    })
                    .await;
                match follow_up {
                    Some(text) => {
                        self.append_said(Message::user(text)).await?;
                        continue;
                    }
                    None => {
                        self.run.set_state(LoopState::Complete).await;
                        return Ok(self.summary(text, stop_reason));
                    }
                }
            }

            self.run.set_state(LoopState::ExecutingTools).await;
            // The tools run inside the turn that asked for them.
            let (results, limit) = self
                .execute_within_budget(&executor, calls)
                .instrument(turn)
                .await;
            let mut blocks: Vec<ContentBlock> = results
                .iter()
                .map(|(call, output)| tool_result_block(&call.id, output))
                .collect();
            let queued = self.run.take_queued_messages();
            let said = !queued.is_empty();
            blocks.extend(queued.into_iter().map(ContentBlock::text));
            let message = Message::new(Role::User, blocks);
            if said {
                self.append_said(message).await?;
            } else {
                self.append(message).await?;
            }
            for (call, output) in results {
                let error = output.is_error.then(|| output.to_text());
                if let Some(count) = self.failures.record(&call, error.as_deref()) {
                    return Err(LoopError::FailureLoop {
                        tool: call.name,
                        count,
                        error: error.unwrap_or_default(),
                    }
                    .into());
                }
                self.tool_calls.push(ToolCallRecord {
                    id: call.id,
                    name: call.name,
                    input: call.input,
                    output,
                });
            }
            if self.run.cancel.is_cancelled() {
                return Err(LoopError::Cancelled.into());
            }
            if let Some(limit) = limit {
                self.run
                    .emit(LoopEvent::TurnComplete {
                        iteration: self.iterations,
                        has_more: false,
                    })
                    .await;
                return Err(Halt::Limit(limit));
            }
            self.run
                .emit(LoopEvent::TurnComplete {
                    iteration: self.iterations,
                    has_more: true,
                })
                .await;
        }
    }

    /// Answers the calls an earlier run left without results (see [`dangling`]) before this
    /// run adds its prompt: read-only and idempotent ones run again, the others get an
    /// "outcome unknown" error; when the turn is `left_behind` (a new prompt), none runs
    /// ([`dangling::not_run`]). The faces see each call and its result. Returns the result
    /// blocks, which lead the prompt's message; when a limit stops the run, they are written
    /// on their own first.
    async fn resolve_unanswered(
        &mut self,
        executor: &Executor,
        left_behind: Option<dangling::LeftBehind>,
    ) -> Result<Vec<ContentBlock>, Halt> {
        let calls = dangling::unanswered(&self.orch.lock().messages);
        if calls.is_empty() {
            return Ok(Vec::new());
        }
        tracing::warn!(
            calls = calls.len(),
            "the session ends in tool calls without results; resolving them"
        );
        let tools = &self.orch.services.tools;
        let mut order = Vec::with_capacity(calls.len());
        let progress = std::mem::take(&mut self.orch.lock().calls);
        let (mut rerun, mut unknown, mut known) = (Vec::new(), Vec::new(), Vec::new());
        for call in calls {
            order.push(call.id.clone());
            self.run
                .emit(LoopEvent::ToolCallStarted {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                })
                .await;
            self.run
                .emit(LoopEvent::ToolCallArguments {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    input: call.input.clone(),
                })
                .await;
            if let Some(why) = left_behind {
                let output =
                    dangling::not_run(&call, progress.get(&call.id), !progress.is_empty(), why);
                known.push((call, output));
                continue;
            }
            let spec = tools.get(&call.name).map(|tool| tool.spec().clone());
            match dangling::resolution(progress.get(&call.id), !progress.is_empty(), spec.as_ref())
            {
                Resolution::Known(output) => known.push((call, output)),
                Resolution::Run { attempt } => {
                    if attempt > 1 {
                        self.retries.push((call.id.clone(), attempt));
                    }
                    rerun.push(call);
                }
                Resolution::Unknown => unknown.push(call),
            }
        }
        let (mut results, limit) = if rerun.is_empty() {
            (Vec::new(), None)
        } else {
            // They may ask again (an approval, a question): the faces see tools at work.
            self.run.set_state(LoopState::ExecutingTools).await;
            let ran = self.execute_within_budget(executor, rerun).await;
            self.retries.clear();
            ran
        };
        let unknown = unknown.into_iter().map(|call| {
            let output = dangling::outcome_unknown(&call);
            (call, output)
        });
        for (call, output) in known.into_iter().chain(unknown) {
            self.settle(&mut results, call, output).await;
        }
        // One message, in the order the model made the calls.
        results.sort_by_key(|(call, _)| order.iter().position(|id| *id == call.id));
        let blocks: Vec<ContentBlock> = results
            .iter()
            .map(|(call, output)| tool_result_block(&call.id, output))
            .collect();
        for (call, output) in results {
            self.tool_calls.push(ToolCallRecord {
                id: call.id,
                name: call.name,
                input: call.input,
                output,
            });
        }
        match limit {
            Some(limit) => {
                self.append(Message::new(Role::User, blocks)).await?;
                Err(Halt::Limit(limit))
            }
            None => Ok(blocks),
        }
    }

    /// Brings the MCP tools up to date before a model request and tells the face what
    /// changed (and, once, which owned servers failed to start).
    async fn refresh_tools(&self) {
        #[cfg(feature = "mcp")]
        if let Some(link) = &self.orch.services.mcp {
            for (server, reason) in link.take_start_failures() {
                self.run
                    .emit(LoopEvent::McpServerFailed { server, reason })
                    .await;
            }
            let report = link.sync();
            if !(report.added.is_empty() && report.removed.is_empty() && report.updated.is_empty())
            {
                self.run
                    .emit(LoopEvent::ToolsChanged {
                        added: report.added,
                        removed: report.removed,
                        updated: report.updated,
                    })
                    .await;
            }
        }
    }

    fn summary(&mut self, text: String, stop_reason: StopReason) -> RunSummary {
        RunSummary {
            text,
            stop_reason,
            tool_calls: std::mem::take(&mut self.tool_calls),
            iterations: self.iterations,
            usage: self.usage,
            unapproved: self.run.take_unapproved(),
            limit: None,
        }
    }

    /// Whether the session's last message is the user's (no model call answered it).
    fn ends_with_user_turn(&self) -> bool {
        self.orch
            .lock()
            .messages
            .last()
            .is_some_and(|m| m.role == Role::User)
    }

    fn check_stop(&self) -> Result<(), LoopError> {
        if self.run.cancel.is_cancelled() {
            return Err(LoopError::Cancelled);
        }
        match self.run.stop_requested() {
            Some((hook, reason)) => Err(LoopError::StoppedByHook { hook, reason }),
            None => Ok(()),
        }
    }

    /// Calls one hook. `call` runs inside `catch_unwind`, so a hook that panics before it
    /// returns its future is caught as well as one that panics when polled; a failure or a
    /// panic becomes a `HookFailed` event. Returns `None` after a failure, an error when the
    /// hook asked to stop the run, and `Cancelled` if the run is cancelled meanwhile.
    async fn call_hook<'h, T>(
        &self,
        hook: &str,
        point: &str,
        call: impl FnOnce() -> BoxFuture<'h, Result<T, HookError>>,
    ) -> Result<Option<T>, LoopError> {
        let guarded = AssertUnwindSafe(async move { call().await }).catch_unwind();
        let outcome = tokio::select! {
            biased;
            () = self.run.cancel.cancelled() => return Err(LoopError::Cancelled),
            outcome = guarded => outcome,
        };
        let (message, stop) = match outcome {
            Ok(Ok(value)) => return Ok(Some(value)),
            Ok(Err(err)) => (err.message, err.stop_run),
            Err(_) => ("panicked".to_owned(), false),
        };
        self.run
            .emit(LoopEvent::HookFailed {
                hook: hook.to_owned(),
                point: point.to_owned(),
                message: message.clone(),
            })
            .await;
        if stop {
            return Err(LoopError::StoppedByHook {
                hook: hook.to_owned(),
                reason: message,
            });
        }
        Ok(None)
    }

    async fn submit_prompt(&self, mut prompt: String) -> Result<String, LoopError> {
        for hook in self.orch.services.hooks.snapshot() {
            match self
                .call_hook(hook.name(), "user_prompt_submit", || {
                    hook.user_prompt_submit(&prompt)
                })
                .await?
            {
                Some(PromptAction::Block { reason }) => {
                    return Err(LoopError::PromptBlocked {
                        hook: hook.name().to_owned(),
                        reason,
                    });
                }
                Some(PromptAction::Rewrite(text)) => prompt = text,
                _ => {}
            }
        }
        Ok(prompt)
    }

    /// Stop hooks may continue the run once with a message.
    async fn stop_hooks(&mut self, text: &str) -> Result<Option<String>, LoopError> {
        if self.continued_by_stop_hook {
            return Ok(None);
        }
        for hook in self.orch.services.hooks.snapshot() {
            if let Some(StopAction::Continue(message)) = self
                .call_hook(hook.name(), "stop", || hook.stop(text))
                .await?
            {
                self.continued_by_stop_hook = true;
                return Ok(Some(message));
            }
        }
        Ok(None)
    }

    /// Adds a message to the conversation and the session log, written behind the loop
    /// ([`Core::write_behind`]): the model's replies and the tools' results, which a run
    /// continued elsewhere can make again.
    async fn append(&self, message: Message) -> Result<(), LoopError> {
        if let Some(record) = self.record(message) {
            self.orch.write_behind(record, &self.behind).await?;
        }
        Ok(())
    }

    /// Adds a message that carries a person's words (a prompt, a queued message) and waits
    /// for the store to take it: the model is not asked about words the store could lose.
    async fn append_said(&self, message: Message) -> Result<(), LoopError> {
        if let Some(record) = self.record(message) {
            // An unreachable store does not stop the run: the record is held and written
            // when the store is back (at the latest when the run ends).
            self.orch
                .write(std::slice::from_ref(&record), OnFailure::Hold)
                .await?;
        }
        Ok(())
    }

    /// Takes the message just added (a prompt's) back out of the conversation, and its
    /// record out of the held ones; how many records are still held.
    fn withdraw_last_message(&self) -> usize {
        let mut conversation = self.orch.lock();
        Arc::make_mut(&mut conversation.messages).pop();
        if conversation.persisted
            && matches!(
                conversation.unwritten.last(),
                Some(HistoryRecord::Message { .. })
            )
        {
            conversation.unwritten.pop();
        }
        conversation.unwritten.len()
    }

    /// Adds `message` to the conversation; its record when a store keeps the session.
    fn record(&self, message: Message) -> Option<HistoryRecord> {
        // The record is a copy of the message: only made when a store will keep it.
        let record = self
            .orch
            .services
            .store
            .as_ref()
            .map(|_| HistoryRecord::Message {
                message: message.clone(),
            });
        Arc::make_mut(&mut self.orch.lock().messages).push(message);
        record
    }

    fn executor(&self) -> Executor {
        let services = &self.orch.services;
        let config = &services.config;
        let journal = Journal::of(self.orch);
        let asker = Arc::new(LoopAsker {
            run: Arc::clone(self.run),
            timeout: config.approval_timeout,
            journal: journal.clone(),
            tools: services.tools.clone(),
        });
        #[cfg(feature = "builtin")]
        let domain_askers = crate::network_ask::RunDomainAskers {
            asker: Arc::clone(&asker),
            conversation: self.orch.clone(),
        };
        let gate = LoopGate {
            permissions: services.permissions.clone(),
            asker,
            approval: config.approval,
            needs_approval: Arc::clone(&services.needs_approval),
            journal: journal.clone(),
        };
        let resources = services.resources.child();
        resources.insert(AskUserLink(Arc::clone(self.run), journal.clone()));
        resources.insert(self.budget.clone());
        #[cfg(feature = "builtin")]
        resources.insert(mux_tool::builtin::CallDomainAskers(Arc::new(domain_askers)));
        Executor::builder(services.tools.clone())
            .pre_hook(AskUserIsAllowed)
            .pre_hook(PreToolHooks {
                hooks: services.hooks.clone(),
                run: Arc::clone(self.run),
            })
            .post_hook(PostToolHooks {
                hooks: services.hooks.clone(),
                run: Arc::clone(self.run),
            })
            // Last: it records the output the model will read.
            .post_hook(journal)
            .gate(gate)
            .timeout(config.tool_timeout)
            .concurrency(config.tool_concurrency)
            .capture_content(config.capture_content)
            .resources(resources)
            .build()
    }

    fn request(&self, system: Option<String>) -> Request {
        let config = &self.orch.services.config;
        let mut request = Request::new(config.model.clone(), config.max_tokens)
            .tools(self.orch.services.tools.shared_specs());
        request.system = system;
        request.temperature = config.temperature;
        if let Some(budget) = config.thinking_budget {
            request = request.thinking(budget);
        }
        request.messages = Arc::clone(&self.orch.lock().messages);
        request.output.clone_from(&self.run.output);
        if let Some(room) = self.budget.output_room() {
            let room = u32::try_from(room.max(1)).unwrap_or(u32::MAX);
            request.max_tokens = request.max_tokens.min(room);
        }
        request
    }

    async fn system_prompt(&self) -> Option<String> {
        let mut parts: Vec<String> = self
            .orch
            .services
            .config
            .system_prompt
            .iter()
            .cloned()
            .collect();
        for provider in &self.orch.services.contexts {
            if let Some(text) = provider.provide().await {
                parts.push(text);
            }
        }
        (!parts.is_empty()).then(|| parts.join("\n\n"))
    }

    /// Streams one model call, forwarding deltas as events, and returns the whole response.
    async fn stream_turn(&mut self) -> Result<Response, Halt> {
        self.run.set_state(LoopState::Streaming).await;
        // One waiter for the whole turn, rather than one registered and dropped per event.
        let cancelled = self.run.cancel.cancelled();
        tokio::pin!(cancelled);
        // The wall-time budget, raced like cancellation: nothing of the call is kept.
        let (deadline, at_deadline) = match self.budget.deadline() {
            Some((at, limit)) => (tokio::time::Instant::from_std(at), Some(limit)),
            None => (tokio::time::Instant::now() + FAR_FUTURE, None),
        };
        let out_of_time = tokio::time::sleep_until(deadline);
        tokio::pin!(out_of_time);
        let system = tokio::select! {
            biased;
            () = &mut cancelled => return Err(LoopError::Cancelled.into()),
            system = self.system_prompt() => system,
        };
        let request = self.request(system);
        let services = &self.orch.services;
        let provider = services.client.provider().to_owned();
        let span = telemetry::chat_span(&provider, &request, services.config.capture_content);
        // Retries happen inside the client before the stream starts: each one it reports
        // becomes a `Retrying` event while the request is still being made. Boxed, so the
        // channel's first block (32 slots, made with it on every turn) is small.
        let (retries_tx, mut retries) = tokio::sync::mpsc::unbounded_channel::<Box<LoopEvent>>();
        let request = request.on_retry(OnRetry::new(move |notice| {
            let _ = retries_tx.send(Box::new(LoopEvent::Retrying {
                attempt: notice.attempt,
                delay_ms: u64::try_from(notice.delay.as_millis()).unwrap_or(u64::MAX),
                error: notice.error.to_string(),
            }));
        }));
        // Made inside the chat span, so the provider's own (debug) span is its child.
        let request_made = span
            .in_scope(|| services.client.stream(request))
            .instrument(span.clone());
        tokio::pin!(request_made);
        let mut stream = loop {
            tokio::select! {
                biased;
                () = &mut cancelled => return Err(LoopError::Cancelled.into()),
                () = &mut out_of_time, if at_deadline.is_some() => return Err(out_of(&at_deadline)),
                Some(retrying) = retries.recv() => self.run.emit(*retrying).await,
                stream = &mut request_made => break stream.map_err(|e| telemetry::chat_failed(&span, e))?,
            }
        };
        let mut acc = Accumulator::new(provider);
        let mut tool_args: HashMap<usize, (String, String, String)> = HashMap::new();
        let mut since_check = 0;
        loop {
            // The stream is polled first, so a ready event costs no poll of the waiter. The
            // waiter is polled whenever the stream waits (a network stream does after every
            // chunk), and every `CANCEL_CHECK_EVERY` events of a stream that never waits.
            since_check += 1;
            if since_check == CANCEL_CHECK_EVERY {
                since_check = 0;
                if futures::poll!(&mut cancelled).is_ready() {
                    return Err(LoopError::Cancelled.into());
                }
            }
            let next = tokio::select! {
                biased;
                next = stream.next() => next,
                () = &mut cancelled => return Err(LoopError::Cancelled.into()),
                () = &mut out_of_time, if at_deadline.is_some() => return Err(out_of(&at_deadline)),
            };
            let Some(event) = next else { break };
            let event = event.map_err(|e| telemetry::chat_failed(&span, e))?;
            acc.push(&event)
                .map_err(|e| telemetry::chat_failed(&span, e))?;
            if self.run.emitter.is_listening() {
                self.forward(event, &mut tool_args).await;
            }
        }
        let response = acc.finish().map_err(|e| telemetry::chat_failed(&span, e))?;
        telemetry::record_response(&span, &response, services.config.capture_content);
        self.account(&response.usage).await;
        self.budget
            .charge_model_call(&self.orch.services.config.model, &response.usage);
        Ok(response)
    }

    async fn forward(
        &self,
        event: StreamEvent,
        tool_args: &mut HashMap<usize, (String, String, String)>,
    ) {
        let loop_event = match event {
            StreamEvent::TextDelta { text, .. } => LoopEvent::TextDelta { text },
            StreamEvent::Fallback { from, to, error } => LoopEvent::ModelFallback {
                from,
                to,
                error: error.to_string(),
            },
            StreamEvent::ThinkingDelta { thinking, .. } => LoopEvent::ThinkingDelta { thinking },
            StreamEvent::BlockStart {
                index,
                block: mux_llm::BlockStart::ToolUse { id, name },
            } => {
                tool_args.insert(index, (id.clone(), name.clone(), String::new()));
                LoopEvent::ToolCallStarted { call_id: id, name }
            }
            StreamEvent::ToolInputDelta {
                index,
                partial_json,
            } => {
                if let Some((_, _, json)) = tool_args.get_mut(&index) {
                    json.push_str(&partial_json);
                }
                return;
            }
            StreamEvent::BlockStop { index } => {
                let Some((call_id, name, json)) = tool_args.remove(&index) else {
                    return;
                };
                let input = if json.trim().is_empty() {
                    serde_json::json!({})
                } else {
                    serde_json::from_str(&json).unwrap_or(serde_json::Value::String(json))
                };
                LoopEvent::ToolCallArguments {
                    call_id,
                    name,
                    input,
                }
            }
            _ => return,
        };
        self.run.emit(loop_event).await;
    }

    async fn account(&mut self, turn: &Usage) {
        self.usage = add(self.usage, turn);
        let total = {
            let mut conversation = self.orch.lock();
            conversation.usage = add(conversation.usage, turn);
            let context = turn.input_tokens
                + turn.cache_read_tokens
                + turn.cache_write_tokens
                + turn.output_tokens;
            conversation.reported_tokens = (context > 0).then_some(context);
            conversation.usage
        };
        self.run.emit(LoopEvent::Usage { turn: *turn, total }).await;
    }

    /// Runs the calls the budget still allows. When another model call would not be allowed,
    /// none runs; calls the budget refuses get error results, so the conversation never keeps
    /// a call without one. Returns the results and the limit that stops the run, if any.
    async fn execute_within_budget(
        &self,
        executor: &Executor,
        mut calls: Vec<ToolCall>,
    ) -> (Vec<(ToolCall, ToolOutput)>, Option<LimitReached>) {
        let (allowed, mut limit) = match self.budget.before_model_call() {
            Err(limit) => (0, Some(limit)),
            Ok(()) => self.budget.take_tool_calls(calls.len()),
        };
        let refused = calls.split_off(allowed);
        let mut results = if calls.is_empty() {
            Vec::new()
        } else {
            self.execute(executor, calls).await
        };
        if let Some(reason) = &limit {
            for call in refused {
                let output = ToolOutput::error(format!("not run: {reason}"));
                self.settle(&mut results, call, output).await;
            }
        } else if let Err(reached) = self.budget.before_model_call() {
            // The calls ran and spent what was left (wall time): stop before the next call.
            limit = Some(reached);
        }
        (results, limit)
    }

    /// Gives a call that does not go through the executor its result: the face sees it, and
    /// it joins the turn's results.
    async fn settle(
        &self,
        results: &mut Vec<(ToolCall, ToolOutput)>,
        call: ToolCall,
        output: ToolOutput,
    ) {
        self.run
            .emit(LoopEvent::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                output: output.clone(),
            })
            .await;
        results.push((call, output));
    }

    /// Runs a turn's calls in groups the parallelism allows, forwarding progress, and returns
    /// every call with the output the model reads, in call order.
    async fn execute(
        &self,
        executor: &Executor,
        calls: Vec<ToolCall>,
    ) -> Vec<(ToolCall, ToolOutput)> {
        if !self.run.emitter.is_listening() {
            // Nobody would see progress: the tools learn so (`is_connected` is false) and no
            // channel is made.
            let scope = CallScope {
                cancel: self.run.cancel.clone(),
                progress: ProgressSender::disconnected(),
                effects: Some(self.effect_scope()),
            };
            return self.run_groups(executor, calls, &scope).await;
        }
        // Boxed events: the channel's slots are made with it, for every tool step.
        let (progress_tx, mut progress_rx) = mpsc::channel::<Box<mux_tool::ProgressEvent>>(64);
        let scope = CallScope {
            cancel: self.run.cancel.clone(),
            progress: ProgressSender::boxed(progress_tx),
            effects: Some(self.effect_scope()),
        };
        let batches = async move {
            let results = self.run_groups(executor, calls, &scope).await;
            // Dropping the scope closes the progress channel, which ends the forwarding.
            drop(scope);
            results
        };
        let forward = async {
            while let Some(event) = progress_rx.recv().await {
                let event = *event;
                // Boxed: this future sits beside the tools' for as long as they run (a run
                // idles here), and most tools report no progress.
                Box::pin(self.run.emit(LoopEvent::ToolOutputDelta {
                    call_id: event.call_id,
                    update: event.update,
                }))
                .await;
            }
        };
        // Both in this task: every progress event is out before the results, with no spawn.
        let (results, ()) = tokio::join!(batches, forward);
        for (call, output) in &results {
            let event = LoopEvent::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                output: output.clone(),
            };
            self.run.emit(event).await;
        }
        results
    }

    /// The effect keys of the open turn's calls: `{session}:{turn}:{call id}`, where the turn
    /// is the place of the calls' assistant message in the conversation, so the key is the
    /// same when a run that was taken over (or resumed in another process) runs the call
    /// again. Written only for a call that asks for its key.
    fn effect_scope(&self) -> Arc<EffectScope> {
        let scope = {
            let conversation = self.orch.lock();
            let turn = conversation
                .messages
                .iter()
                .rposition(|message| message.role == Role::Assistant)
                .unwrap_or(conversation.messages.len());
            EffectScope::for_turn(Arc::clone(&self.session), turn as u64)
        };
        Arc::new(self.retries.iter().fold(scope, |scope, (call, attempt)| {
            scope.with_attempt(call.clone(), *attempt)
        }))
    }

    /// Runs the calls group after group; returns each call with its output, in call order.
    async fn run_groups(
        &self,
        executor: &Executor,
        calls: Vec<ToolCall>,
        scope: &CallScope,
    ) -> Vec<(ToolCall, ToolOutput)> {
        let mut results = Vec::with_capacity(calls.len());
        for group in self.groups(calls) {
            for outcome in executor.execute_batch(group, scope).await {
                let output = outcome.output();
                results.push((outcome.call, output));
            }
        }
        results
    }

    fn groups(&self, calls: Vec<ToolCall>) -> Vec<Vec<ToolCall>> {
        if calls.len() < 2 {
            return vec![calls];
        }
        let tools = &self.orch.services.tools;
        let read_only = |call: &ToolCall| {
            tools
                .get(&call.name)
                .is_some_and(|tool| tool.spec().annotations.read_only)
        };
        match self.orch.services.config.parallelism {
            ToolParallelism::All => vec![calls],
            ToolParallelism::Sequential => calls.into_iter().map(|call| vec![call]).collect(),
            _ => {
                let mut groups: Vec<Vec<ToolCall>> = Vec::new();
                let mut last_read_only = false;
                for call in calls {
                    let this_read_only = read_only(&call);
                    match groups.last_mut() {
                        Some(group) if this_read_only && last_read_only => group.push(call),
                        _ => groups.push(vec![call]),
                    }
                    last_read_only = this_read_only;
                }
                groups
            }
        }
    }

    /// The turns to keep when the conversation is past the compaction budget (the provider's
    /// last reported context size when there is one, an estimate otherwise); `None` when no
    /// compaction is due.
    fn compaction_due(&self) -> Option<usize> {
        let config = self.orch.services.config.compaction.as_ref()?;
        let (reported, estimate) = {
            let conversation = self.orch.lock();
            (
                conversation.reported_tokens,
                estimate_tokens(&conversation.messages),
            )
        };
        (reported.unwrap_or(estimate) > config.token_budget).then_some(config.keep_last_turns)
    }

    /// Summarizes all but the last `keep` turns; returns the token estimates before and after.
    async fn compact(&self, keep: usize) -> Result<Option<(u64, u64)>, LoopError> {
        let messages = self.orch.messages();
        let Some(split) = split_point(&messages, keep) else {
            return Ok(None);
        };
        for hook in self.orch.services.hooks.snapshot() {
            if let Some(CompactAction::Skip) = self
                .call_hook(hook.name(), "pre_compact", || hook.pre_compact(&messages))
                .await?
            {
                return Ok(None);
            }
        }
        // In a run the next turn moves on to `streaming`; `compact_now` goes back to `idle`.
        self.run.set_state(LoopState::Compacting).await;
        let services = &self.orch.services;
        let config = services.config.compaction.clone().unwrap_or_default();
        let model = config
            .model
            .unwrap_or_else(|| services.config.model.clone());
        let summary = tokio::select! {
            biased;
            () = self.run.cancel.cancelled() => return Err(LoopError::Cancelled),
            compacted = compact(services.client.as_ref(), &model, config.summary_max_tokens, &messages, split) => compacted?,
        };
        let before = estimate_tokens(&messages);
        let after = estimate_tokens(&summary);
        {
            let mut conversation = self.orch.lock();
            // Messages appended meanwhile (none during a run) would follow the compacted part.
            let seen = messages.len().min(conversation.messages.len());
            let appended = conversation.messages.get(seen..).unwrap_or_default();
            let compacted = summary.iter().chain(appended).cloned().collect();
            conversation.messages = Arc::new(compacted);
            conversation.reported_tokens = None;
        }
        self.orch
            .persist(&[HistoryRecord::Replace {
                messages: self.orch.messages(),
            }])
            .await?;
        self.run
            .emit(LoopEvent::Compacted {
                tokens_before: before,
                tokens_after: after,
            })
            .await;
        Ok(Some((before, after)))
    }
}

fn add(total: Usage, turn: &Usage) -> Usage {
    Usage {
        input_tokens: total.input_tokens + turn.input_tokens,
        output_tokens: total.output_tokens + turn.output_tokens,
        cache_read_tokens: total.cache_read_tokens + turn.cache_read_tokens,
        cache_write_tokens: total.cache_write_tokens + turn.cache_write_tokens,
        reasoning_tokens: total.reasoning_tokens + turn.reasoning_tokens,
    }
}
