//! [`RunWriter`]: the owner's side of a run it holds in a [`RunStore`], for a face that
//! keeps its runs there.
//!
//! Every face that keeps runs in a store writes them through it (the web face and the A2A
//! face alike). The face pushes events and, at the end, the status the run ends in (with its
//! last events, so they are stored in one step, or later, when the face decides it then); one
//! task per run then, until the end is stored:
//! - appends what was pushed in batches, at once (what is pushed while a write is in flight
//!   goes in the next batch, so batches grow with the store's latency and nothing waits on a
//!   timer), and tells the face the number of the last event stored ([`stored`](RunWriter::stored)),
//!   so it can show clients only what every process can replay;
//! - renews the lease every third of it, and fires [`cancel_requested`](RunWriter::cancel_requested)
//!   when another process asked to cancel the run (seen at the heartbeat, or at once on a
//!   store that [notifies](RunStore::notifies));
//! - keeps events while the store is unreachable, retrying with a backoff up to a second;
//!   gives up when the store has not taken them within [`WRITE_TIMEOUT`] of the first try
//!   (each call to the store is bounded by what is left of it), or past [`BACKLOG_LIMIT`]
//!   of them. Giving up is reported ([`failed`](RunWriter::failed), [`failure`](RunWriter::failure)):
//!   the face ends the run with an error naming the cause, which the writer then tries to
//!   store as the run's end (within [`WRITE_TIMEOUT`] again) so the store agrees with what
//!   clients saw. Nothing of a failure is kept: the next write starts afresh, with no backoff
//!   left over;
//! - takes the run back when its lease ran out meanwhile (the store was unreachable for longer
//!   than the lease) and no one else took it or wrote to it;
//! - fires [`lost`](RunWriter::lost) when the run is no longer this owner's (its lease ran
//!   out and another process took it over, or the store gave up): the face must stop its
//!   loop, since the new owner continues it;
//! - sets the final status after the last event, so whoever read the end finds the status
//!   agreeing.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{EventJson, RunStatus, RunStore, RunStoreError, StoreFault};

/// The most events one append writes.
const BATCH: usize = 256;
/// The shortest time between two looks at the run after wake-ups (for a cancel).
const CANCEL_CHECK: Duration = Duration::from_millis(100);
/// How many events a run keeps while the store is unreachable before it gives up.
pub const BACKLOG_LIMIT: usize = 10_000;
/// How long a run's events may wait for the store, from the first try of a write it has not
/// taken, before the writer gives up (see [`RunWriter::failed`]). A call to the store is
/// bounded by what is left of it, so a store that hangs (a held lock, a server that does not
/// answer) fails as surely as one that refuses.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a writer gave up its run: the store did not take its events (or its end) within
/// [`WRITE_TIMEOUT`].
#[derive(Clone, Debug, thiserror::Error)]
#[error("the run store did not take the run's events within {within:?}: {fault}")]
#[non_exhaustive]
pub struct WriteFailure {
    /// The store's fault, in words a client may be shown.
    pub fault: StoreFault,
    /// How long the writer tried.
    pub within: Duration,
    /// The store's last error (for the log: it may hold the driver's text).
    pub reason: String,
}

/// The writer of one run its owner holds: it appends what is [pushed](Self::push) in
/// batches, renews the lease every third of it, reports what is [stored](Self::stored), a
/// cancel asked through the store ([`cancel_requested`](Self::cancel_requested)) and the loss
/// of the run ([`lost`](Self::lost)), and sets the status the run [ends](Self::finish) in
/// after its last event.
#[derive(Clone)]
pub struct RunWriter {
    shared: Arc<Shared>,
}

struct Shared {
    store: Arc<dyn RunStore>,
    run_id: String,
    owner: String,
    lease: Duration,
    queue: Mutex<Queue>,
    pushed: Notify,
    /// The number of the run's last stored event.
    stored: watch::Sender<u64>,
    cancel: CancellationToken,
    lost: CancellationToken,
    done: CancellationToken,
    /// Cancelled when the face goes away: the writer stops where it is, writing nothing
    /// more, and the run is left to be taken over.
    alive: CancellationToken,
    /// Fired when the writer gave up the run's events ([`Shared::failure`] says why).
    failed: CancellationToken,
    failure: Mutex<Option<WriteFailure>>,
    /// The store's most telling error since its last success: a refusal that names a cause
    /// (a full disk) rather than a call cut short by the timeout.
    telling: Mutex<Option<(StoreFault, String)>>,
    /// How long the store may take a write before the writer gives up.
    timeout: Duration,
}

#[derive(Debug, Default)]
struct Queue {
    events: Vec<EventJson>,
    end: Option<RunStatus>,
    /// The writer gave up the events: pushes are ignored, and only the end the face gives
    /// (with its last events) is written.
    gave_up: bool,
}

impl std::fmt::Debug for RunWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunWriter")
            .field("run_id", &self.shared.run_id)
            .field("owner", &self.shared.owner)
            .finish_non_exhaustive()
    }
}

impl RunWriter {
    /// Starts writing `run_id`, which `owner` holds (it began or claimed it) for `lease`,
    /// with `last_seq` events stored then (the [`RunRecord::last_seq`](super::RunRecord) it
    /// got; 0 for a new run). The writer stops without writing more when `alive` is cancelled.
    pub fn start(
        store: Arc<dyn RunStore>,
        run_id: impl Into<String>,
        last_seq: u64,
        owner: impl Into<String>,
        lease: Duration,
        alive: CancellationToken,
    ) -> Self {
        Self::start_within(store, run_id, last_seq, owner, lease, alive, WRITE_TIMEOUT)
    }

    /// [`start`](Self::start), giving up a write the store has not taken within `timeout`
    /// instead of [`WRITE_TIMEOUT`].
    pub fn start_within(
        store: Arc<dyn RunStore>,
        run_id: impl Into<String>,
        last_seq: u64,
        owner: impl Into<String>,
        lease: Duration,
        alive: CancellationToken,
        timeout: Duration,
    ) -> Self {
        let shared = Arc::new(Shared {
            store,
            run_id: run_id.into(),
            owner: owner.into(),
            lease: lease.max(Duration::from_millis(30)),
            queue: Mutex::default(),
            pushed: Notify::new(),
            stored: watch::Sender::new(last_seq),
            cancel: CancellationToken::new(),
            lost: CancellationToken::new(),
            done: CancellationToken::new(),
            alive,
            failed: CancellationToken::new(),
            failure: Mutex::new(None),
            telling: Mutex::new(None),
            timeout,
        });
        tokio::spawn(Arc::clone(&shared).write());
        Self { shared }
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.shared.run_id
    }

    /// Queues `event` for the store (a `Value`, or an [`EventJson`] the face serialized
    /// already). Ignored after [`finish`](Self::finish).
    pub fn push(&self, event: impl Into<EventJson>) {
        let mut queue = self.shared.lock();
        if queue.end.is_none() && !queue.gave_up {
            queue.events.push(event.into());
            drop(queue);
            self.shared.pushed.notify_one();
        }
    }

    /// Ends the run in `status` once every queued event is stored (`Paused` gives the run
    /// up for any process to claim; an end frees its session). Only the first call counts.
    pub fn finish(&self, status: RunStatus) {
        self.finish_with(std::iter::empty::<EventJson>(), status);
    }

    /// Queues the run's last `events` and ends it in `status` with them: the store takes the
    /// last events and the end in one step, so whoever reads the end finds the status
    /// agreeing. Ignored after [`finish`](Self::finish). After [`failed`](Self::failed),
    /// this is how the face hands over the end it showed (an error naming the cause): those
    /// events alone follow the ones stored.
    pub fn finish_with(
        &self,
        events: impl IntoIterator<Item = impl Into<EventJson>>,
        status: RunStatus,
    ) {
        let mut queue = self.shared.lock();
        if queue.end.is_none() {
            queue.events.extend(events.into_iter().map(Into::into));
            queue.end = Some(status);
            drop(queue);
            self.shared.pushed.notify_one();
        }
    }

    /// The number of the run's last event the store has: it changes after each write (the
    /// events pushed before are then readable on every process).
    pub fn stored(&self) -> watch::Receiver<u64> {
        self.shared.stored.subscribe()
    }

    /// Fires when someone asked to cancel the run (through the store).
    pub fn cancel_requested(&self) -> CancellationToken {
        self.shared.cancel.clone()
    }

    /// Fires when the run is no longer this owner's: another process took it over, the
    /// store stayed unreachable for [`BACKLOG_LIMIT`] events, or `alive` was cancelled.
    pub fn lost(&self) -> CancellationToken {
        self.shared.lost.clone()
    }

    /// Fires when the writer gave up the run's events: the store did not take them within
    /// [`WRITE_TIMEOUT`] ([`failure`](Self::failure) says why). The events not stored are
    /// dropped, and reported so: the face ends the run (stopping its loop) with an error naming
    /// the cause and hands that end over with [`finish_with`](Self::finish_with); the writer
    /// tries to store it, within [`WRITE_TIMEOUT`] again, and otherwise leaves the run to be
    /// taken over once its lease runs out.
    pub fn failed(&self) -> CancellationToken {
        self.shared.failed.clone()
    }

    /// Why the writer gave up, once [`failed`](Self::failed) fired.
    pub fn failure(&self) -> Option<WriteFailure> {
        self.shared
            .failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits until the writer is done: the end stored, or the run lost, or `alive` cancelled.
    pub async fn done(&self) {
        self.shared.done.cancelled().await;
    }

    /// Whether the writer is done.
    pub fn is_done(&self) -> bool {
        self.shared.done.is_cancelled()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn heartbeat(&self) -> Duration {
        self.lease / 3
    }

    async fn write(self: Arc<Self>) {
        self.run().await;
        if self.alive.is_cancelled() {
            // The face stopped: the run is left for another owner.
            self.lost.cancel();
        }
        self.done.cancel();
    }

    /// `call`, or the store's "did not answer" error when it has no answer by `deadline`.
    async fn bounded<T>(
        &self,
        deadline: Instant,
        call: impl Future<Output = Result<T, RunStoreError>>,
    ) -> Result<T, RunStoreError> {
        let within = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(within, call).await {
            Ok(answer) => answer,
            Err(_) => Err(RunStoreError::Unavailable {
                operation: "writing a run",
                fault: StoreFault::Unanswered,
                reason: format!("the run store did not answer within {:?}", self.timeout),
            }),
        }
    }

    async fn run(&self) {
        let mut renew_at = Instant::now() + self.heartbeat();
        let mut backoff = Duration::from_millis(20);
        let notifies = self.store.notifies();
        // When the run was last looked at, and when to look next after a wake-up.
        let mut looked = Instant::now();
        let mut look: Option<Instant> = None;
        // An append that failed without an answer: its size and the end it carried. The
        // store may have taken it (the answer was lost with the connection): that is looked
        // up before anything is written again, so no event is stored twice.
        let mut uncertain: Option<Option<RunStatus>> = None;
        // Events of appends given up while uncertain: the store may hold up to this many
        // beyond those known stored (taking the run back accepts them; see `reclaim`).
        let mut unsure: u64 = 0;
        // The events taken from the queue and not yet stored, in order: written again as
        // they are after a failure, never copied.
        let mut pending: Vec<EventJson> = Vec::new();
        // Until when the store may take the write under way (from its first try): past it,
        // the writer gives up. `None` while nothing waits for the store.
        let mut deadline: Option<Instant> = None;
        // After the writer gave up: until when the face may hand over the run's end.
        let mut handover_by: Option<Instant> = None;
        loop {
            if self.alive.is_cancelled() {
                return;
            }
            if let Some(end) = uncertain {
                let until = *deadline.get_or_insert_with(|| Instant::now() + self.timeout);
                match self
                    .bounded(until, self.settle(pending.len(), end, unsure))
                    .await
                {
                    Ok(stored) => {
                        uncertain = None;
                        if stored {
                            unsure = 0;
                            pending.clear();
                            deadline = None;
                            if end.is_some() {
                                return;
                            }
                        }
                    }
                    Err(err) => {
                        let outage = self.outage(&err, pending.len(), &mut backoff, until).await;
                        let state = (&mut pending, &mut uncertain, &mut deadline, &mut unsure);
                        if !after_outage(outage, true, state) {
                            return;
                        }
                        continue;
                    }
                }
            }
            let end = {
                let mut queue = self.lock();
                if pending.is_empty() {
                    pending = if queue.events.len() <= BATCH {
                        std::mem::take(&mut queue.events)
                    } else {
                        queue.events.drain(..BATCH).collect()
                    };
                }
                // The end goes with the last events, in one step.
                queue.end.filter(|_| queue.events.is_empty())
            };
            if !pending.is_empty() {
                let until = *deadline.get_or_insert_with(|| Instant::now() + self.timeout);
                let appended = self
                    .bounded(
                        until,
                        self.store
                            .append_json(&self.run_id, &self.owner, &pending, end),
                    )
                    .await;
                match appended {
                    Ok(seq) => {
                        backoff = Duration::from_millis(20);
                        (deadline, unsure) = (None, 0);
                        *self.telling.lock().unwrap_or_else(PoisonError::into_inner) = None;
                        pending.clear();
                        self.stored.send_replace(seq);
                        if end.is_some() {
                            return;
                        }
                        continue;
                    }
                    Err(RunStoreError::LeaseLost { .. } | RunStoreError::NotFound(_)) => {
                        match self.bounded(until, self.reclaim(unsure)).await {
                            Ok(true) => {
                                unsure = 0;
                                renew_at = Instant::now() + self.heartbeat();
                                continue;
                            }
                            Ok(false) => return self.lose("another owner holds it now"),
                            Err(err) => {
                                let outage =
                                    self.outage(&err, pending.len(), &mut backoff, until).await;
                                let state =
                                    (&mut pending, &mut uncertain, &mut deadline, &mut unsure);
                                if !after_outage(outage, false, state) {
                                    return;
                                }
                                continue;
                            }
                        }
                    }
                    Err(err) => {
                        uncertain = Some(end);
                        let outage = self.outage(&err, pending.len(), &mut backoff, until).await;
                        let state = (&mut pending, &mut uncertain, &mut deadline, &mut unsure);
                        if !after_outage(outage, true, state) {
                            return;
                        }
                        continue;
                    }
                }
            }
            if let Some(status) = end {
                return self.end(status).await;
            }
            if self.failed.is_cancelled() && handover_by.is_none() {
                handover_by = Some(Instant::now() + self.timeout);
            }
            let renew = tokio::select! {
                () = self.pushed.notified() => continue,
                () = tokio::time::sleep_until(renew_at) => true,
                // A wake-up (perhaps a cancel, often this writer's own append) schedules a
                // look, at most every CANCEL_CHECK, and writing goes on meanwhile.
                () = self.store.changed(&self.run_id, self.heartbeat()), if notifies && look.is_none() => {
                    look = Some(looked + CANCEL_CHECK);
                    continue;
                }
                () = tokio::time::sleep_until(look.unwrap_or(renew_at)), if look.is_some() => false,
                () = self.alive.cancelled() => return,
                () = tokio::time::sleep_until(handover_by.unwrap_or(renew_at)), if handover_by.is_some() => {
                    return self.lose("the writer gave the run up and no end was handed over");
                }
            };
            let until = Instant::now() + self.timeout;
            if !renew {
                look = None;
                looked = Instant::now();
                match self.bounded(until, self.store.get(&self.run_id)).await {
                    // Only while it is ours: a run handed over or taken over is not.
                    Ok(record)
                        if record.cancel_requested
                            && record.status == RunStatus::Running
                            && record.owner.as_deref() == Some(&*self.owner) =>
                    {
                        self.cancel.cancel();
                    }
                    Ok(_) => {}
                    Err(err) => tracing::debug!(run = %self.run_id, "reading a run: {err}"),
                }
                continue;
            }
            match self
                .bounded(
                    until,
                    self.store.renew(&self.run_id, &self.owner, self.lease),
                )
                .await
            {
                Ok(record) => {
                    renew_at = Instant::now() + self.heartbeat();
                    if record.cancel_requested {
                        self.cancel.cancel();
                    }
                }
                Err(RunStoreError::LeaseLost { .. } | RunStoreError::NotFound(_)) => {
                    match self.bounded(until, self.reclaim(unsure)).await {
                        Ok(true) => {
                            unsure = 0;
                            renew_at = Instant::now() + self.heartbeat();
                            continue;
                        }
                        Ok(false) => {
                            return self.lose("its lease ran out and another owner took it");
                        }
                        Err(err) => {
                            tracing::warn!(run = %self.run_id, "taking a run back failed: {err}");
                            renew_at = Instant::now() + backoff;
                            backoff = (backoff * 2).min(Duration::from_secs(1));
                        }
                    }
                }
                Err(err) => {
                    tracing::warn!(run = %self.run_id, "renewing a run's lease failed: {err}");
                    renew_at = Instant::now() + backoff;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    /// Whether an append whose answer was lost (the connection dropped, perhaps after the
    /// store committed it) stored its `count` events after those stored (and its `end`):
    /// then they count as stored. `unsure` events of appends given up before may be stored
    /// too; an append after them carries the run's end (pushes are ignored once the writer
    /// gave up), which the status tells. Err when the store does not answer.
    async fn settle(
        &self,
        count: usize,
        end: Option<RunStatus>,
        unsure: u64,
    ) -> Result<bool, RunStoreError> {
        let record = self.store.get(&self.run_id).await?;
        let through = *self.stored.borrow() + count as u64;
        // Ours: held by this owner, or ended by this append (which gave up the lease).
        let ours = record.owner.as_deref() == Some(&*self.owner)
            || (end.is_some() && Some(record.status) == end && record.owner.is_none());
        let taken = (through..=through + unsure).contains(&record.last_seq)
            && (unsure == 0 || end.is_none() || Some(record.status) == end);
        if ours && taken {
            self.stored.send_replace(record.last_seq);
            return Ok(true);
        }
        Ok(false)
    }

    /// After the lease ran out while the store was unreachable, takes the run back when no
    /// one else took it or wrote to it meanwhile (it is still running, with the events this
    /// writer stored, and at most the `unsure` ones of appends whose answer was lost and that
    /// it gave up: the store may have taken those). True when it is ours again; Err when the
    /// store does not answer (then it is tried again).
    async fn reclaim(&self, unsure: u64) -> Result<bool, RunStoreError> {
        if self.alive.is_cancelled() {
            return Ok(false);
        }
        let through = *self.stored.borrow();
        let ours = |last_seq: u64| {
            let held = (through..=through + unsure).contains(&last_seq);
            if held {
                self.stored.send_replace(last_seq);
            }
            held
        };
        let record = self.store.get(&self.run_id).await?;
        if record.status != RunStatus::Running
            || !(through..=through + unsure).contains(&record.last_seq)
        {
            return Ok(false);
        }
        match self
            .store
            .claim(&self.run_id, &self.owner, self.lease)
            .await
        {
            Ok(record) if ours(record.last_seq) => {
                tracing::info!(run = %self.run_id, "took the run back after its lease ran out");
                Ok(true)
            }
            // Held: perhaps by this owner again (its process's takeover found the run
            // expired and claimed it for the same owner), which a renewal tells.
            Err(RunStoreError::Held { .. }) => {
                match self
                    .store
                    .renew(&self.run_id, &self.owner, self.lease)
                    .await
                {
                    Ok(record) => Ok(ours(record.last_seq)),
                    Err(RunStoreError::LeaseLost { .. } | RunStoreError::NotFound(_)) => Ok(false),
                    Err(err) => Err(err),
                }
            }
            // Another owner wrote between the two reads; it holds the truth, and its run
            // is taken over once this claim's lease runs out.
            Ok(_) | Err(RunStoreError::LeaseLost { .. } | RunStoreError::NotFound(_)) => Ok(false),
            Err(err) => Err(err),
        }
    }

    fn lose(&self, why: &str) {
        tracing::warn!(run = %self.run_id, "the run is no longer ours: {why}");
        self.lost.cancel();
    }

    /// The store failed a write (`err`): keeps the events (`taken` out of the queue, and the
    /// queue's; up to [`BACKLOG_LIMIT`]) and waits to try again, or gives them up when the
    /// store has not taken them by `deadline` (see [`Outage`]).
    async fn outage(
        &self,
        err: &RunStoreError,
        taken: usize,
        backoff: &mut Duration,
        deadline: Instant,
    ) -> Outage {
        let backlog = taken + self.lock().events.len();
        tracing::warn!(run = %self.run_id, backlog, "writing a run's events failed: {err}");
        let fault = err.fault().unwrap_or(StoreFault::Failed);
        {
            let mut telling = self.telling.lock().unwrap_or_else(PoisonError::into_inner);
            if fault != StoreFault::Unanswered || telling.is_none() {
                *telling = Some((fault, err.to_string()));
            }
        }
        if backlog > BACKLOG_LIMIT {
            self.lose("the run store stayed unreachable");
            return Outage::Stop;
        }
        let late = Instant::now() >= deadline;
        if late && !self.failed.is_cancelled() {
            return self.give_up(err);
        }
        // The end of a run given up is tried until the store takes it (each try bounded),
        // so the run ends as its clients saw once the cause is gone.
        let wake = if late {
            Instant::now() + *backoff
        } else {
            (Instant::now() + *backoff).min(deadline)
        };
        tokio::select! {
            () = tokio::time::sleep_until(wake) => {}
            () = self.alive.cancelled() => return Outage::Stop,
        }
        *backoff = (*backoff * 2).min(Duration::from_secs(1));
        if late { Outage::Again } else { Outage::Retry }
    }

    /// The store did not take a write within the timeout: the run's events not stored are
    /// dropped and the failure reported (the face hands over the end it showed, which is
    /// written next).
    fn give_up(&self, err: &RunStoreError) -> Outage {
        let (fault, reason) = self
            .telling
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_else(|| (err.fault().unwrap_or(StoreFault::Failed), err.to_string()));
        let failure = WriteFailure {
            fault,
            within: self.timeout,
            reason,
        };
        tracing::error!(
            run = %self.run_id,
            fault = failure.fault.as_str(),
            "giving the run up: {failure}; last error: {err}"
        );
        *self.failure.lock().unwrap_or_else(PoisonError::into_inner) = Some(failure);
        {
            let mut queue = self.lock();
            queue.gave_up = true;
            queue.events.clear();
            queue.end = None;
        }
        self.failed.cancel();
        Outage::GaveUp
    }

    /// Sets the status the run ended in, retrying while the store fails, for at most the
    /// timeout.
    async fn end(&self, status: RunStatus) {
        let mut backoff = Duration::from_millis(20);
        let deadline = Instant::now() + self.timeout;
        loop {
            let set = self.store.set_status(&self.run_id, &self.owner, status);
            match self.bounded(deadline, set).await {
                Ok(()) => return,
                Err(RunStoreError::LeaseLost { .. } | RunStoreError::NotFound(_)) => {
                    return self.lose("it was taken over before its end was stored");
                }
                Err(err) => match self.outage(&err, 0, &mut backoff, deadline).await {
                    Outage::Retry => {}
                    // The end is the last write: nothing follows to be stored.
                    Outage::Again | Outage::GaveUp | Outage::Stop => return,
                },
            }
        }
    }
}

/// What the writer does after the store failed a write.
enum Outage {
    /// Try again (after the backoff).
    Retry,
    /// Try again (after the backoff), the store's time for the write renewed: the end of a
    /// run given up, tried until the store takes it.
    Again,
    /// The store did not take the write in time: the events were dropped and the failure
    /// reported; write the end the face hands over.
    GaveUp,
    /// Stop writing.
    Stop,
}

/// The write under way, as the writer's loop keeps it: the pending events, the end of an
/// append that may have been stored, the deadline, and the count of events that may be stored.
type WriteState<'a> = (
    &'a mut Vec<EventJson>,
    &'a mut Option<Option<RunStatus>>,
    &'a mut Option<Instant>,
    &'a mut u64,
);

/// Applies `outage` to the write under way; `false` when the writer stops. Giving up drops
/// the pending events; when the failed write may have been stored (`maybe_stored`), they
/// count as events the store may hold.
fn after_outage(outage: Outage, maybe_stored: bool, state: WriteState<'_>) -> bool {
    let (pending, uncertain, deadline, unsure) = state;
    match outage {
        Outage::Retry => {}
        Outage::Again => *deadline = None,
        Outage::GaveUp => {
            if maybe_stored {
                *unsure += pending.len() as u64;
            }
            (*pending, *uncertain, *deadline) = (Vec::new(), None, None);
        }
        Outage::Stop => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::runs::{FaultyRunStore, MemoryRunStore};
    use serde_json::{Value, json};

    /// How long a test waits for the writer before failing.
    const WAIT: Duration = Duration::from_secs(10);

    /// `what`, failing the test if it takes longer than [`WAIT`].
    async fn soon<F: std::future::Future>(what: F) -> F::Output {
        tokio::time::timeout(WAIT, what)
            .await
            .expect("the writer did not get there in time")
    }

    /// A faulty memory store with run `r` of session `s` begun by `me` for `lease`.
    async fn faulty(lease: Duration) -> Arc<FaultyRunStore> {
        let store = Arc::new(FaultyRunStore::new(Arc::new(MemoryRunStore::new())));
        store.begin("s", "r", "me", lease).await.unwrap();
        store
    }

    /// A writer of a new run `r`, held by `me` for `lease`, giving up writes after `timeout`.
    fn writer_within(store: &Arc<FaultyRunStore>, lease: Duration, timeout: Duration) -> RunWriter {
        let store: Arc<dyn RunStore> = store.clone();
        RunWriter::start_within(
            store,
            "r",
            0,
            "me",
            lease,
            CancellationToken::new(),
            timeout,
        )
    }

    /// A writer of run `r`, held by `me` for `lease` with `last_seq` events stored.
    fn started(store: &Arc<dyn RunStore>, last_seq: u64, lease: Duration) -> RunWriter {
        let alive = CancellationToken::new();
        RunWriter::start(Arc::clone(store), "r", last_seq, "me", lease, alive)
    }

    /// Waits until the writer has stored `n` events.
    async fn stored(writer: &RunWriter, n: u64) {
        soon(writer.stored().wait_for(|stored| *stored == n))
            .await
            .unwrap();
    }

    /// Run `r`'s status and last number.
    async fn status_and_last(store: &dyn RunStore) -> (RunStatus, u64) {
        let record = store.get("r").await.unwrap();
        (record.status, record.last_seq)
    }

    /// Run `r`'s stored events.
    async fn values(store: &dyn RunStore) -> Vec<Value> {
        let events = store.events_after("r", 0, 10).await.unwrap();
        events.into_iter().map(|e| e.event).collect()
    }

    /// An append committed whose answer was lost is not written again: each event is stored
    /// once (before, the retry stored the batch a second time).
    #[tokio::test]
    async fn an_append_whose_answer_was_lost_is_not_stored_twice() {
        for end in [None, Some(RunStatus::Finished)] {
            let lease = Duration::from_secs(30);
            let store = faulty(lease).await;
            store.lose_next_answer();
            let writer = writer_within(&store, lease, WRITE_TIMEOUT);
            match end {
                None => {
                    writer.push(json!(0));
                    writer.push(json!(1));
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    writer.finish_with([json!(2)], RunStatus::Finished);
                }
                Some(status) => writer.finish_with([json!(0), json!(1), json!(2)], status),
            }
            soon(writer.done()).await;
            assert!(!writer.lost().is_cancelled());
            let values = values(&*store).await;
            assert_eq!(
                values,
                [json!(0), json!(1), json!(2)],
                "ending with {end:?}"
            );
            assert_eq!(status_and_last(&*store).await, (RunStatus::Finished, 3));
        }
    }

    /// A store that refuses every write past the timeout fails the run, saying why; the end
    /// the face then hands over is stored once the store is back, after what was stored.
    #[tokio::test]
    async fn a_store_that_refuses_past_the_timeout_fails_the_run_and_takes_its_end_later() {
        let lease = Duration::from_secs(30);
        let store = faulty(lease).await;
        let timeout = Duration::from_millis(300);
        let writer = writer_within(&store, lease, timeout);
        writer.push(json!("started"));
        stored(&writer, 1).await;
        store.cut_off(true);
        writer.push(json!("lost"));
        tokio::time::timeout(WAIT, writer.failed().cancelled())
            .await
            .expect("the writer never gave up");
        let failure = writer.failure().unwrap();
        assert_eq!(failure.fault, StoreFault::Unreachable);
        assert_eq!(failure.within, timeout);
        assert!(failure.reason.contains("cut off"), "{}", failure.reason);
        // Pushed after giving up: dropped. The face's end is written, once the store is back.
        writer.push(json!("late"));
        writer.finish_with([json!("error")], RunStatus::Failed);
        tokio::time::sleep(timeout * 3).await;
        assert!(
            !writer.is_done(),
            "the end is tried until the store takes it"
        );
        store.cut_off(false);
        soon(writer.done()).await;
        assert_eq!(status_and_last(&*store).await, (RunStatus::Failed, 2));
        let values = values(&*store).await;
        assert_eq!(values, [json!("started"), json!("error")]);
    }

    /// The store crashed after taking an append, before answering, and stayed down past the
    /// timeout and the lease: the writer gave the run up not knowing whether that append was
    /// stored. Once the store is back, the run (still running, still unclaimed) is taken
    /// back with that append counted, and the end the face handed over is stored (before, the
    /// writer saw one event more than it knew of, called the run someone else's, and left it
    /// to be taken over and run again).
    #[tokio::test]
    async fn a_store_that_crashed_after_an_append_takes_the_end_once_back() {
        let lease = Duration::from_millis(400);
        let store = faulty(lease).await;
        let timeout = Duration::from_millis(300);
        let writer = writer_within(&store, lease, timeout);
        writer.push(json!("started"));
        stored(&writer, 1).await;
        store.crash_after_next_append();
        writer.push(json!("taken, unanswered"));
        tokio::time::timeout(WAIT, writer.failed().cancelled())
            .await
            .expect("the writer never gave up");
        writer.finish_with([json!("error")], RunStatus::Failed);
        // Down for longer than the lease.
        tokio::time::sleep(lease * 2).await;
        store.cut_off(false);
        soon(writer.done()).await;
        assert!(!writer.lost().is_cancelled(), "the run was called lost");
        assert_eq!(status_and_last(&*store).await, (RunStatus::Failed, 3));
        let values = values(&*store).await;
        assert_eq!(
            values,
            [json!("started"), json!("taken, unanswered"), json!("error")]
        );
    }

    /// A store that does not answer at all fails the run within the timeout too.
    #[tokio::test]
    async fn a_store_that_does_not_answer_fails_the_run_within_the_timeout() {
        let lease = Duration::from_secs(30);
        let store = faulty(lease).await;
        store.hang(true);
        let writer = writer_within(&store, lease, Duration::from_millis(300));
        writer.push(json!("started"));
        tokio::time::timeout(WAIT, writer.failed().cancelled())
            .await
            .expect("a hung store held the writer");
        assert_eq!(writer.failure().unwrap().fault, StoreFault::Unanswered);
        store.hang(false);
        writer.finish_with([json!("error")], RunStatus::Failed);
        soon(writer.done()).await;
        assert_eq!(store.get("r").await.unwrap().status, RunStatus::Failed);
    }

    /// An outage shorter than the timeout costs nothing: the run goes on, every event stored
    /// once, and nothing of the outage (no failure, no backoff) is left.
    #[tokio::test]
    async fn an_outage_within_the_timeout_loses_nothing_and_leaves_nothing_behind() {
        let lease = Duration::from_secs(30);
        let store = faulty(lease).await;
        let writer = writer_within(&store, lease, Duration::from_secs(30));
        store.cut_off(true);
        writer.push(json!(0));
        tokio::time::sleep(Duration::from_millis(1500)).await;
        store.cut_off(false);
        stored(&writer, 1).await;
        writer.finish_with([json!(1)], RunStatus::Finished);
        soon(writer.done()).await;
        assert!(!writer.failed().is_cancelled() && writer.failure().is_none());
        assert_eq!(status_and_last(&*store).await, (RunStatus::Finished, 2));
    }

    #[tokio::test]
    async fn a_run_whose_lease_ran_out_with_no_one_taking_it_is_taken_back_and_goes_on() {
        let store: Arc<dyn RunStore> = Arc::new(MemoryRunStore::new());
        let lease = Duration::from_secs(30);
        store.begin("s", "r", "me", lease).await.unwrap();
        store
            .append_events("r", "me", &[json!(0), json!(1)], None)
            .await
            .unwrap();
        // The owner's lease runs out (its store was unreachable for longer, say); no one
        // takes the run over or writes to it meanwhile.
        store
            .renew("r", "me", Duration::from_millis(1))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let writer = started(&store, 2, lease);
        let stored = writer.stored();
        writer.push(json!(2));
        writer.finish_with([json!(3)], RunStatus::Finished);
        soon(writer.done()).await;
        assert!(!writer.lost().is_cancelled());
        assert_eq!(*stored.borrow(), 4);
        assert_eq!(status_and_last(&*store).await, (RunStatus::Finished, 4));
        let values = values(&*store).await;
        assert_eq!(values, [json!(0), json!(1), json!(2), json!(3)]);
    }

    #[tokio::test]
    async fn writes_events_then_the_end_and_sees_a_cancel() {
        let store: Arc<dyn RunStore> = Arc::new(MemoryRunStore::new());
        let lease = Duration::from_millis(90);
        store.begin("s", "r", "me", lease).await.unwrap();
        let writer = started(&store, 0, lease);
        let stored = writer.stored();
        for n in 0..600 {
            writer.push(json!({ "n": n }));
        }
        store.request_cancel("r").await.unwrap();
        tokio::time::timeout(
            Duration::from_secs(10),
            writer.cancel_requested().cancelled(),
        )
        .await
        .unwrap();
        // Held past several leases by the heartbeat.
        tokio::time::sleep(lease * 3).await;
        writer.push(json!({ "n": 600 }));
        writer.finish(RunStatus::Cancelled);
        writer.push(json!("ignored"));
        soon(writer.done()).await;
        assert!(!writer.lost().is_cancelled());
        let record = store.get("r").await.unwrap();
        assert_eq!(
            (record.status, record.last_seq),
            (RunStatus::Cancelled, 601)
        );
        let events = store.events_after("r", 599, 10).await.unwrap();
        assert_eq!(events[1].event, json!({ "n": 600 }));
        assert_eq!(*stored.borrow(), 601);
    }

    #[tokio::test]
    async fn a_run_taken_over_is_lost() {
        let store: Arc<dyn RunStore> = Arc::new(MemoryRunStore::new());
        let lease = Duration::from_millis(60);
        store.begin("s", "r", "me", lease).await.unwrap();
        let alive = CancellationToken::new();
        let writer = RunWriter::start(Arc::clone(&store), "r", 0, "me", lease, alive.clone());
        // The owner stalls (its writer stops) past the lease; another process claims it.
        alive.cancel();
        writer.done().await;
        tokio::time::sleep(lease * 2).await;
        store.claim("r", "other", lease).await.unwrap();
        // The new owner writes: the run is not taken back, even once its lease runs out.
        store
            .append_events("r", "other", &[json!(0)], None)
            .await
            .unwrap();
        let again = started(&store, 0, lease);
        again.push(json!(1));
        soon(again.lost().cancelled()).await;
        let record = store.get("r").await.unwrap();
        assert_eq!(
            (record.last_seq, record.owner.as_deref()),
            (1, Some("other"))
        );
    }
}
