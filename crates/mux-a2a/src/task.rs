//! One task: its state, history and artifacts, what it waits for, and the log of updates
//! its streams read. Every change is applied and appended to the log under one lock, so a
//! snapshot and a log position always agree; a task this process runs also sends each change
//! to its run's [`RunWriter`] as a [`Record`], from which any process rebuilds it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use mux_orchestrator::InputSender;
use mux_orchestrator::runs::{EventJson, RunWriter, StoredEvent};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;

use crate::time;
use crate::wire::{
    Artifact, Message, StreamResponse, Task, TaskArtifactUpdateEvent, TaskState, TaskStatus,
    TaskStatusUpdateEvent,
};

/// What a paused task waits for; the client's next message answers the oldest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase")]
pub(crate) enum Ask {
    /// A tool call that needs approval.
    Approval {
        call_id: String,
        tool: String,
        input: Value,
        reason: String,
    },
    /// A question from the `ask_user` tool.
    Question { call_id: String, question: String },
}

/// One stored change of a task: the task's state and status time after it (so the last
/// record of a run says where its task is), and the change.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Record {
    pub(crate) state: TaskState,
    pub(crate) at: i64,
    #[serde(flatten)]
    pub(crate) change: Change,
}

/// What changed.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Change {
    /// The whole task (its first record).
    Task(Task),
    /// An update its streams sent.
    Update(StreamResponse),
    /// A message added to its history.
    Message(Message),
    /// What it waits for now.
    Asks(Vec<Ask>),
}

impl Record {
    /// The record a stored event holds, if it is one.
    pub(crate) fn of(event: &StoredEvent) -> Option<Self> {
        serde_json::from_value(event.event.clone()).ok()
    }
}

/// A logged update, serialized once for every stream that sends it.
pub(crate) type Logged = Arc<str>;

struct Inner {
    status: TaskStatus,
    updated_ms: i64,
    history: Vec<Message>,
    artifacts: Vec<Artifact>,
    log: VecDeque<Logged>,
    /// The log position of `log[0]`.
    base: u64,
    asks: VecDeque<Ask>,
    input: Option<InputSender>,
    /// An answer to a question given while the loop was stopped, for the rebuilt loop's
    /// call of that id.
    prefill: Option<(String, String)>,
    /// Where this process stores the task's changes, while it runs it.
    writer: Option<RunWriter>,
}

impl Inner {
    fn empty(first: Option<Message>) -> Self {
        let now = time::now_ms();
        Self {
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                timestamp: Some(time::format(now)),
            },
            updated_ms: now,
            history: first.into_iter().collect(),
            artifacts: Vec::new(),
            log: VecDeque::new(),
            base: 0,
            asks: VecDeque::new(),
            input: None,
            prefill: None,
            writer: None,
        }
    }

    /// Sends `change` to the writer, if the task has one.
    fn store(&self, change: impl FnOnce() -> Change) {
        if let Some(writer) = &self.writer {
            let record = Record {
                state: self.status.state,
                at: self.updated_ms,
                change: change(),
            };
            // Serialized once, as the store keeps it.
            match EventJson::of(&record) {
                Ok(json) => writer.push(json),
                Err(err) => tracing::error!(%err, "a task record does not serialize"),
            }
        }
    }

    /// Applies a stored record.
    fn apply(&mut self, record: Record) {
        match record.change {
            Change::Task(task) => {
                self.status = task.status;
                self.history = task.history;
                self.artifacts = task.artifacts;
            }
            Change::Update(StreamResponse::StatusUpdate(update)) => self.status = update.status,
            Change::Update(StreamResponse::ArtifactUpdate(update)) => {
                apply_artifact(&mut self.artifacts, update.artifact, update.append);
            }
            Change::Update(_) => {}
            Change::Message(message) => self.history.push(message),
            Change::Asks(asks) => self.asks = asks.into(),
        }
        self.status.state = record.state;
        self.updated_ms = record.at;
        if record.state.is_terminal() {
            self.asks.clear();
        }
    }

    fn store_asks(&self) {
        self.store(|| Change::Asks(self.asks.iter().cloned().collect()));
    }
}

fn apply_artifact(artifacts: &mut Vec<Artifact>, artifact: Artifact, append: bool) {
    match artifacts
        .iter_mut()
        .find(|a| a.artifact_id == artifact.artifact_id)
    {
        Some(existing) if append => existing.parts.extend(artifact.parts),
        Some(existing) => *existing = artifact,
        None => artifacts.push(artifact),
    }
}

/// A task and its log.
pub(crate) struct TaskEntry {
    pub(crate) id: String,
    pub(crate) context_id: String,
    inner: Mutex<Inner>,
    /// Bumped at every change; streams wait on it.
    version: watch::Sender<u64>,
    max_log: usize,
}

impl std::fmt::Debug for TaskEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskEntry")
            .field("id", &self.id)
            .field("context_id", &self.context_id)
            .finish_non_exhaustive()
    }
}

/// What a stream reads next.
pub(crate) enum Next {
    /// Updates in order.
    Updates(Vec<Logged>),
    /// The stream fell behind the log's window: the whole task, which covers what it missed.
    Snapshot(Box<Task>),
    /// The task ended or paused, and the stream has sent everything before that.
    End,
}

impl TaskEntry {
    /// A submitted task with the client's first message.
    pub(crate) fn new(id: String, context_id: String, first: Message, max_log: usize) -> Self {
        Self {
            id,
            context_id,
            inner: Mutex::new(Inner::empty(Some(first))),
            version: watch::channel(0).0,
            max_log: max_log.max(1),
        }
    }

    /// The task its stored records make.
    pub(crate) fn restore(
        id: String,
        context_id: String,
        records: impl IntoIterator<Item = Record>,
        max_log: usize,
    ) -> Self {
        let mut inner = Inner::empty(None);
        for record in records {
            inner.apply(record);
        }
        Self {
            id,
            context_id,
            inner: Mutex::new(inner),
            version: watch::channel(0).0,
            max_log: max_log.max(1),
        }
    }

    /// Stores the task's changes through `writer` from now on; with `whole`, the task as it
    /// is first (a new task's first record).
    pub(crate) fn set_writer(&self, writer: RunWriter, whole: bool) {
        let mut inner = self.lock();
        inner.writer = Some(writer);
        if whole {
            inner.store(|| {
                Change::Task(snapshot_of(&self.id, &self.context_id, &inner, None, true))
            });
        }
    }

    /// The whole task as one record, for a writer that gave up the task's changes: the
    /// records it dropped are covered by it (see [`crate::runner::store_failed`]).
    pub(crate) fn whole_record(&self) -> Option<EventJson> {
        let inner = self.lock();
        let record = Record {
            state: inner.status.state,
            at: inner.updated_ms,
            change: Change::Task(snapshot_of(&self.id, &self.context_id, &inner, None, true)),
        };
        EventJson::of(&record)
            .inspect_err(|err| tracing::error!(%err, "a task record does not serialize"))
            .ok()
    }

    /// The writer of the task, while this process runs it.
    pub(crate) fn writer(&self) -> Option<RunWriter> {
        self.lock().writer.clone()
    }

    /// Forgets what the task waited for (a rebuilt loop asks again).
    pub(crate) fn clear_asks(&self) {
        let mut inner = self.lock();
        if !inner.asks.is_empty() {
            inner.asks.clear();
            inner.store_asks();
        }
    }

    /// The open asks.
    pub(crate) fn asks(&self) -> Vec<Ask> {
        self.lock().asks.iter().cloned().collect()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current state.
    pub(crate) fn state(&self) -> TaskState {
        self.lock().status.state
    }

    /// When the status last changed, in milliseconds since the epoch.
    pub(crate) fn updated_ms(&self) -> i64 {
        self.lock().updated_ms
    }

    /// The task as the client sees it, with at most `history` messages (the newest) and the
    /// artifacts when `artifacts`.
    pub(crate) fn snapshot(&self, history: Option<usize>, artifacts: bool) -> Task {
        snapshot_of(&self.id, &self.context_id, &self.lock(), history, artifacts)
    }

    /// The log position after the last update, and the task as of it.
    pub(crate) fn position_and_snapshot(&self, history: Option<usize>) -> (u64, Task) {
        let inner = self.lock();
        let end = inner.base + inner.log.len() as u64;
        let task = snapshot_of(&self.id, &self.context_id, &inner, history, true);
        (end, task)
    }

    /// Sets the loop's input sender (when the run starts).
    pub(crate) fn set_input(&self, input: InputSender) {
        self.lock().input = Some(input);
    }

    /// Forgets the loop's input sender (its loop was stopped where it waited).
    pub(crate) fn release_input(&self) {
        self.lock().input = None;
    }

    /// Keeps `text`, the answer to the question `call_id`, for the rebuilt loop that will ask
    /// it again.
    pub(crate) fn prefill(&self, call_id: String, text: String) {
        self.lock().prefill = Some((call_id, text));
    }

    /// The answer kept for the question `call_id`, if any.
    pub(crate) fn take_prefill(&self, call_id: &str) -> Option<String> {
        let mut inner = self.lock();
        match inner.prefill.take() {
            Some((id, text)) if id == call_id => Some(text),
            other => {
                inner.prefill = other;
                None
            }
        }
    }

    /// The loop's input sender.
    pub(crate) fn input(&self) -> Option<InputSender> {
        self.lock().input.clone()
    }

    /// Adds a message to the history (not an update of its own).
    pub(crate) fn record(&self, message: Message) {
        let mut inner = self.lock();
        inner.store(|| Change::Message(message.clone()));
        inner.history.push(message);
    }

    /// The oldest open ask.
    pub(crate) fn first_ask(&self) -> Option<Ask> {
        self.lock().asks.front().cloned()
    }

    /// Adds an ask; returns whether it is the only one (so the task pauses on it now).
    pub(crate) fn push_ask(&self, ask: Ask) -> bool {
        let mut inner = self.lock();
        inner.asks.push_back(ask);
        inner.store_asks();
        inner.asks.len() == 1
    }

    /// Removes the ask of `call_id`; returns whether it was there.
    pub(crate) fn remove_ask(&self, call_id: &str) -> bool {
        let mut inner = self.lock();
        let before = inner.asks.len();
        inner.asks.retain(|ask| match ask {
            Ask::Approval { call_id: id, .. } | Ask::Question { call_id: id, .. } => id != call_id,
        });
        let removed = inner.asks.len() != before;
        if removed {
            inner.store_asks();
        }
        removed
    }

    /// Whether any ask is open.
    pub(crate) fn has_asks(&self) -> bool {
        !self.lock().asks.is_empty()
    }

    /// Sets the status and logs it. A terminal task's status never changes again.
    pub(crate) fn set_status(&self, state: TaskState, message: Option<Message>) -> bool {
        let mut inner = self.lock();
        if inner.status.state.is_terminal() {
            return false;
        }
        let now = time::now_ms();
        let status = TaskStatus {
            state,
            message,
            timestamp: Some(time::format(now)),
        };
        inner.status = status.clone();
        inner.updated_ms = now;
        if state.is_terminal() {
            inner.asks.clear();
            inner.input = None;
        }
        let update = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: self.id.clone(),
            context_id: self.context_id.clone(),
            status,
        });
        self.append(&mut inner, &update);
        drop(inner);
        self.bump();
        true
    }

    /// Applies an artifact chunk (appended to, or replacing, the artifact of its id) and
    /// logs it.
    pub(crate) fn set_artifact(&self, artifact: Artifact, append: bool, last_chunk: bool) {
        let mut inner = self.lock();
        if inner.status.state.is_terminal() {
            return;
        }
        apply_artifact(&mut inner.artifacts, artifact.clone(), append);
        let update = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            task_id: self.id.clone(),
            context_id: self.context_id.clone(),
            artifact,
            append,
            last_chunk,
        });
        self.append(&mut inner, &update);
        drop(inner);
        self.bump();
    }

    fn append(&self, inner: &mut Inner, update: &StreamResponse) {
        inner.store(|| Change::Update(update.clone()));
        let text = serde_json::to_string(update).unwrap_or_else(|_| "{}".into());
        inner.log.push_back(text.into());
        while inner.log.len() > self.max_log {
            inner.log.pop_front();
            inner.base += 1;
        }
    }

    fn bump(&self) {
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// What a stream at `cursor` sends next, waiting for it; moves the cursor.
    pub(crate) async fn next(&self, cursor: &mut u64) -> Next {
        let mut changes = self.version.subscribe();
        loop {
            {
                let inner = self.lock();
                let end = inner.base + inner.log.len() as u64;
                if *cursor < inner.base {
                    *cursor = end;
                    let task = snapshot_of(&self.id, &self.context_id, &inner, None, true);
                    return Next::Snapshot(Box::new(task));
                }
                if *cursor < end {
                    let from = usize::try_from(*cursor - inner.base).unwrap_or(usize::MAX);
                    let updates: Vec<Logged> = inner.log.iter().skip(from).cloned().collect();
                    *cursor = end;
                    return Next::Updates(updates);
                }
                let state = inner.status.state;
                if state.is_terminal() || state.is_interrupted() {
                    return Next::End;
                }
                changes.mark_unchanged();
            }
            if changes.changed().await.is_err() {
                return Next::End;
            }
        }
    }

    /// Waits until the task ends or pauses.
    pub(crate) async fn settled(&self) {
        let mut changes = self.version.subscribe();
        loop {
            let state = self.state();
            if state.is_terminal() || state.is_interrupted() {
                return;
            }
            changes.mark_unchanged();
            let state = self.state();
            if state.is_terminal() || state.is_interrupted() {
                return;
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    }

    /// Waits until the task ends.
    pub(crate) async fn ended(&self) {
        let mut changes = self.version.subscribe();
        loop {
            changes.mark_unchanged();
            if self.state().is_terminal() {
                return;
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    }
}

fn snapshot_of(
    id: &str,
    context_id: &str,
    inner: &Inner,
    history: Option<usize>,
    artifacts: bool,
) -> Task {
    let history = match history {
        None => inner.history.clone(),
        Some(n) => inner.history[inner.history.len().saturating_sub(n)..].to_vec(),
    };
    Task {
        id: id.to_owned(),
        context_id: context_id.to_owned(),
        status: inner.status.clone(),
        artifacts: if artifacts {
            inner.artifacts.clone()
        } else {
            Vec::new()
        },
        history,
        metadata: None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;
    use crate::wire::{Part, Role};

    fn first() -> Message {
        Message {
            message_id: "m".into(),
            context_id: "c".into(),
            task_id: "t".into(),
            role: Role::User,
            parts: vec![Part::text("hi")],
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    fn chunk(text: &str) -> Artifact {
        Artifact {
            artifact_id: "a".into(),
            name: None,
            description: None,
            parts: vec![Part::text(text)],
            metadata: None,
        }
    }

    #[tokio::test]
    async fn a_stream_reads_every_update_then_ends_when_the_task_does() {
        let task = TaskEntry::new("t".into(), "c".into(), first(), 100);
        let (mut cursor, snapshot) = task.position_and_snapshot(None);
        assert_eq!(snapshot.status.state, TaskState::Submitted);
        task.set_status(TaskState::Working, None);
        task.set_artifact(chunk("Hel"), false, false);
        task.set_artifact(chunk("lo"), true, false);
        let Next::Updates(updates) = task.next(&mut cursor).await else {
            panic!("updates expected")
        };
        assert_eq!(updates.len(), 3);
        assert!(updates[2].contains("\"append\":true"));
        task.set_status(TaskState::Completed, None);
        assert!(!task.set_status(TaskState::Working, None), "terminal stays");
        assert!(matches!(task.next(&mut cursor).await, Next::Updates(u) if u.len() == 1));
        assert!(matches!(task.next(&mut cursor).await, Next::End));
        let done = task.snapshot(Some(0), true);
        assert_eq!(done.artifacts[0].parts.len(), 2);
        assert!(done.history.is_empty());
    }

    #[tokio::test]
    async fn a_stream_behind_the_window_gets_the_whole_task() {
        let task = TaskEntry::new("t".into(), "c".into(), first(), 2);
        let mut cursor = 0;
        for text in ["a", "b", "c", "d"] {
            task.set_artifact(chunk(text), true, false);
        }
        let Next::Snapshot(snapshot) = task.next(&mut cursor).await else {
            panic!("a snapshot expected")
        };
        assert_eq!(snapshot.artifacts[0].parts.len(), 4);
        assert_eq!(cursor, 4);
    }

    #[tokio::test]
    async fn the_stored_records_rebuild_the_task_as_it_was() {
        use mux_orchestrator::runs::{MemoryRunStore, RunStatus, RunStore};
        use std::time::Duration;
        use tokio_util::sync::CancellationToken;

        let store: Arc<dyn RunStore> = Arc::new(MemoryRunStore::new());
        let lease = Duration::from_secs(60);
        store.begin("c", "a2a.t", "me", lease).await.unwrap();
        let writer = RunWriter::start(
            Arc::clone(&store),
            "a2a.t",
            0,
            "me",
            lease,
            CancellationToken::new(),
        );
        let task = TaskEntry::new("t".into(), "c".into(), first(), 100);
        task.set_writer(writer.clone(), true);
        task.set_status(TaskState::Working, None);
        task.set_artifact(chunk("Hel"), false, false);
        task.set_artifact(chunk("lo"), true, false);
        let ask = Ask::Approval {
            call_id: "c1".into(),
            tool: "bash".into(),
            input: serde_json::json!({"command": "ls"}),
            reason: "asks".into(),
        };
        assert!(task.push_ask(ask.clone()));
        task.set_status(TaskState::InputRequired, None);
        writer.finish(RunStatus::Paused);
        writer.done().await;

        let events = store.events_after("a2a.t", 0, 100).await.unwrap();
        let records: Vec<Record> = events.iter().filter_map(Record::of).collect();
        assert_eq!(records.len(), events.len(), "every event is a record");
        let rebuilt = TaskEntry::restore("t".into(), "c".into(), records, 100);
        assert_eq!(rebuilt.snapshot(None, true), task.snapshot(None, true));
        assert_eq!(rebuilt.updated_ms(), task.updated_ms());
        assert_eq!(rebuilt.asks(), vec![ask]);
        let last = Record::of(events.last().unwrap()).unwrap();
        assert_eq!(
            (last.state, last.at),
            (TaskState::InputRequired, task.updated_ms())
        );
        // Something else in a run's events is not a record.
        let foreign = StoredEvent {
            seq: 1,
            event: serde_json::json!({"type": "RUN_STARTED"}),
        };
        assert!(Record::of(&foreign).is_none());
    }
}
