//! Where runs live when more than one process serves a session store: which run holds a
//! session, who executes it under a lease, and its events for replay.
//!
//! A [`RunStore`] keeps, per run:
//! - its session, [`RunStatus`], owner and lease (renewed by the owner's heartbeat), and whether
//!   a cancel was asked;
//! - its events, numbered 1, 2, 3… by the store, so a client's `Last-Event-ID` means the same on
//!   every process.
//!
//! The contract every store keeps:
//! - **One active run per session**, on every process: [`begin`](RunStore::begin) on a session
//!   whose run is running or paused is [`RunStoreError::Busy`].
//! - **Leases fence.** A running run belongs to its owner until its lease runs out. Renewing,
//!   appending events and changing the status check the lease in the same step, so a process
//!   that lost its run (it stalled past the lease and another took over) is refused
//!   ([`RunStoreError::LeaseLost`]) and cannot write after the new owner.
//! - **Takeover, per face.** [`claim_expired`](RunStore::claim_expired) hands one running
//!   run whose lease ran out, among the runs whose ids start with the caller's prefix, to a
//!   new owner; each such run goes to exactly one claimant, however many processes ask at
//!   once. A face gives its runs ids under its own prefix (the web face `web.`, the A2A face
//!   `a2a.`), so faces sharing a store never take over each other's runs. A paused run has
//!   no owner: [`claim`](RunStore::claim) takes it when an answer arrives.
//! - **One owner per face and process.** A face holds its runs through a [`RunOwner`]: one
//!   lease, one polling interval ([`poll_interval`]) and one takeover rule for every face.
//! - **Wake-ups only wake.** [`changed`](RunStore::changed) resolves when the run may have
//!   changed (new events, status, a cancel) or when its wait is over; readers then read the
//!   store, since a wake-up can be lost.
//!
//! [`MemoryRunStore`] keeps the contract in one process; [`FileRunStore`] in one process
//! too, in a directory that outlives it; `SqliteRunStore` (feature `sqlite`)
//! for the processes of one machine, polling for changes; `PostgresRunStore` (feature
//! `postgres`) across machines, with the database's clock and `LISTEN/NOTIFY` to wake
//! readers.

#[cfg(any(test, feature = "testing"))]
mod faulty;
mod file;
mod memory;
mod owner;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql;
#[cfg(feature = "sqlite")]
mod sqlite;
mod writer;

use std::time::Duration;

use serde_json::Value;

use mux_tool::BoxFuture;

pub use crate::event_json::EventJson;
pub use crate::fault::StoreFault;
pub use crate::run_status::RunStatus;
#[cfg(any(test, feature = "testing"))]
pub use faulty::FaultyRunStore;
pub use file::FileRunStore;
pub use memory::MemoryRunStore;
pub use owner::{MIN_LEASE, RunOwner, Takeover, poll_interval};
#[cfg(feature = "postgres")]
pub use postgres::PostgresRunStore;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteRunStore;
pub use writer::{BACKLOG_LIMIT, RunWriter, WRITE_TIMEOUT, WriteFailure};

/// A run as the store has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunRecord {
    /// The run's id.
    pub run_id: String,
    /// The session it runs on.
    pub session_id: String,
    /// Where it is.
    pub status: RunStatus,
    /// Who executes it (running runs only).
    pub owner: Option<String>,
    /// Whether someone asked to cancel it.
    pub cancel_requested: bool,
    /// The number of its last event (0: none yet).
    pub last_seq: u64,
}

impl RunRecord {
    /// A run just begun: running, held by `owner`, with no event yet.
    pub(crate) fn begun(run_id: &str, session_id: &str, owner: &str) -> Self {
        Self {
            run_id: run_id.to_owned(),
            session_id: session_id.to_owned(),
            status: RunStatus::Running,
            owner: Some(owner.to_owned()),
            cancel_requested: false,
            last_seq: 0,
        }
    }
}

/// One stored event of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredEvent {
    /// Its number in the run: 1, 2, 3…
    pub seq: u64,
    /// The event, as the face serialized it.
    pub event: Value,
}

/// A run as [`RunStore::list_runs`] lists it: the run and its last event, if any.
pub type ListedRun = (RunRecord, Option<StoredEvent>);

/// Why a run store refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunStoreError {
    /// The session has an active run already.
    #[error("session `{session_id}` is busy with run `{run_id}`")]
    Busy {
        /// The session.
        session_id: String,
        /// Its active run.
        run_id: String,
    },
    /// A run with this id exists already.
    #[error("run `{0}` exists already")]
    Exists(String),
    /// No run has this id.
    #[error("run `{0}` does not exist")]
    NotFound(String),
    /// The caller does not hold the run: its lease ran out and another owner took it, or the
    /// run is paused or over.
    #[error("run `{run_id}` is not held by `{owner}` (its lease ran out, or it is not running)")]
    LeaseLost {
        /// The run.
        run_id: String,
        /// Who thought it held it.
        owner: String,
    },
    /// The run cannot be claimed: another owner's lease still holds it, or it is over.
    #[error("run `{run_id}` cannot be claimed: it is {status:?}, held by another owner or over")]
    Held {
        /// The run.
        run_id: String,
        /// Its status.
        status: RunStatus,
    },
    /// The store failed.
    #[error("run store: {operation}: {reason}")]
    Store {
        /// What was being done.
        operation: &'static str,
        /// The underlying error.
        reason: String,
    },
    /// The store cannot be used now (its disk is full, it is read-only, locked, down or not
    /// answering): trying again once the cause is gone succeeds. A face answers it with its
    /// "store unavailable" status; `fault` is what a client may be shown, `reason` the
    /// driver's text (for the log).
    #[error("run store: {operation}: {fault}: {reason}")]
    Unavailable {
        /// What was being done.
        operation: &'static str,
        /// Why, in words a client may see.
        fault: StoreFault,
        /// The driver's error.
        reason: String,
    },
}

#[cfg(any(feature = "sqlite", feature = "postgres"))]
impl From<crate::store_bound::Unanswered> for RunStoreError {
    fn from(err: crate::store_bound::Unanswered) -> Self {
        Self::Unavailable {
            operation: "waiting for the database's answer",
            fault: StoreFault::Unanswered,
            reason: err.to_string(),
        }
    }
}

impl RunStoreError {
    /// Why the store could not be used, when the store (not the request) is at fault: a face
    /// answers these with its "store unavailable" status.
    pub fn fault(&self) -> Option<StoreFault> {
        match self {
            Self::Unavailable { fault, .. } => Some(*fault),
            Self::Store { .. } => Some(StoreFault::Failed),
            _ => None,
        }
    }

    /// The error of a driver's failure while doing `operation`: [`Unavailable`](Self::Unavailable)
    /// when the driver's error names a fault of the store, else [`Store`](Self::Store).
    #[cfg(any(feature = "sqlite", feature = "postgres"))]
    pub(crate) fn of_sqlx(operation: &'static str, err: &sqlx::Error) -> Self {
        let reason = err.to_string();
        match StoreFault::of_sqlx(err) {
            Some(fault) => Self::Unavailable {
                operation,
                fault,
                reason,
            },
            None => Self::Store { operation, reason },
        }
    }
}

/// What a run store's operations return: a boxed future of the result.
pub type RunFuture<'a, T> = BoxFuture<'a, Result<T, RunStoreError>>;

/// Runs, their owners and their events; see the [module docs](self) for the contract.
pub trait RunStore: Send + Sync + 'static {
    /// Records a new running run on `session_id`, held by `owner` for `lease`. Busy when the
    /// session has an active run.
    fn begin<'a>(
        &'a self,
        session_id: &'a str,
        run_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, RunRecord>;

    /// The owner's heartbeat: extends its lease and returns the run (whose
    /// `cancel_requested` the owner should act on). `LeaseLost` when it no longer holds it.
    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, RunRecord>;

    /// The owner moves its run to `status`: `Paused` or an end gives up the lease (and an
    /// end frees the session); `Running` keeps it.
    fn set_status<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        status: RunStatus,
    ) -> RunFuture<'a, ()>;

    /// Takes `run_id` for `owner`: a paused run, or a running one whose lease ran out. It is
    /// running afterwards. `Held` when another owner's lease holds it or it is over.
    fn claim<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, RunRecord>;

    /// Ends `from` and begins `to` on its session for `owner`, in one step, so no other run
    /// can take the session between them: a paused run resumed by a new run (a face's resume
    /// request), or a run `owner` holds (or whose lease ran out) continued by a new one. `from`
    /// ends as finished. `Held` when `from` is held by another owner's lease or over;
    /// `Exists` when `to` exists.
    fn hand_over<'a>(
        &'a self,
        from: &'a str,
        to: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, RunRecord>;

    /// Takes over one running run whose id starts with `prefix` and whose lease ran out (the
    /// longest expired first), or `None`. Each such run goes to exactly one caller. A face
    /// passes the prefix of the ids it gives its runs, so it takes over only its own kind.
    fn claim_expired<'a>(
        &'a self,
        prefix: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> RunFuture<'a, Option<RunRecord>>;

    /// The run.
    fn get<'a>(&'a self, run_id: &'a str) -> RunFuture<'a, RunRecord>;

    /// The session's active run, if any.
    fn active_run<'a>(&'a self, session_id: &'a str) -> RunFuture<'a, Option<RunRecord>>;

    /// Asks the run's owner to cancel it (seen at its next renew) and wakes waiters.
    fn request_cancel<'a>(&'a self, run_id: &'a str) -> RunFuture<'a, ()>;

    /// The owner appends events, numbered after the last, and with `end` moves the run to
    /// that status in the same step (as [`set_status`](Self::set_status) would), so a run's
    /// last events and its end are stored together; returns the last number. Refused with
    /// `LeaseLost` when it no longer holds the run (then nothing is written). The events
    /// come serialized, as the store keeps them: it parses nothing.
    fn append_json<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        events: &'a [EventJson],
        end: Option<RunStatus>,
    ) -> RunFuture<'a, u64>;

    /// [`append_json`](Self::append_json) of `events`, serialized here.
    fn append_events<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        events: &'a [Value],
        end: Option<RunStatus>,
    ) -> RunFuture<'a, u64> {
        let events: Vec<EventJson> = events.iter().map(EventJson::from).collect();
        Box::pin(async move { self.append_json(run_id, owner, &events, end).await })
    }

    /// Up to `limit` events numbered after `after`, in order.
    fn events_after<'a>(
        &'a self,
        run_id: &'a str,
        after: u64,
        limit: usize,
    ) -> RunFuture<'a, Vec<StoredEvent>>;

    /// Up to `limit` runs whose ids start with `prefix` and sort after `after` (byte order;
    /// `""` for the first page), in id order, each with its last event: a face lists its
    /// runs by the prefix of the ids it gives them.
    fn list_runs<'a>(
        &'a self,
        prefix: &'a str,
        after: &'a str,
        limit: usize,
    ) -> RunFuture<'a, Vec<ListedRun>>;

    /// Deletes the runs that ended (finished, failed or cancelled) more than `older_than`
    /// ago, with their events; returns how many.
    fn forget_ended<'a>(&'a self, older_than: Duration) -> RunFuture<'a, u64>;

    /// Resolves when `run_id` may have changed, or after `wait`.
    fn changed<'a>(&'a self, run_id: &'a str, wait: Duration) -> BoxFuture<'a, ()>;

    /// Whether [`changed`](Self::changed) resolves early only when the run may have changed
    /// (a notification per run), so waiting on it costs nothing while nothing happens. A store
    /// that polls says no: an owner then looks for cancel requests at its heartbeat only.
    fn notifies(&self) -> bool {
        false
    }
}

/// [`RunStore::changed`] of `run_id` for at most `wait`, started now, before the caller
/// reads the run: a change stored between that read and the wait still wakes it. `None` when
/// a change came already (read at once). A follower of a run reads in a loop of
/// `watch`, read, then await the wait.
pub async fn watch<'a>(
    store: &'a dyn RunStore,
    run_id: &'a str,
    wait: Duration,
) -> Option<BoxFuture<'a, ()>> {
    let mut wake = store.changed(run_id, wait);
    if futures::poll!(wake.as_mut()).is_ready() {
        None
    } else {
        Some(wake)
    }
}
