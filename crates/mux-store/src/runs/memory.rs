//! [`MemoryRunStore`]: the run contract in one process.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use mux_tool::BoxFuture;
use serde_json::Value;
use tokio::sync::Notify;

use super::{
    EventJson, ListedRun, RunFuture, RunRecord, RunStatus, RunStore, RunStoreError, StoredEvent,
};

/// Runs in memory: the contract for one process (tests, a single node). Nothing survives
/// the process.
#[derive(Debug, Default)]
pub struct MemoryRunStore {
    state: Mutex<State>,
    /// Run id → its waiters (only runs someone waits on).
    waiters: Mutex<HashMap<String, std::sync::Arc<Notify>>>,
}

#[derive(Debug, Default)]
struct State {
    runs: HashMap<String, Entry>,
    /// Session → its active run.
    active: HashMap<String, String>,
}

#[derive(Debug)]
struct Entry {
    record: RunRecord,
    lease_until: Option<Instant>,
    /// Each event serialized: a `Value` costs several times its text while a run is kept.
    events: Vec<Box<str>>,
    /// When its status last changed.
    updated: Instant,
}

impl Entry {
    fn held_by(&self, owner: &str, now: Instant) -> bool {
        self.record.status == RunStatus::Running
            && self.record.owner.as_deref() == Some(owner)
            && self.lease_until.is_some_and(|until| until > now)
    }

    fn expired(&self, now: Instant) -> bool {
        self.record.status == RunStatus::Running
            && self.lease_until.is_none_or(|until| until <= now)
    }
}

impl MemoryRunStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Wakes the waiters of `run_id`.
    fn wake(&self, run_id: &str) {
        let waiters = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(notify) = waiters.get(run_id) {
            notify.notify_waiters();
        }
    }

    fn held<'s>(
        state: &'s mut State,
        run_id: &str,
        owner: &str,
    ) -> Result<&'s mut Entry, RunStoreError> {
        let entry = state
            .runs
            .get_mut(run_id)
            .ok_or_else(|| RunStoreError::NotFound(run_id.to_owned()))?;
        if !entry.held_by(owner, Instant::now()) {
            return Err(RunStoreError::LeaseLost {
                run_id: run_id.to_owned(),
                owner: owner.to_owned(),
            });
        }
        Ok(entry)
    }

    /// Moves a run (its holder checked) to `status` (see [`RunStore::set_status`]).
    fn move_to(state: &mut State, run_id: &str, status: RunStatus) {
        let Some(entry) = state.runs.get_mut(run_id) else {
            return;
        };
        entry.record.status = status;
        entry.updated = Instant::now();
        if status != RunStatus::Running {
            entry.record.owner = None;
            entry.lease_until = None;
        }
        let session = entry.record.session_id.clone();
        if !status.is_active() {
            state.active.remove(&session);
        }
    }

    fn take(entry: &mut Entry, owner: &str, lease: Duration) -> RunRecord {
        entry.record.status = RunStatus::Running;
        entry.record.owner = Some(owner.to_owned());
        entry.lease_until = Some(Instant::now() + lease);
        entry.record.clone()
    }
}

impl RunStore for MemoryRunStore {
    fn begin<'a>(
        &'a self,
        session_id: &'a str,
        run_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, RunRecord> {
        Box::pin(async move {
            let mut state = self.lock();
            if let Some(active) = state.active.get(session_id) {
                return Err(RunStoreError::Busy {
                    session_id: session_id.to_owned(),
                    run_id: active.clone(),
                });
            }
            if state.runs.contains_key(run_id) {
                return Err(RunStoreError::Exists(run_id.to_owned()));
            }
            let record = RunRecord::begun(run_id, session_id, owner);
            state.runs.insert(
                run_id.to_owned(),
                Entry {
                    record: record.clone(),
                    lease_until: Some(Instant::now() + lease),
                    events: Vec::new(),
                    updated: Instant::now(),
                },
            );
            state
                .active
                .insert(session_id.to_owned(), run_id.to_owned());
            Ok(record)
        })
    }

    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, RunRecord> {
        Box::pin(async move {
            let mut state = self.lock();
            let entry = Self::held(&mut state, run_id, owner)?;
            entry.lease_until = Some(Instant::now() + lease);
            Ok(entry.record.clone())
        })
    }

    fn set_status<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        status: RunStatus,
    ) -> RunFuture<'a, ()> {
        Box::pin(async move {
            let mut state = self.lock();
            Self::held(&mut state, run_id, owner)?;
            Self::move_to(&mut state, run_id, status);
            drop(state);
            self.wake(run_id);
            Ok(())
        })
    }

    fn claim<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, RunRecord> {
        Box::pin(async move {
            let mut state = self.lock();
            let entry = state
                .runs
                .get_mut(run_id)
                .ok_or_else(|| RunStoreError::NotFound(run_id.to_owned()))?;
            let now = Instant::now();
            if entry.record.status != RunStatus::Paused && !entry.expired(now) {
                return Err(RunStoreError::Held {
                    run_id: run_id.to_owned(),
                    status: entry.record.status,
                });
            }
            Ok(Self::take(entry, owner, lease))
        })
    }

    fn hand_over<'a>(
        &'a self,
        from: &'a str,
        to: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, RunRecord> {
        Box::pin(async move {
            let mut state = self.lock();
            if state.runs.contains_key(to) {
                return Err(RunStoreError::Exists(to.to_owned()));
            }
            let entry = state
                .runs
                .get_mut(from)
                .ok_or_else(|| RunStoreError::NotFound(from.to_owned()))?;
            let now = Instant::now();
            let status = entry.record.status;
            if status != RunStatus::Paused && !entry.expired(now) && !entry.held_by(owner, now) {
                return Err(RunStoreError::Held {
                    run_id: from.to_owned(),
                    status,
                });
            }
            entry.record.status = RunStatus::Finished;
            entry.record.owner = None;
            entry.lease_until = None;
            entry.updated = now;
            let session_id = entry.record.session_id.clone();
            let record = RunRecord {
                run_id: to.to_owned(),
                session_id: session_id.clone(),
                status: RunStatus::Running,
                owner: Some(owner.to_owned()),
                cancel_requested: false,
                last_seq: 0,
            };
            state.runs.insert(
                to.to_owned(),
                Entry {
                    record: record.clone(),
                    lease_until: Some(now + lease),
                    events: Vec::new(),
                    updated: now,
                },
            );
            state.active.insert(session_id, to.to_owned());
            drop(state);
            self.wake(from);
            Ok(record)
        })
    }

    fn claim_expired<'a>(
        &'a self,
        prefix: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, Option<RunRecord>> {
        Box::pin(async move {
            let mut state = self.lock();
            let now = Instant::now();
            let oldest = state
                .runs
                .iter_mut()
                .filter(|(id, entry)| id.starts_with(prefix) && entry.expired(now))
                .map(|(_, entry)| entry)
                .min_by_key(|entry| entry.lease_until);
            Ok(oldest.map(|entry| Self::take(entry, owner, lease)))
        })
    }

    fn get<'a>(&'a self, run_id: &'a str) -> RunFuture<'a, RunRecord> {
        Box::pin(async move {
            self.lock()
                .runs
                .get(run_id)
                .map(|entry| entry.record.clone())
                .ok_or_else(|| RunStoreError::NotFound(run_id.to_owned()))
        })
    }

    fn active_run<'a>(&'a self, session_id: &'a str) -> RunFuture<'a, Option<RunRecord>> {
        Box::pin(async move {
            let state = self.lock();
            Ok(state
                .active
                .get(session_id)
                .and_then(|run_id| state.runs.get(run_id))
                .map(|entry| entry.record.clone()))
        })
    }

    fn request_cancel<'a>(&'a self, run_id: &'a str) -> RunFuture<'a, ()> {
        Box::pin(async move {
            let mut state = self.lock();
            let entry = state
                .runs
                .get_mut(run_id)
                .ok_or_else(|| RunStoreError::NotFound(run_id.to_owned()))?;
            entry.record.cancel_requested = true;
            drop(state);
            self.wake(run_id);
            Ok(())
        })
    }

    fn append_json<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        events: &'a [EventJson],
        end: Option<RunStatus>,
    ) -> RunFuture<'a, u64> {
        Box::pin(async move {
            let mut state = self.lock();
            let entry = Self::held(&mut state, run_id, owner)?;
            entry
                .events
                .extend(events.iter().map(|e| Box::from(e.as_str())));
            entry.record.last_seq = entry.events.len() as u64;
            let last = entry.record.last_seq;
            if let Some(status) = end {
                Self::move_to(&mut state, run_id, status);
            }
            drop(state);
            self.wake(run_id);
            Ok(last)
        })
    }

    fn events_after<'a>(
        &'a self,
        run_id: &'a str,
        after: u64,
        limit: usize,
    ) -> RunFuture<'a, Vec<StoredEvent>> {
        Box::pin(async move {
            let state = self.lock();
            let entry = state
                .runs
                .get(run_id)
                .ok_or_else(|| RunStoreError::NotFound(run_id.to_owned()))?;
            let start = usize::try_from(after).unwrap_or(usize::MAX);
            Ok(entry
                .events
                .iter()
                .enumerate()
                .skip(start)
                .take(limit)
                .map(|(i, event)| StoredEvent {
                    seq: i as u64 + 1,
                    // Written by `append_json` from an `EventJson`, so it parses.
                    event: serde_json::from_str(event).unwrap_or(Value::Null),
                })
                .collect())
        })
    }

    fn list_runs<'a>(
        &'a self,
        prefix: &'a str,
        after: &'a str,
        limit: usize,
    ) -> RunFuture<'a, Vec<ListedRun>> {
        Box::pin(async move {
            let state = self.lock();
            let mut ids: Vec<&String> = state
                .runs
                .keys()
                .filter(|id| id.starts_with(prefix) && id.as_str() > after)
                .collect();
            ids.sort_unstable();
            Ok(ids
                .into_iter()
                .take(limit)
                .filter_map(|id| state.runs.get(id))
                .map(|entry| {
                    let last = entry.events.last().map(|event| StoredEvent {
                        seq: entry.events.len() as u64,
                        event: serde_json::from_str(event).unwrap_or(Value::Null),
                    });
                    (entry.record.clone(), last)
                })
                .collect())
        })
    }

    fn forget_ended<'a>(&'a self, older_than: Duration) -> RunFuture<'a, u64> {
        Box::pin(async move {
            let mut state = self.lock();
            let before = state.runs.len();
            state.runs.retain(|_, entry| {
                entry.record.status.is_active() || entry.updated.elapsed() < older_than
            });
            Ok((before - state.runs.len()) as u64)
        })
    }

    fn changed<'a>(&'a self, run_id: &'a str, wait: Duration) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let notify = {
                let mut waiters = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
                std::sync::Arc::clone(waiters.entry(run_id.to_owned()).or_default())
            };
            let _ = tokio::time::timeout(wait, notify.notified()).await;
            // The last waiter of a run takes its entry away (the map and this one hold it).
            let mut waiters = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
            if std::sync::Arc::strong_count(&notify) == 2 {
                waiters.remove(run_id);
            }
        })
    }

    fn notifies(&self) -> bool {
        true
    }
}
