//! [`FileRunStore`]: the run contract in a directory, for one process, kept across restarts.

mod journal;
mod state;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use mux_tool::BoxFuture;
use tokio::sync::Notify;

use super::{
    EventJson, ListedRun, RunFuture, RunRecord, RunStatus, RunStore, RunStoreError, StoreFault,
    StoredEvent, WRITE_TIMEOUT,
};
use journal::Journal;
use state::{Op, State, now_ms};

/// Runs in a directory: a journal (`runs.jsonl`) of every change, each appended and synced
/// (`fdatasync`) before the call returns, so a run paused at an approval, its events and its
/// cancel request survive the process (a crash, `kill -9`, a restart). The runs live in
/// memory too; opening the store reads the journal back.
///
/// One process at a time: opening takes an exclusive lock on the directory (released when the
/// store is dropped or its process ends), and a second opener is refused with
/// [`RunStoreError::Unavailable`] ([`StoreFault::Locked`]). Leases are not written: a run
/// found running when the store opens belonged to a process that is gone, so its lease has
/// run out and the first [`claim_expired`](RunStore::claim_expired) takes it over.
///
/// A write that fails (a full disk, a read-only file system) is
/// [`RunStoreError::Unavailable`] and changes nothing; one that takes longer than
/// [`WRITE_TIMEOUT`] is `Unavailable` ([`StoreFault::Unanswered`]) too, and may still land.
/// A crash mid-write leaves at most a torn last line, which opening cuts off.
/// [`forget_ended`](RunStore::forget_ended) rewrites the journal with the runs left (a new
/// file, synced, renamed over the old one).
///
/// ```
/// use std::time::Duration;
/// use mux_store::runs::{FileRunStore, RunStatus, RunStore};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let dir = tempfile::tempdir()?;
/// let store = FileRunStore::open(dir.path()).await?;
/// store.begin("session", "run-1", "me", Duration::from_secs(30)).await?;
/// store.set_status("run-1", "me", RunStatus::Paused).await?;
/// drop(store);
/// let reopened = FileRunStore::open(dir.path()).await?;
/// assert_eq!(reopened.get("run-1").await?.status, RunStatus::Paused);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct FileRunStore {
    inner: Arc<Inner>,
    /// Run id → its waiters (only runs someone waits on).
    waiters: Mutex<HashMap<String, Arc<Notify>>>,
}

#[derive(Debug)]
struct Inner {
    dir: PathBuf,
    /// Taken briefly, by readers and by writers before and after their disk write.
    state: Mutex<State>,
    /// Held by a writer from its decision to its change applied: writers go one at a time,
    /// on the blocking pool, and readers never wait for the disk.
    journal: Mutex<Journal>,
}

/// What a write decided: the ops to journal, a lease to give, the answer.
struct Change<T> {
    ops: Vec<Op>,
    lease: Option<(String, Duration)>,
    out: T,
}

impl<T> Change<T> {
    fn new(ops: Vec<Op>, out: T) -> Self {
        Self {
            ops,
            lease: None,
            out,
        }
    }

    fn leasing(mut self, run_id: &str, lease: Duration) -> Self {
        self.lease = Some((run_id.to_owned(), lease));
        self
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The error of a blocking step that did not finish within [`WRITE_TIMEOUT`].
fn unanswered(operation: &'static str) -> RunStoreError {
    RunStoreError::Unavailable {
        operation,
        fault: StoreFault::Unanswered,
        reason: format!("the disk did not answer within {WRITE_TIMEOUT:?}"),
    }
}

impl FileRunStore {
    /// Opens the store in `dir` (created if missing), reading its journal back. Fails with
    /// `Unavailable` when the directory cannot be written or another store has it open, and
    /// with [`RunStoreError::Store`] naming the line when the journal is damaged before its
    /// last line.
    pub async fn open(dir: impl Into<PathBuf>) -> Result<Self, RunStoreError> {
        let dir = dir.into();
        let opening = {
            let dir = dir.clone();
            tokio::task::spawn_blocking(move || Journal::open(&dir))
        };
        let (journal, ops) = match tokio::time::timeout(WRITE_TIMEOUT, opening).await {
            Ok(Ok(opened)) => opened?,
            Ok(Err(join)) => {
                return Err(RunStoreError::Store {
                    operation: "opening the run journal",
                    reason: join.to_string(),
                });
            }
            Err(_) => return Err(unanswered("opening the run journal")),
        };
        let mut state = State::default();
        for op in ops {
            state.apply(op);
        }
        Ok(Self {
            inner: Arc::new(Inner {
                dir,
                state: Mutex::new(state),
                journal: Mutex::new(journal),
            }),
            waiters: Mutex::default(),
        })
    }

    /// The directory the store keeps its journal in.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.inner.state)
    }

    /// Wakes the waiters of `run_id`.
    fn wake(&self, run_id: &str) {
        if let Some(notify) = lock(&self.waiters).get(run_id) {
            notify.notify_waiters();
        }
    }

    /// Decides a change against the runs, journals it and applies it, one writer at a time
    /// on the blocking pool; bounded by [`WRITE_TIMEOUT`]. With `compact`, the journal is
    /// rewritten with the runs left afterwards (a failure to is logged: the journal stays
    /// whole).
    async fn write<T: Send + 'static>(
        &self,
        operation: &'static str,
        compact: bool,
        decide: impl FnOnce(&State, Instant) -> Result<Change<T>, RunStoreError> + Send + 'static,
    ) -> Result<T, RunStoreError> {
        let inner = Arc::clone(&self.inner);
        let task = tokio::task::spawn_blocking(move || {
            let mut journal = lock(&inner.journal);
            let change = decide(&lock(&inner.state), Instant::now())?;
            if !change.ops.is_empty() {
                journal.append(&change.ops)?;
            }
            let snapshot = {
                let mut state = lock(&inner.state);
                for op in change.ops {
                    state.apply(op);
                }
                if let Some((run_id, lease)) = &change.lease {
                    state.lease(run_id, *lease);
                }
                compact.then(|| state.snapshot())
            };
            if let Some(snapshot) = snapshot
                && let Err(err) = journal.compact(&snapshot)
            {
                tracing::warn!(dir = %inner.dir.display(), %err, "the run journal was not compacted");
            }
            Ok(change.out)
        });
        match tokio::time::timeout(WRITE_TIMEOUT, task).await {
            Ok(Ok(result)) => result,
            Ok(Err(join)) => Err(RunStoreError::Store {
                operation,
                reason: join.to_string(),
            }),
            Err(_) => Err(unanswered(operation)),
        }
    }
}

/// The record of a run `owner` takes (claims) now.
fn taken(record: &RunRecord, owner: &str) -> RunRecord {
    RunRecord {
        status: RunStatus::Running,
        owner: Some(owner.to_owned()),
        ..record.clone()
    }
}

impl RunStore for FileRunStore {
    fn begin<'a>(
        &'a self,
        session_id: &'a str,
        run_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, RunRecord> {
        let (session, run, owner) = (session_id.to_owned(), run_id.to_owned(), owner.to_owned());
        Box::pin(self.write("beginning a run", false, move |state, _| {
            if let Some(active) = state.active_run(&session) {
                return Err(RunStoreError::Busy {
                    session_id: session,
                    run_id: active.record.run_id.clone(),
                });
            }
            if state.contains(&run) {
                return Err(RunStoreError::Exists(run));
            }
            let record = RunRecord::begun(&run, &session, &owner);
            let op = Op::Begin {
                run: run.clone(),
                session,
                owner,
                at: now_ms(),
            };
            Ok(Change::new(vec![op], record).leasing(&run, lease))
        }))
    }

    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, RunRecord> {
        let (run, owner) = (run_id.to_owned(), owner.to_owned());
        Box::pin(self.write("renewing a lease", false, move |state, _| {
            let record = state.held(&run, &owner)?.record.clone();
            Ok(Change::new(Vec::new(), record).leasing(&run, lease))
        }))
    }

    fn set_status<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        status: RunStatus,
    ) -> RunFuture<'a, ()> {
        let (run, owner) = (run_id.to_owned(), owner.to_owned());
        Box::pin(async move {
            self.write("setting a run's status", false, move |state, _| {
                state.held(&run, &owner)?;
                let op = Op::Status {
                    run,
                    status,
                    at: now_ms(),
                };
                Ok(Change::new(vec![op], ()))
            })
            .await?;
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
        let (run, owner) = (run_id.to_owned(), owner.to_owned());
        Box::pin(self.write("claiming a run", false, move |state, now| {
            let entry = state.entry(&run)?;
            if entry.record.status != RunStatus::Paused && !entry.expired(now) {
                return Err(RunStoreError::Held {
                    run_id: run,
                    status: entry.record.status,
                });
            }
            let record = taken(&entry.record, &owner);
            let op = Op::Take {
                run: run.clone(),
                owner,
            };
            Ok(Change::new(vec![op], record).leasing(&run, lease))
        }))
    }

    fn hand_over<'a>(
        &'a self,
        from: &'a str,
        to: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, RunRecord> {
        let (from_id, to_id, owner) = (from.to_owned(), to.to_owned(), owner.to_owned());
        Box::pin(async move {
            let record = self
                .write("handing a run over", false, move |state, now| {
                    if state.contains(&to_id) {
                        return Err(RunStoreError::Exists(to_id));
                    }
                    let entry = state.entry(&from_id)?;
                    let status = entry.record.status;
                    if status != RunStatus::Paused
                        && !entry.expired(now)
                        && !entry.held_by(&owner, now)
                    {
                        return Err(RunStoreError::Held {
                            run_id: from_id,
                            status,
                        });
                    }
                    let record = RunRecord::begun(&to_id, &entry.record.session_id, &owner);
                    let op = Op::HandOver {
                        from: from_id,
                        to: to_id.clone(),
                        owner,
                        at: now_ms(),
                    };
                    Ok(Change::new(vec![op], record).leasing(&to_id, lease))
                })
                .await?;
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
        let (prefix, owner) = (prefix.to_owned(), owner.to_owned());
        Box::pin(self.write("taking over a run", false, move |state, now| {
            let Some(entry) = state.oldest_expired(&prefix, now) else {
                return Ok(Change::new(Vec::new(), None));
            };
            let record = taken(&entry.record, &owner);
            let run = record.run_id.clone();
            let op = Op::Take {
                run: run.clone(),
                owner,
            };
            Ok(Change::new(vec![op], Some(record)).leasing(&run, lease))
        }))
    }

    fn get<'a>(&'a self, run_id: &'a str) -> RunFuture<'a, RunRecord> {
        Box::pin(async move { Ok(self.state().entry(run_id)?.record.clone()) })
    }

    fn active_run<'a>(&'a self, session_id: &'a str) -> RunFuture<'a, Option<RunRecord>> {
        Box::pin(async move {
            Ok(self
                .state()
                .active_run(session_id)
                .map(|entry| entry.record.clone()))
        })
    }

    fn request_cancel<'a>(&'a self, run_id: &'a str) -> RunFuture<'a, ()> {
        let run = run_id.to_owned();
        Box::pin(async move {
            self.write("asking to cancel a run", false, move |state, _| {
                state.entry(&run)?;
                Ok(Change::new(vec![Op::Cancel { run }], ()))
            })
            .await?;
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
        let (run, owner) = (run_id.to_owned(), owner.to_owned());
        let events: Vec<String> = events.iter().map(|e| e.as_str().to_owned()).collect();
        Box::pin(async move {
            let last = self
                .write("appending events", false, move |state, _| {
                    let last = state.held(&run, &owner)?.record.last_seq + events.len() as u64;
                    if events.is_empty() && end.is_none() {
                        return Ok(Change::new(Vec::new(), last));
                    }
                    let op = Op::Append {
                        run,
                        events,
                        end,
                        at: now_ms(),
                    };
                    Ok(Change::new(vec![op], last))
                })
                .await?;
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
        Box::pin(async move { self.state().events_after(run_id, after, limit) })
    }

    fn list_runs<'a>(
        &'a self,
        prefix: &'a str,
        after: &'a str,
        limit: usize,
    ) -> RunFuture<'a, Vec<ListedRun>> {
        Box::pin(async move { Ok(self.state().list(prefix, after, limit)) })
    }

    fn forget_ended<'a>(&'a self, older_than: Duration) -> RunFuture<'a, u64> {
        // Nothing to forget: no write (and no compaction) at all.
        if self.state().ended_before(older_than, now_ms()).is_empty() {
            return Box::pin(async { Ok(0) });
        }
        Box::pin(self.write("forgetting ended runs", true, move |state, _| {
            let runs = state.ended_before(older_than, now_ms());
            let count = runs.len() as u64;
            Ok(Change::new(vec![Op::Forget { runs }], count))
        }))
    }

    fn changed<'a>(&'a self, run_id: &'a str, wait: Duration) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let notify = Arc::clone(lock(&self.waiters).entry(run_id.to_owned()).or_default());
            let _ = tokio::time::timeout(wait, notify.notified()).await;
            // The last waiter of a run takes its entry away (the map and this one hold it).
            let mut waiters = lock(&self.waiters);
            if Arc::strong_count(&notify) == 2 {
                waiters.remove(run_id);
            }
        })
    }

    fn notifies(&self) -> bool {
        true
    }
}
