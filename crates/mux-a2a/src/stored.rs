//! Tasks in the run store, so any process sharing it serves any task, and a restart loses
//! none.
//!
//! - A task is the run `a2a.<task id>` on its context's session (one task at a time per
//!   context, on every process). Its events are the task's [`Record`]s: the whole task first,
//!   then each update, history message and change of what it waits for, each carrying the
//!   task's state and status time.
//! - Each server is one [`RunOwner`], the store's component every face holds its runs
//!   through: the process that runs a task holds its run ([`RunWriter`]). A task paused on
//!   approvals only gives the run up (`paused`): the next message on the task, on any
//!   process, claims it and rebuilds the loop from the session.
//! - The owner takes over tasks whose process stopped (the rule and the pace are the
//!   owner's); the methods continue them (the loop resumes at the session's last step; a
//!   tool call that was running is run again only when its tool is read-only or idempotent).

use std::sync::Arc;
use std::time::Duration;

use mux_orchestrator::runs::{
    RunOwner, RunRecord, RunStore, RunStoreError, RunWriter, StoredEvent, watch,
};

use crate::rpc::RpcError;
use crate::rpc::shown;
use crate::task::{Change, Logged, Next, Record, TaskEntry};
use crate::wire::TaskState;

/// The prefix of every task's run id.
pub(crate) const PREFIX: &str = "a2a.";
/// Events read at once.
const PAGE: usize = 512;
/// The longest task id looked up.
const MAX_ID: usize = 256;

/// The run id of task `task_id`.
pub(crate) fn run_id(task_id: &str) -> String {
    format!("{PREFIX}{task_id}")
}

/// The task id of a run id of ours.
pub(crate) fn task_id(run_id: &str) -> Option<&str> {
    run_id.strip_prefix(PREFIX)
}

/// This process as an owner of tasks' runs.
pub(crate) struct Durable {
    /// Holds the tasks' runs; stopped with the server (writers stop where they are, and
    /// other processes take the tasks over).
    pub(crate) owner: RunOwner,
}

impl Durable {
    /// A writer for `run`, which this process holds (as it began or claimed it).
    pub(crate) fn writer(&self, run: &RunRecord) -> RunWriter {
        self.owner.writer(run.run_id.clone(), run.last_seq)
    }

    /// The stored run of `task_id`, or task-not-found.
    pub(crate) async fn run(&self, task_id: &str) -> Result<RunRecord, RpcError> {
        if task_id.len() > MAX_ID {
            return Err(not_found(task_id));
        }
        self.owner
            .store()
            .get(&run_id(task_id))
            .await
            .map_err(|e| store_error(e, task_id))
    }

    /// Every record of `task_id`'s run, and the run as of the last one.
    pub(crate) async fn records(
        &self,
        task_id: &str,
    ) -> Result<(RunRecord, Vec<Record>), RpcError> {
        let record = self.run(task_id).await?;
        let id = run_id(task_id);
        let mut records = Vec::new();
        let mut after = 0;
        loop {
            let events = self
                .owner
                .store()
                .events_after(&id, after, PAGE)
                .await
                .map_err(|e| store_error(e, task_id))?;
            let Some(last) = events.last() else { break };
            after = last.seq;
            records.extend(events.iter().filter_map(Record::of));
            if events.len() < PAGE {
                break;
            }
        }
        let record = RunRecord {
            last_seq: after.max(record.last_seq),
            ..record
        };
        Ok((record, records))
    }

    /// The task as the store has it, and its run.
    pub(crate) async fn load(
        &self,
        task_id: &str,
        max_log: usize,
    ) -> Result<(RunRecord, TaskEntry), RpcError> {
        let (record, records) = self.records(task_id).await?;
        let entry = TaskEntry::restore(
            task_id.to_owned(),
            record.session_id.clone(),
            records,
            max_log,
        );
        Ok((record, entry))
    }
}

/// A stream of a task another process runs (or ran): its stored updates from `cursor` on.
pub(crate) struct Feed {
    store: Arc<dyn RunStore>,
    run_id: String,
    cursor: u64,
    state: TaskState,
}

impl Feed {
    /// Reads `run_id`'s updates after event `cursor`, the task being in `state` there.
    pub(crate) fn new(
        store: Arc<dyn RunStore>,
        run_id: String,
        cursor: u64,
        state: TaskState,
    ) -> Self {
        Self {
            store,
            run_id,
            cursor,
            state,
        }
    }

    /// The next updates, waiting for them; `End` once the task ended or paused and
    /// everything before was read.
    pub(crate) async fn next(&mut self) -> Next {
        loop {
            let Some(wake) = watch(&*self.store, &self.run_id, Duration::from_secs(1)).await else {
                continue;
            };
            let events = match self
                .store
                .events_after(&self.run_id, self.cursor, PAGE)
                .await
            {
                Ok(events) => events,
                Err(err) => {
                    tracing::warn!(run = %self.run_id, "reading a task's events: {err}");
                    return Next::End;
                }
            };
            if let Some(last) = events.last() {
                drop(wake);
                self.cursor = last.seq;
                let updates = self.updates(&events);
                if !updates.is_empty() {
                    return Next::Updates(updates);
                }
                continue;
            }
            if self.state.is_terminal() || self.state.is_interrupted() {
                return Next::End;
            }
            wake.await;
        }
    }

    fn updates(&mut self, events: &[StoredEvent]) -> Vec<Logged> {
        let mut updates = Vec::new();
        for record in events.iter().filter_map(Record::of) {
            self.state = record.state;
            if let Change::Update(update) = record.change {
                let text = serde_json::to_string(&update).unwrap_or_else(|_| "{}".into());
                updates.push(text.into());
            }
        }
        updates
    }
}

/// No task `id`.
pub(crate) fn not_found(id: &str) -> RpcError {
    RpcError::task_not_found(format!("no task `{}`", shown(id)))
}

/// A run store error as the client sees it.
pub(crate) fn store_error(err: RunStoreError, task_id: &str) -> RpcError {
    match err {
        RunStoreError::NotFound(_) => not_found(task_id),
        other if other.fault().is_some() => RpcError::unavailable("task", &other),
        other => RpcError::internal(format!("the task store failed: {other}")),
    }
}
