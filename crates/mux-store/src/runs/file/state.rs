//! The runs of a [`FileRunStore`](super::FileRunStore) in memory, and the journal records
//! ([`Op`]) that change them: the store decides an op against the state, writes it, then
//! applies it; opening the store applies every op of the journal again.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::runs::{ListedRun, RunRecord, RunStatus, RunStoreError, StoredEvent};

/// One record of the journal: a change to the runs, written before it is applied.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub(super) enum Op {
    /// A new running run held by `owner`.
    Begin {
        run: String,
        session: String,
        owner: String,
        at: u64,
    },
    /// The holder moved the run to `status` (see `RunStore::set_status`).
    Status {
        run: String,
        status: RunStatus,
        at: u64,
    },
    /// `owner` took the run: a paused one, or one whose lease ran out.
    Take { run: String, owner: String },
    /// `from` finished and `to` began on its session, held by `owner`.
    HandOver {
        from: String,
        to: String,
        owner: String,
        at: u64,
    },
    /// Someone asked to cancel the run.
    Cancel { run: String },
    /// The holder appended events (each the JSON text of one) and, with `end`, moved the run.
    Append {
        run: String,
        events: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        end: Option<RunStatus>,
        at: u64,
    },
    /// These runs (ended) are forgotten, with their events.
    Forget { runs: Vec<String> },
    /// A whole run, as a compacted journal writes it.
    Run {
        run: String,
        session: String,
        status: RunStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        owner: Option<String>,
        #[serde(default)]
        cancel: bool,
        events: Vec<String>,
        at: u64,
    },
}

/// One run.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) record: RunRecord,
    /// When the holder's lease runs out. Kept in memory only: a journal read at opening
    /// holds no lease, since the process that held it is gone (the store is one process's).
    lease_until: Option<Instant>,
    /// Each event's JSON text.
    events: Vec<Box<str>>,
    /// When its status last changed (milliseconds since the Unix epoch).
    updated_ms: u64,
}

impl Entry {
    fn new(record: RunRecord, events: Vec<Box<str>>, updated_ms: u64) -> Self {
        Self {
            record,
            lease_until: None,
            events,
            updated_ms,
        }
    }

    pub(super) fn held_by(&self, owner: &str, now: Instant) -> bool {
        self.record.status == RunStatus::Running
            && self.record.owner.as_deref() == Some(owner)
            && self.lease_until.is_some_and(|until| until > now)
    }

    pub(super) fn expired(&self, now: Instant) -> bool {
        self.record.status == RunStatus::Running
            && self.lease_until.is_none_or(|until| until <= now)
    }

    fn stored(&self, index: usize) -> Option<StoredEvent> {
        self.events.get(index).map(|event| StoredEvent {
            seq: index as u64 + 1,
            // Made from an `EventJson` (or read back from one), so it parses.
            event: serde_json::from_str(event).unwrap_or(Value::Null),
        })
    }
}

/// Every run, and each session's active run.
#[derive(Debug, Default)]
pub(super) struct State {
    runs: HashMap<String, Entry>,
    active: HashMap<String, String>,
}

/// Milliseconds since the Unix epoch.
pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn not_found(run_id: &str) -> RunStoreError {
    RunStoreError::NotFound(run_id.to_owned())
}

impl State {
    pub(super) fn entry(&self, run_id: &str) -> Result<&Entry, RunStoreError> {
        self.runs.get(run_id).ok_or_else(|| not_found(run_id))
    }

    /// The run, held by `owner` now; `LeaseLost` otherwise.
    pub(super) fn held(&self, run_id: &str, owner: &str) -> Result<&Entry, RunStoreError> {
        let entry = self.entry(run_id)?;
        if entry.held_by(owner, Instant::now()) {
            Ok(entry)
        } else {
            Err(RunStoreError::LeaseLost {
                run_id: run_id.to_owned(),
                owner: owner.to_owned(),
            })
        }
    }

    pub(super) fn contains(&self, run_id: &str) -> bool {
        self.runs.contains_key(run_id)
    }

    /// The session's active run.
    pub(super) fn active_run(&self, session_id: &str) -> Option<&Entry> {
        self.active
            .get(session_id)
            .and_then(|run_id| self.runs.get(run_id))
    }

    /// The running run of `prefix` whose lease ran out longest ago.
    pub(super) fn oldest_expired(&self, prefix: &str, now: Instant) -> Option<&Entry> {
        self.runs
            .iter()
            .filter(|(id, entry)| id.starts_with(prefix) && entry.expired(now))
            .map(|(_, entry)| entry)
            .min_by_key(|entry| entry.lease_until)
    }

    /// The runs that ended more than `older_than` before `now_ms`.
    pub(super) fn ended_before(&self, older_than: Duration, now_ms: u64) -> Vec<String> {
        let older_than = u64::try_from(older_than.as_millis()).unwrap_or(u64::MAX);
        self.runs
            .iter()
            .filter(|(_, entry)| {
                !entry.record.status.is_active()
                    && now_ms.saturating_sub(entry.updated_ms) >= older_than
            })
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Gives `owner` a lease of `lease` on the run (after the op that made it its holder).
    pub(super) fn lease(&mut self, run_id: &str, lease: Duration) {
        if let Some(entry) = self.runs.get_mut(run_id) {
            entry.lease_until = Some(Instant::now() + lease);
        }
    }

    pub(super) fn events_after(
        &self,
        run_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, RunStoreError> {
        let entry = self.entry(run_id)?;
        let start = usize::try_from(after).unwrap_or(usize::MAX);
        Ok((start..entry.events.len())
            .take(limit)
            .filter_map(|i| entry.stored(i))
            .collect())
    }

    pub(super) fn list(&self, prefix: &str, after: &str, limit: usize) -> Vec<ListedRun> {
        let mut ids: Vec<&String> = self
            .runs
            .keys()
            .filter(|id| id.starts_with(prefix) && id.as_str() > after)
            .collect();
        ids.sort_unstable();
        ids.into_iter()
            .take(limit)
            .filter_map(|id| self.runs.get(id))
            .map(|entry| {
                let last = entry
                    .events
                    .len()
                    .checked_sub(1)
                    .and_then(|i| entry.stored(i));
                (entry.record.clone(), last)
            })
            .collect()
    }

    /// The ops that rebuild this state, a run each (a compacted journal).
    pub(super) fn snapshot(&self) -> Vec<Op> {
        let mut ids: Vec<&String> = self.runs.keys().collect();
        ids.sort_unstable();
        ids.into_iter()
            .filter_map(|id| self.runs.get(id))
            .map(|entry| Op::Run {
                run: entry.record.run_id.clone(),
                session: entry.record.session_id.clone(),
                status: entry.record.status,
                owner: entry.record.owner.clone(),
                cancel: entry.record.cancel_requested,
                events: entry.events.iter().map(|e| e.to_string()).collect(),
                at: entry.updated_ms,
            })
            .collect()
    }

    /// Applies `op`, written to the journal (or read back from it). An op that names a run
    /// the state does not have changes nothing: the store wrote it only after checking.
    pub(super) fn apply(&mut self, op: Op) {
        match op {
            Op::Begin {
                run,
                session,
                owner,
                at,
            } => {
                let record = RunRecord::begun(&run, &session, &owner);
                self.active.insert(session, run.clone());
                self.runs.insert(run, Entry::new(record, Vec::new(), at));
            }
            Op::Status { run, status, at } => self.move_to(&run, status, at),
            Op::Take { run, owner } => {
                if let Some(entry) = self.runs.get_mut(&run) {
                    entry.record.status = RunStatus::Running;
                    entry.record.owner = Some(owner);
                    entry.lease_until = None;
                }
            }
            Op::HandOver {
                from,
                to,
                owner,
                at,
            } => {
                let Some(entry) = self.runs.get_mut(&from) else {
                    return;
                };
                entry.record.status = RunStatus::Finished;
                entry.record.owner = None;
                entry.lease_until = None;
                entry.updated_ms = at;
                let session = entry.record.session_id.clone();
                let record = RunRecord::begun(&to, &session, &owner);
                self.active.insert(session, to.clone());
                self.runs.insert(to, Entry::new(record, Vec::new(), at));
            }
            Op::Cancel { run } => {
                if let Some(entry) = self.runs.get_mut(&run) {
                    entry.record.cancel_requested = true;
                }
            }
            Op::Append {
                run,
                events,
                end,
                at,
            } => {
                let Some(entry) = self.runs.get_mut(&run) else {
                    return;
                };
                entry
                    .events
                    .extend(events.into_iter().map(String::into_boxed_str));
                entry.record.last_seq = entry.events.len() as u64;
                if let Some(status) = end {
                    self.move_to(&run, status, at);
                }
            }
            Op::Forget { runs } => {
                for run in runs {
                    self.runs.remove(&run);
                }
            }
            Op::Run {
                run,
                session,
                status,
                owner,
                cancel,
                events,
                at,
            } => {
                let record = RunRecord {
                    run_id: run.clone(),
                    session_id: session.clone(),
                    status,
                    owner,
                    cancel_requested: cancel,
                    last_seq: events.len() as u64,
                };
                if status.is_active() {
                    self.active.insert(session, run.clone());
                }
                let events = events.into_iter().map(String::into_boxed_str).collect();
                self.runs.insert(run, Entry::new(record, events, at));
            }
        }
    }

    /// Moves a run to `status` (see `RunStore::set_status`).
    fn move_to(&mut self, run_id: &str, status: RunStatus, at: u64) {
        let Some(entry) = self.runs.get_mut(run_id) else {
            return;
        };
        entry.record.status = status;
        entry.updated_ms = at;
        if status != RunStatus::Running {
            entry.record.owner = None;
            entry.lease_until = None;
        }
        if !status.is_active() {
            let session = entry.record.session_id.clone();
            if self.active.get(&session).map(String::as_str) == Some(run_id) {
                self.active.remove(&session);
            }
        }
    }
}
