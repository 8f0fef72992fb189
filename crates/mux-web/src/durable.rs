//! The run store behind the web face, so any process serves any thread.
//!
//! - Each process is one owner (a random id). A run it starts or resumes is begun (or handed
//!   over) in the store under a lease; a writer task per run appends its events in batches,
//!   renews the lease every third of it, and cancels the loop when another process asked.
//! - A client reads only events the store has, so every process replays the same numbers.
//! - A paused run whose loop waits only for approvals, questions or frontend results is
//!   evicted: the store and the session hold it, and a resume on any process rebuilds it.
//! - Each process claims runs whose owner's lease ran out and continues them from the session.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mux_orchestrator::runs::{RunStatus, RunStore, RunStoreError, StoredEvent};
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::buffer::{Ending, RunBuffer};
use crate::security::Principal;
use crate::thread::Thread;
use crate::types::{Interrupt, Outcome};

/// The most events one append writes.
const BATCH: usize = 256;
/// How many events a run keeps while the store is unreachable before it fails.
pub(crate) const BACKLOG_LIMIT: usize = 10_000;
/// The shortest time between two looks at a run's cancel flag.
const CANCEL_CHECK: Duration = Duration::from_millis(100);

/// This process as an owner of runs in the run store.
#[derive(Clone)]
pub(crate) struct Durable {
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) owner: Arc<str>,
    pub(crate) lease: Duration,
    /// Cancelled when the router goes away: its writers stop where they are.
    pub(crate) alive: CancellationToken,
    /// The runs a writer of this process holds.
    held: Arc<Mutex<HashSet<String>>>,
}

impl Durable {
    pub(crate) fn new(store: Arc<dyn RunStore>, lease: Duration) -> Self {
        Self {
            store,
            owner: format!("web-{}", crate::security::unguessable()).into(),
            lease,
            alive: CancellationToken::new(),
            held: Arc::default(),
        }
    }

    fn heartbeat(&self) -> Duration {
        self.lease / 3
    }

    /// Whether a writer of this process holds `store_id`.
    pub(crate) fn holds(&self, store_id: &str) -> bool {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(store_id)
    }

    /// Starts the writer of a run this process holds in the store.
    pub(crate) fn keep(&self, store_id: String, run: Arc<RunBuffer>, thread: Arc<Thread>) {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(store_id.clone());
        let durable = self.clone();
        tokio::spawn(async move {
            durable.write(&store_id, &run, &thread).await;
            durable
                .held
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&store_id);
        });
    }

    /// The writer: appends events, renews the lease, acts on a cancel, and sets the status
    /// the run ended with.
    async fn write(&self, id: &str, run: &RunBuffer, thread: &Thread) {
        let mut pushed = run.watch_pushed();
        let mut renewed = Instant::now();
        let mut checked = Instant::now();
        let mut backoff = Duration::from_millis(20);
        let mut cancel_seen = false;
        // When to look at the run for a cancel, after a wake-up.
        let mut look: Option<Instant> = None;
        let notifies = self.store.notifies();
        loop {
            if self.alive.is_cancelled() {
                return;
            }
            pushed.borrow_and_update();
            let batch = run.unconfirmed(BATCH);
            if !batch.is_empty() {
                let values: Vec<Value> = batch
                    .iter()
                    .map(|e| serde_json::from_str(e).unwrap_or(Value::Null))
                    .collect();
                // The end is stored with the last events, before a client sees them:
                // whoever saw it finds the run's status agreeing, on every process.
                let last = batch.len() == run.backlog();
                let end = run
                    .pushed_ending()
                    .filter(|_| last)
                    .and_then(|ending| final_status(ending, thread, cancel_seen));
                match self
                    .store
                    .append_events(id, &self.owner, &values, end)
                    .await
                {
                    Ok(_) => {
                        backoff = Duration::from_millis(20);
                        run.confirm(batch.len());
                        if end.is_some() {
                            return;
                        }
                        continue;
                    }
                    Err(RunStoreError::LeaseLost { .. } | RunStoreError::NotFound(_)) => {
                        if end.is_some() && self.ended(id, run, batch.len(), end).await {
                            return;
                        }
                        if self.reclaim(id, run).await {
                            continue;
                        }
                        return self.lost(id, run, thread);
                    }
                    Err(err) => {
                        if !self.outage(id, run, thread, &err, &mut backoff).await {
                            return;
                        }
                        continue;
                    }
                }
            }
            if let Some(status) = run
                .ending()
                .and_then(|ending| final_status(ending, thread, cancel_seen))
            {
                return self.end(id, status).await;
            }
            let heartbeat = renewed + self.heartbeat();
            let due = tokio::select! {
                // Write at once: what is pushed while a write is in flight goes in the next
                // batch, so batches grow with the store's latency and nothing waits on a timer.
                _ = pushed.changed() => continue,
                () = tokio::time::sleep_until(heartbeat) => true,
                // A store that polls would wake every writer all the time: the heartbeat
                // looks for cancels then (and a cancel made here is delivered directly).
                // A wake-up (perhaps a cancel, often this writer's own append) schedules a
                // look, at most every CANCEL_CHECK, and writing goes on meanwhile.
                () = self.store.changed(id, self.heartbeat()), if notifies && look.is_none() => {
                    look = Some(checked + CANCEL_CHECK);
                    continue;
                }
                () = tokio::time::sleep_until(look.unwrap_or(heartbeat)), if look.is_some() => false,
                () = self.alive.cancelled() => return,
            };
            if !due {
                look = None;
                checked = Instant::now();
                match self.store.get(id).await {
                    Ok(record)
                        if record.status == RunStatus::Running
                            && record.owner.as_deref() == Some(&*self.owner) =>
                    {
                        if record.cancel_requested && !cancel_seen {
                            cancel_seen = true;
                            thread.cancel();
                        }
                    }
                    // Taken over or handed over: the heartbeat below tells which.
                    Ok(_) => {}
                    Err(err) => tracing::debug!(run = id, "reading a run: {err}"),
                }
                if Instant::now() < heartbeat {
                    continue;
                }
            }
            checked = Instant::now();
            match self.store.renew(id, &self.owner, self.lease).await {
                Ok(record) => {
                    renewed = Instant::now();
                    if record.cancel_requested && !cancel_seen {
                        cancel_seen = true;
                        thread.cancel();
                    }
                }
                Err(RunStoreError::LeaseLost { .. } | RunStoreError::NotFound(_)) => {
                    if !self.reclaim(id, run).await {
                        return self.lost(id, run, thread);
                    }
                }
                Err(err) => tracing::warn!(run = id, "renewing a run's lease failed: {err}"),
            }
        }
    }

    /// The store was unreachable: keeps the events (up to [`BACKLOG_LIMIT`]) and waits.
    /// False when the run gave up: its loop is stopped, the rest is for a takeover.
    async fn outage(
        &self,
        id: &str,
        run: &RunBuffer,
        thread: &Thread,
        err: &RunStoreError,
        backoff: &mut Duration,
    ) -> bool {
        tracing::warn!(
            run = id,
            backlog = run.backlog(),
            "writing a run's events failed: {err}"
        );
        if run.backlog() > BACKLOG_LIMIT {
            tracing::error!(
                run = id,
                "the run store stayed unreachable for {BACKLOG_LIMIT} events; stopping the run \
                 (another process continues it from the session once the store is back)"
            );
            thread.abort();
            return false;
        }
        tokio::select! {
            () = tokio::time::sleep(*backoff) => {}
            () = self.alive.cancelled() => return false,
        }
        *backoff = (*backoff * 2).min(Duration::from_secs(1));
        true
    }

    /// Whether an earlier try of the last append (whose answer was lost with the store's
    /// connection) did store the batch and the end: then its events become readable.
    async fn ended(&self, id: &str, run: &RunBuffer, count: usize, end: Option<RunStatus>) -> bool {
        let Ok(record) = self.store.get(id).await else {
            return false;
        };
        let stored = record.last_seq == run.stored_through() + count as u64;
        if stored && Some(record.status) == end {
            run.confirm(count);
            return true;
        }
        false
    }

    /// After the lease ran out with no one else taking the run (the store was unreachable
    /// for longer than the lease), takes it back: true when nothing was written meanwhile.
    async fn reclaim(&self, id: &str, run: &RunBuffer) -> bool {
        if run.is_done() && run.backlog() == 0 {
            return false;
        }
        match self.store.claim(id, &self.owner, self.lease).await {
            Ok(record) if record.last_seq == run.stored_through() => true,
            Ok(_) => {
                // Another owner wrote after us; it holds the truth.
                false
            }
            Err(_) => false,
        }
    }

    /// Another process took the run (or it was handed over here): stop what is still ours.
    fn lost(&self, id: &str, run: &RunBuffer, thread: &Thread) {
        if run.is_done() {
            // Handed over to the next run of this thread, which holds the loop now.
            return;
        }
        tracing::warn!(
            run = id,
            "another process took this run over; stopping its loop here"
        );
        thread.abort();
    }

    /// Sets the status a run ended with, retrying while the store is unreachable.
    async fn end(&self, id: &str, status: RunStatus) {
        let mut backoff = Duration::from_millis(20);
        loop {
            match self.store.set_status(id, &self.owner, status).await {
                Ok(()) => return,
                Err(RunStoreError::LeaseLost { .. } | RunStoreError::NotFound(_)) => return,
                Err(err) => {
                    tracing::warn!(run = id, "setting a run's status failed: {err}");
                    tokio::select! {
                        () = tokio::time::sleep(backoff) => {}
                        () = self.alive.cancelled() => return,
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    /// What a stored run ended waiting for (a paused run's last event).
    pub(crate) async fn waits(&self, store_id: &str) -> Result<Waiting, RunStoreError> {
        let record = self.store.get(store_id).await?;
        let last = self
            .store
            .events_after(store_id, record.last_seq.saturating_sub(1), 1)
            .await?;
        Ok(last.first().map(waiting_on).unwrap_or_default())
    }
}

/// The status a run whose events ended with `ending` takes, or `None` while its loop waits
/// here (for a question's answer or a frontend result: the run stays held).
fn final_status(ending: Ending, thread: &Thread, cancel_seen: bool) -> Option<RunStatus> {
    match ending {
        Ending::Finished => Some(RunStatus::Finished),
        Ending::Cancelled => Some(RunStatus::Cancelled),
        Ending::Failed => Some(RunStatus::Failed),
        // Evicted: the store holds the pause.
        Ending::Paused if thread.was_evicted() && !cancel_seen => Some(RunStatus::Paused),
        // The loop it held went on and ended (or was cancelled) with no run attached.
        Ending::Paused if !thread.is_live() && cancel_seen => Some(RunStatus::Cancelled),
        Ending::Paused if !thread.is_live() => Some(RunStatus::Finished),
        Ending::Paused => None,
    }
}

/// What a paused run waits for.
#[derive(Debug, Default)]
pub(crate) struct Waiting {
    /// Its interrupts (approvals and questions).
    pub(crate) interrupts: Vec<Interrupt>,
    /// The frontend calls it waits for (listed only when it waits for nothing else).
    pub(crate) frontend: Vec<String>,
}

/// What `event` ends its run waiting for (nothing unless it is a `RUN_FINISHED` that pauses).
pub(crate) fn waiting_on(event: &StoredEvent) -> Waiting {
    match serde_json::from_value::<crate::types::Event>(event.event.clone()) {
        Ok(crate::types::Event::RunFinished { outcome, .. }) => match outcome {
            Outcome::Interrupt { interrupts } => Waiting {
                interrupts,
                frontend: Vec::new(),
            },
            Outcome::Success {
                pending_tool_call_ids,
            } => Waiting {
                interrupts: Vec::new(),
                frontend: pending_tool_call_ids,
            },
            Outcome::Cancelled => Waiting::default(),
        },
        _ => Waiting::default(),
    }
}

/// How the stored event `event` ends its run, if it does.
pub(crate) fn ending_of(event: &StoredEvent) -> Option<Ending> {
    serde_json::from_value::<crate::types::Event>(event.event.clone())
        .ok()
        .as_ref()
        .and_then(Ending::of)
}

/// The prefix of every web run's id in the run store: the web face takes over only these
/// (other faces sharing the store keep theirs under their own prefixes).
pub(crate) const PREFIX: &str = "web.";

/// The run store's id of `principal`'s run `run_id`: run ids are per principal, so the
/// principal is part of it (hex, so no name can forge another's), after [`PREFIX`].
pub(crate) fn store_id(principal: &Principal, run_id: &str) -> String {
    let hex: String = principal
        .name()
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("{PREFIX}{hex}.{run_id}")
}

/// The principal and run id of a run store id.
pub(crate) fn parse_store_id(id: &str) -> Option<(Principal, String)> {
    let (hex, run_id) = id.strip_prefix(PREFIX)?.split_once('.')?;
    if hex.len() % 2 != 0 {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect();
    let name = String::from_utf8(bytes?).ok()?;
    Some((Principal::new(name), run_id.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_ids_keep_principals_apart_and_parse_back() {
        for name in ["local", "alice", "a.b", "", "名前", "x.y.z"] {
            let id = store_id(&Principal::new(name), "run.1");
            let (principal, run) = parse_store_id(&id).unwrap();
            assert_eq!(principal.name(), name);
            assert_eq!(run, "run.1");
        }
        assert_ne!(
            store_id(&Principal::new("a"), "b.c"),
            store_id(&Principal::new("a.b"), "c")
        );
        for bad in [
            "",
            "nodot",
            "web.nodot",
            "web.6.x",
            "web.zz.x",
            "web.ff.x",
            "61.x",
            "a2a.61.x",
        ] {
            assert!(parse_store_id(bad).is_none(), "{bad}");
        }
    }
}
