//! The A2A 1.0 methods, on the tasks of the run store and the contexts of the session store:
//! a task this process runs is read from memory, any other from the run store.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use mux_orchestrator::runs::{RunRecord, RunStatus, RunStoreError, RunWriter};
use mux_orchestrator::{LoopError, LoopInput, Run};

use crate::answer;
use crate::contexts::Contexts;
use crate::rpc::shown;
use crate::rpc::{Request, RpcError};
use crate::runner;
use crate::stored::{self, Durable, Feed};
use crate::task::{Ask, Next, TaskEntry};
use crate::tasks::{self, Tasks, history_length};
use crate::wire::{
    GetTaskRequest, ListTasksRequest, Message, Part, Role, SendMessageRequest, StreamResponse,
    TaskIdRequest, TaskState,
};
use mux_http::unguessable as new_id;

/// Resolves once a new task's prompt is stored, or the session store could not write it (see
/// [`RunHandle::prompt_written`](mux_orchestrator::RunHandle::prompt_written)).
type PromptStored = std::pin::Pin<Box<dyn std::future::Future<Output = Option<bool>> + Send>>;

/// Waits until `task`'s prompt is stored (`stored`; none for an answer), so that a pause, a
/// cancel or a takeover after the acknowledgement finds it in the context's session. A prompt
/// the session store could not write is not acknowledged: the task ends failed, its loop is
/// cancelled, and the request is answered `UNAVAILABLE`.
async fn acknowledge(task: &TaskEntry, stored: Option<PromptStored>) -> Result<(), RpcError> {
    let Some(stored) = stored else {
        return Ok(());
    };
    match stored.await {
        Some(true) => Ok(()),
        Some(false) => {
            let cause = "the session store did not take the task's prompt";
            let input = task.input();
            let reply = runner::agent_message(
                task,
                vec![Part::text(format!("{cause}; send the message again"))],
            );
            task.set_status(TaskState::Failed, Some(reply));
            if let Some(input) = input {
                input.send(LoopInput::Cancel).await;
            }
            // The task's end stored first (within a bound), so the context is free for the
            // message the client sends again.
            if let Some(writer) = task.writer() {
                let _ = tokio::time::timeout(HANDOVER_WAIT, writer.done()).await;
            }
            Err(RpcError::unavailable("session", &cause))
        }
        None => {
            tracing::warn!(task = %task.id, "the task's run ended before its prompt was stored");
            Ok(())
        }
    }
}

/// How long `CancelTask` waits for the run to stop before answering with the task as it is.
const CANCEL_WAIT: Duration = Duration::from_secs(10);
/// How long an answer waits for this process to finish giving up a paused run.
const HANDOVER_WAIT: Duration = Duration::from_secs(10);
/// How often ended tasks past the retention are forgotten.
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// What a method answers.
pub(crate) enum Reply {
    /// A result, as JSON text.
    Result(String),
    /// A stream: `first` (JSON text), then the task's updates from `source`.
    Stream { source: Source, first: String },
}

/// Where a stream reads a task's updates.
pub(crate) enum Source {
    /// A task this process runs: its log in memory, from `cursor` on.
    Local { task: Arc<TaskEntry>, cursor: u64 },
    /// Any other: the run store.
    Stored(Feed),
}

impl Source {
    /// The next updates (see [`Next`]).
    pub(crate) async fn next(&mut self) -> Next {
        match self {
            Self::Local { task, cursor } => {
                let next = task.next(cursor).await;
                if matches!(next, Next::End) {
                    stored_by_now(task).await;
                }
                next
            }
            Self::Stored(feed) => feed.next().await,
        }
    }
}

/// The methods' state.
pub(crate) struct Methods {
    /// The tasks this process runs now.
    pub(crate) tasks: Arc<Tasks>,
    pub(crate) contexts: Contexts,
    pub(crate) durable: Durable,
    pub(crate) max_log: usize,
    /// How long ended tasks stay in the run store.
    pub(crate) retention: Duration,
    /// When ended tasks were last forgotten.
    pub(crate) pruned: std::sync::Mutex<Option<tokio::time::Instant>>,
}

/// The methods of A2A 0.3, named in the error a 0.3 client gets.
const LEGACY: [&str; 5] = [
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/cancel",
    "tasks/resubscribe",
];

impl Methods {
    /// Runs `request`'s method.
    pub(crate) async fn call(&self, request: &Request) -> Result<Reply, RpcError> {
        match request.method.as_str() {
            "SendMessage" => self.send(request.params()?, false).await,
            "SendStreamingMessage" => self.send(request.params()?, true).await,
            "GetTask" => self.get(request.params()?).await,
            "ListTasks" => self.list(request.params()?).await,
            "CancelTask" => self.cancel(request.params()?).await,
            "SubscribeToTask" => self.subscribe(request.params()?).await,
            "CreateTaskPushNotificationConfig"
            | "GetTaskPushNotificationConfig"
            | "ListTaskPushNotificationConfigs"
            | "DeleteTaskPushNotificationConfig" => Err(RpcError::push_not_supported(
                "this agent sends no push notifications (its card says pushNotifications: false)",
            )),
            "GetExtendedAgentCard" => Err(RpcError::no_extended_card(
                "this agent has no extended card",
            )),
            legacy if LEGACY.contains(&legacy) => Err(RpcError::method_not_found(format!(
                "`{legacy}` is an A2A 0.3 method; this server speaks A2A 1.0 (SendMessage, \
                 SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask)"
            ))),
            other => Err(RpcError::method_not_found(format!(
                "no method `{}`",
                shown(other)
            ))),
        }
    }

    async fn send(&self, request: SendMessageRequest, streaming: bool) -> Result<Reply, RpcError> {
        let Some(mut message) = request.message else {
            return Err(RpcError::invalid_params("`message` is required"));
        };
        if message.message_id.is_empty() {
            return Err(RpcError::invalid_params("`message.messageId` is required"));
        }
        if message.role != Role::User {
            return Err(RpcError::invalid_params("`message.role` must be ROLE_USER"));
        }
        let configuration = request.configuration.unwrap_or_default();
        if configuration.task_push_notification_config.is_some() {
            return Err(RpcError::push_not_supported(
                "this agent sends no push notifications; leave taskPushNotificationConfig out",
            ));
        }
        let history = history_length(configuration.history_length)?;
        let text = prompt_text(&message)?;

        let (task, stored) = if message.task_id.is_empty() {
            let (task, stored) = self.start(&mut message, &text).await?;
            (task, Some(stored))
        } else {
            (self.answer(message, &text).await?, None)
        };
        // The reply acknowledges a new task's prompt: it goes once the prompt is stored (the
        // task as it was when it was submitted, when the reply is at once).
        if streaming {
            let (cursor, snapshot) = task.position_and_snapshot(history);
            acknowledge(&task, stored).await?;
            return Ok(Reply::Stream {
                source: Source::Local { task, cursor },
                first: json_text(&StreamResponse::Task(snapshot)),
            });
        }
        let snapshot = if configuration.return_immediately {
            let snapshot = task.snapshot(history, true);
            acknowledge(&task, stored).await?;
            snapshot
        } else {
            acknowledge(&task, stored).await?;
            task.settled().await;
            stored_by_now(&task).await;
            task.snapshot(history, true)
        };
        Ok(Reply::Result(json_text(&StreamResponse::Task(snapshot))))
    }

    /// A new task on the message's context (a new one when it names none), and what resolves
    /// once its prompt is stored.
    async fn start(
        &self,
        message: &mut Message,
        text: &str,
    ) -> Result<(Arc<TaskEntry>, PromptStored), RpcError> {
        let wanted = (!message.context_id.is_empty()).then_some(message.context_id.as_str());
        if let Some(id) = wanted {
            Contexts::check(id)?;
        }
        self.tasks.has_room()?;
        let orchestrator = self.contexts.open(wanted).await?;
        let context_id = orchestrator.session().id;
        message.context_id = context_id.clone();
        message.task_id = new_id();
        let run_id = stored::run_id(&message.task_id);
        let durable = &self.durable;
        let held = match durable.owner.begin(&context_id, &run_id).await {
            Ok(held) => held,
            Err(RunStoreError::Busy { run_id: busy, .. }) => {
                return Err(RpcError::unsupported(format!(
                    "context `{context_id}` has task `{}` in progress; answer it \
                     (message.taskId) or cancel it first",
                    stored::task_id(&busy).unwrap_or(&busy)
                )));
            }
            Err(err) => return Err(stored::store_error(err, &message.task_id)),
        };
        let task = Arc::new(TaskEntry::new(
            message.task_id.clone(),
            context_id,
            message.clone(),
            self.max_log,
        ));
        let writer = durable.writer(&held);
        task.set_writer(writer.clone(), true);
        let run = orchestrator.run(text);
        let stored: PromptStored = match &run {
            Ok(run) => Box::pin(run.handle.prompt_written()),
            Err(_) => Box::pin(std::future::ready(None)),
        };
        self.follow(&task, run, writer, "start")?;
        Ok((task, stored))
    }

    /// Follows `run` (started for `task` under `writer`) in the background; a run that did
    /// not start fails the task.
    fn follow(
        &self,
        task: &Arc<TaskEntry>,
        run: Result<Run, LoopError>,
        writer: RunWriter,
        what: &str,
    ) -> Result<(), RpcError> {
        match run {
            Ok(run) => {
                task.set_input(run.input.clone());
                self.tasks.insert(Arc::clone(task));
                let tasks = Arc::clone(&self.tasks);
                let task = Arc::clone(task);
                tokio::spawn(async move {
                    runner::follow(Arc::clone(&task), run, writer.clone()).await;
                    // The run ended or paused here; should its end not be stored in time,
                    // the task ends failed all the same.
                    let failed = writer.failed();
                    tokio::select! {
                        () = writer.done() => {}
                        () = failed.cancelled() => {
                            runner::store_failed(&task, &writer);
                            writer.done().await;
                        }
                    }
                    tasks.remove(&task.id);
                });
                Ok(())
            }
            Err(e) => {
                let reply = runner::agent_message(
                    task,
                    vec![Part::text(crate::rpc::client_text(format!(
                        "The run did not {what}: {e}"
                    )))],
                );
                task.set_status(TaskState::Failed, Some(reply));
                writer.finish(RunStatus::Failed);
                Err(RpcError::internal(format!(
                    "the run of task `{}` did not {what}: {e}",
                    task.id
                )))
            }
        }
    }

    /// The message answers what the task `message.taskId` waits for.
    async fn answer(&self, message: Message, text: &str) -> Result<Arc<TaskEntry>, RpcError> {
        if let Some(task) = self.tasks.get(&message.task_id) {
            if task.input().is_some() {
                return self.answer_live(task, message, text).await;
            }
            // Paused here a moment ago: let the run store have it first.
            if let Some(writer) = task.writer() {
                let _ = tokio::time::timeout(HANDOVER_WAIT, writer.done()).await;
            }
        }
        self.answer_stored(message, text).await
    }

    /// Checks that `message` may answer `task`, and reads the answer to its first ask.
    fn read_answer(
        task: &TaskEntry,
        message: &Message,
        text: &str,
    ) -> Result<(Ask, LoopInput), RpcError> {
        if !message.context_id.is_empty() && message.context_id != task.context_id {
            return Err(RpcError::invalid_params(format!(
                "contextId `{}` is not the context of task `{}`",
                shown(&message.context_id),
                task.id
            )));
        }
        let state = task.state();
        if state.is_terminal() {
            return Err(RpcError::unsupported(format!(
                "task `{}` has ended ({state:?}); send a new message without taskId to start another",
                task.id
            )));
        }
        let (Some(ask), TaskState::InputRequired) = (task.first_ask(), state) else {
            return Err(RpcError::unsupported(format!(
                "task `{}` is {state:?}, not waiting for input; wait for it, or cancel it",
                task.id
            )));
        };
        let input = answer::read(&ask, message, text)?;
        Ok((ask, input))
    }

    /// An answer to a task whose loop waits in this process.
    async fn answer_live(
        &self,
        task: Arc<TaskEntry>,
        mut message: Message,
        text: &str,
    ) -> Result<Arc<TaskEntry>, RpcError> {
        let (_, input) = Self::read_answer(&task, &message, text)?;
        let Some(sender) = task.input() else {
            return Err(RpcError::internal(format!(
                "task `{}` has no run to answer",
                task.id
            )));
        };
        message.context_id = task.context_id.clone();
        task.record(message);
        let call_id = match &input {
            LoopInput::ToolApproval { call_id, .. } | LoopInput::UserResponse { call_id, .. } => {
                call_id.clone()
            }
            _ => String::new(),
        };
        task.remove_ask(&call_id);
        runner::resume(&task);
        if !sender.send(input).await {
            return Err(RpcError::internal(format!(
                "the run of task `{}` has ended",
                task.id
            )));
        }
        Ok(task)
    }

    /// An answer to a task paused in the run store (here or on any process, before a
    /// restart or not): claims its run and rebuilds the loop from the session.
    async fn answer_stored(
        &self,
        mut message: Message,
        text: &str,
    ) -> Result<Arc<TaskEntry>, RpcError> {
        let task_id = message.task_id.clone();
        let (record, task) = self.durable.load(&task_id, self.max_log).await?;
        let (_, input) = Self::read_answer(&task, &message, text)?;
        // An approval answers the rebuilt loop's gate at once; a question's answer waits for
        // the rebuilt loop to ask it again.
        let (answers, question) = match input {
            LoopInput::ToolApproval { call_id, answer } => (vec![(call_id, answer)], None),
            LoopInput::UserResponse { call_id, text } => (Vec::new(), Some((call_id, text))),
            _ => {
                return Err(RpcError::internal(format!(
                    "task `{task_id}`'s answer could not be read"
                )));
            }
        };
        self.tasks.has_room()?;
        let run_id = stored::run_id(&task_id);
        let durable = &self.durable;
        let held = match durable.owner.claim(&run_id).await {
            Ok(held) => held,
            Err(RunStoreError::Held { .. }) => {
                return Err(RpcError::unsupported(format!(
                    "task `{task_id}` is not waiting here: another request answered it, or the \
                     process that asked holds it (send the answer there, or wait; SubscribeToTask \
                     follows it)"
                )));
            }
            Err(err) => return Err(stored::store_error(err, &task_id)),
        };
        let writer = durable.writer(&held);
        let orchestrator = match self.contexts.open(Some(&record.session_id)).await {
            Ok(orchestrator) => orchestrator,
            Err(err) => {
                // Nothing was written: the task still waits for this answer.
                give_back(&writer).await;
                return Err(err);
            }
        };
        let task = Arc::new(task);
        task.set_writer(writer.clone(), false);
        message.context_id = task.context_id.clone();
        task.record(message);
        // The rebuilt loop asks again what is still open.
        task.clear_asks();
        runner::resume(&task);
        if let Some((call_id, text)) = question {
            task.prefill(call_id, text);
        }
        let run = orchestrator.resume_run(answers);
        self.follow(&task, run, writer, "resume")?;
        Ok(task)
    }

    async fn get(&self, request: GetTaskRequest) -> Result<Reply, RpcError> {
        let id = required_id(&request.id)?;
        let history = history_length(request.history_length)?;
        let task = match self.tasks.get(id) {
            Some(task) => task,
            None => Arc::new(self.durable.load(id, self.max_log).await?.1),
        };
        Ok(Reply::Result(json_text(&task.snapshot(history, true))))
    }

    async fn list(&self, request: ListTasksRequest) -> Result<Reply, RpcError> {
        let page = tasks::list(&self.durable, &self.tasks, &request).await?;
        Ok(Reply::Result(json_text(&page)))
    }

    async fn cancel(&self, request: TaskIdRequest) -> Result<Reply, RpcError> {
        let id = required_id(&request.id)?;
        let not_cancelable = |state: TaskState| {
            RpcError::task_not_cancelable(format!("task `{id}` has ended ({state:?})"))
        };
        if let Some(task) = self.tasks.get(id) {
            if let Some(input) = task.input() {
                let state = task.state();
                if state.is_terminal() {
                    return Err(not_cancelable(state));
                }
                input.send(LoopInput::Cancel).await;
                let _ = tokio::time::timeout(CANCEL_WAIT, task.ended()).await;
                return match task.state() {
                    state @ (TaskState::Completed | TaskState::Failed | TaskState::Rejected) => {
                        Err(not_cancelable(state))
                    }
                    _ => Ok(Reply::Result(json_text(&task.snapshot(None, true)))),
                };
            }
            if let Some(writer) = task.writer() {
                let _ = tokio::time::timeout(HANDOVER_WAIT, writer.done()).await;
            }
        }
        let durable = &self.durable;
        let run_id = stored::run_id(id);
        let record = durable.run(id).await?;
        match record.status {
            RunStatus::Running => {
                durable
                    .owner
                    .store()
                    .request_cancel(&run_id)
                    .await
                    .map_err(|e| stored::store_error(e, id))?;
                self.wait_stored_end(id, &run_id).await;
            }
            RunStatus::Paused => {
                match durable.owner.claim(&run_id).await {
                    Ok(held) => {
                        let (_, task) = durable.load(id, self.max_log).await?;
                        // The paused calls get their results before the task says it was
                        // cancelled. Should the store fail, the context's next task leaves
                        // them behind just the same.
                        if let Err(err) = self.contexts.settle_cancelled(&record.session_id).await {
                            tracing::warn!(
                                task = id,
                                "settling the open calls of a cancelled task: {err}"
                            );
                        }
                        let writer = durable.writer(&held);
                        task.set_writer(writer.clone(), false);
                        task.set_status(TaskState::Canceled, None);
                        writer.finish(RunStatus::Cancelled);
                        let _ = tokio::time::timeout(CANCEL_WAIT, writer.done()).await;
                    }
                    // Answered or cancelled meanwhile: the task says which.
                    Err(RunStoreError::Held { .. }) => {
                        self.wait_stored_end(id, &run_id).await;
                    }
                    Err(err) => return Err(stored::store_error(err, id)),
                }
            }
            RunStatus::Finished | RunStatus::Failed | RunStatus::Cancelled => {}
        }
        let (_, task) = durable.load(id, self.max_log).await?;
        match task.state() {
            state if !record.status.is_active() => Err(not_cancelable(state)),
            state @ (TaskState::Completed | TaskState::Failed | TaskState::Rejected) => {
                Err(not_cancelable(state))
            }
            _ => Ok(Reply::Result(json_text(&task.snapshot(None, true)))),
        }
    }

    /// Waits (up to [`CANCEL_WAIT`]) until the stored task ended.
    async fn wait_stored_end(&self, task_id: &str, run_id: &str) {
        let store = self.durable.owner.store();
        let _ = tokio::time::timeout(CANCEL_WAIT, async {
            loop {
                match store.get(run_id).await {
                    Ok(record) if !record.status.is_active() => return,
                    Ok(_) => {}
                    Err(err) => {
                        tracing::debug!(task = task_id, "waiting for a cancel: {err}");
                        return;
                    }
                }
                store.changed(run_id, Duration::from_millis(200)).await;
            }
        })
        .await;
    }

    async fn subscribe(&self, request: TaskIdRequest) -> Result<Reply, RpcError> {
        let id = required_id(&request.id)?;
        let ended = |task: &TaskEntry| {
            let state = task.state();
            state.is_terminal().then(|| {
                RpcError::unsupported(format!(
                    "task `{}` has ended ({state:?}); read it with GetTask",
                    task.id
                ))
            })
        };
        if let Some(task) = self.tasks.get(id)
            && task.input().is_some()
        {
            if let Some(err) = ended(&task) {
                return Err(err);
            }
            let (cursor, snapshot) = task.position_and_snapshot(None);
            return Ok(Reply::Stream {
                source: Source::Local { task, cursor },
                first: json_text(&StreamResponse::Task(snapshot)),
            });
        }
        let (record, task) = self.durable.load(id, self.max_log).await?;
        if let Some(err) = ended(&task) {
            return Err(err);
        }
        let feed = Feed::new(
            std::sync::Arc::clone(self.durable.owner.store()),
            stored::run_id(id),
            record.last_seq,
            task.state(),
        );
        Ok(Reply::Stream {
            source: Source::Stored(feed),
            first: json_text(&StreamResponse::Task(task.snapshot(None, true))),
        })
    }

    /// Forgets tasks that ended more than the retention ago (at most once a minute).
    pub(crate) async fn prune(&self) {
        {
            let mut pruned = self.pruned.lock().unwrap_or_else(PoisonError::into_inner);
            if pruned.is_some_and(|at| at.elapsed() < PRUNE_EVERY) {
                return;
            }
            *pruned = Some(tokio::time::Instant::now());
        }
        if let Err(err) = self
            .durable
            .owner
            .store()
            .forget_ended(self.retention)
            .await
        {
            tracing::debug!("forgetting ended tasks: {err}");
        }
    }

    /// Continues `record`, a task the run owner took over from a process that stopped: the
    /// loop resumes at the session's last step.
    pub(crate) async fn continue_taken_run(&self, record: RunRecord) {
        let Some(task_id) = stored::task_id(&record.run_id) else {
            return;
        };
        let writer = self.durable.writer(&record);
        let task = match self.durable.load(task_id, self.max_log).await {
            Ok((_, task)) => Arc::new(task),
            Err(err) => {
                tracing::warn!(
                    task = task_id,
                    "a task to take over cannot be read: {err:?}"
                );
                writer.finish(RunStatus::Failed);
                return;
            }
        };
        task.set_writer(writer.clone(), false);
        let state = task.state();
        if state.is_terminal() {
            // Its end was stored; only the status was not.
            writer.finish(match state {
                TaskState::Completed => RunStatus::Finished,
                TaskState::Canceled => RunStatus::Cancelled,
                _ => RunStatus::Failed,
            });
            return;
        }
        task.clear_asks();
        let line = "The process running this task stopped; this one continues it.";
        task.set_status(
            TaskState::Working,
            Some(runner::agent_message(&task, vec![Part::text(line)])),
        );
        let fail = |text: String| {
            let reply = runner::agent_message(&task, vec![Part::text(text)]);
            task.set_status(TaskState::Failed, Some(reply));
            writer.finish(RunStatus::Failed);
        };
        let orchestrator = match self.contexts.open(Some(&record.session_id)).await {
            Ok(orchestrator) => orchestrator,
            Err(err) => {
                return fail(format!(
                    "The process running this task stopped, and its conversation cannot be \
                     read to continue it: {}",
                    err.message
                ));
            }
        };
        // Pending approvals are asked again; a call that was running runs again only when
        // its tool is read-only or idempotent.
        match orchestrator.resume_run(Vec::new()) {
            Err(LoopError::NothingToResume) => fail(
                "The process running this task stopped before its run reached the \
                 conversation; send the message again."
                    .to_owned(),
            ),
            run => {
                if let Err(err) = self.follow(&task, run, writer.clone(), "continue") {
                    tracing::warn!(task = task_id, "taking a task over failed: {}", err.message);
                }
            }
        }
    }
}

/// Waits (a while) until the store has a task that paused or ended here, so that what the
/// client is told is what every process finds.
/// A writer that gave up is not waited for: the store did not take the task's changes, and
/// the task says so (see [`runner::store_failed`]).
pub(crate) async fn stored_by_now(task: &TaskEntry) {
    if task.input().is_none()
        && let Some(writer) = task.writer()
    {
        let failed = writer.failed();
        let _ = tokio::time::timeout(HANDOVER_WAIT, async {
            tokio::select! {
                () = writer.done() => {}
                () = failed.cancelled() => {}
            }
        })
        .await;
    }
}

/// Gives a claimed run back (paused) when it could not be resumed.
async fn give_back(writer: &RunWriter) {
    writer.finish(RunStatus::Paused);
    let _ = tokio::time::timeout(HANDOVER_WAIT, writer.done()).await;
}

fn required_id(id: &str) -> Result<&str, RpcError> {
    if id.is_empty() {
        Err(RpcError::invalid_params("`id` is required"))
    } else {
        Ok(id)
    }
}

/// The prompt: the text parts, and data parts as JSON, one per line. Files are refused.
fn prompt_text(message: &Message) -> Result<String, RpcError> {
    let mut lines = Vec::with_capacity(message.parts.len());
    for part in &message.parts {
        if let Some(text) = &part.text {
            lines.push(text.clone());
        } else if let Some(data) = &part.data {
            lines.push(data.to_string());
        } else {
            let what = if part.raw.is_some() {
                "raw bytes"
            } else {
                "a file URL"
            };
            return Err(RpcError::content_type(format!(
                "this agent reads text and data parts, not {what}"
            )));
        }
    }
    if lines.is_empty() {
        return Err(RpcError::invalid_params("the message has no parts"));
    }
    Ok(lines.join("\n"))
}

pub(crate) fn json_text(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "{}".into())
}
