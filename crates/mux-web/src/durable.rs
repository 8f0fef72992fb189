//! The run store behind the web face, so any process serves any thread.
//!
//! - Each process is one [`RunOwner`], the store's component every face holds its runs
//!   through. A run it starts or resumes is begun (or handed over) by it; the run store's
//!   [`RunWriter`] appends its events in batches, keeps the run held, and reports a cancel
//!   asked by another process and the loss of the run; [`Durable::keep`] connects it to the
//!   run's buffer and loop.
//! - A client reads only events the store has, so every process replays the same numbers.
//! - A paused run whose loop waits only for approvals, questions or frontend results is
//!   evicted: the store and the session hold it, and a resume on any process rebuilds it.
//! - The owner takes over runs of the web face ([`PREFIX`]) whose process stopped (the
//!   rule and the pace are the owner's); the registry continues them from the session.

use std::sync::Arc;

use mux_orchestrator::runs::{RunOwner, RunStatus, RunStoreError, RunWriter, StoredEvent};

use crate::buffer::{Ending, RunBuffer};
use crate::security::Principal;
use crate::thread::Thread;
use crate::types::{Interrupt, Outcome};

/// This process as an owner of runs in the run store.
#[derive(Clone)]
pub(crate) struct Durable {
    /// Holds this router's runs; stopped when the router goes away (its writers stop where
    /// they are, and other processes take the runs over).
    pub(crate) owner: RunOwner,
}

impl Durable {
    /// Writes `run`, which this process holds in the store as `store_id` (it began, handed
    /// over or claimed it, with the events before the buffer's first stored).
    pub(crate) fn keep(&self, store_id: String, run: Arc<RunBuffer>, thread: Arc<Thread>) {
        let writer = self.owner.writer(store_id, run.stored_through());
        let durable = self.clone();
        tokio::spawn(async move {
            durable.follow(&writer, &run, &thread).await;
        });
    }

    /// Connects `writer` to its run until the writer is done: hands it what the loop pushes
    /// (the last events with the status the run ends in, once that is known), makes what it
    /// stored readable, cancels the loop when another process asked, and stops the loop
    /// when the run is no longer ours.
    async fn follow(&self, writer: &RunWriter, run: &RunBuffer, thread: &Thread) {
        let mut pushed = run.watch_pushed();
        let mut stored = writer.stored();
        let cancel = writer.cancel_requested();
        let failed = writer.failed();
        // How many of the run's events the writer has.
        let mut handed = 0;
        let mut finished = false;
        let mut ended_here = false;
        loop {
            if failed.is_cancelled() && !ended_here && !run.is_moved() {
                ended_here = true;
                // The store did not take the run's events in time: the run ends here with
                // an error naming the cause, and the writer stores that end if it can.
                self.fail(writer, run, thread);
                finished = true;
            }
            if !finished {
                pushed.borrow_and_update();
                let (events, ending) = run.pushed_after(handed);
                handed += events.len();
                match ending.and_then(|e| final_status(e, thread, cancel.is_cancelled())) {
                    // The end is stored with the last events, before a client sees them:
                    // whoever saw it finds the run's status agreeing, on every process.
                    Some(status) => {
                        writer.finish_with(events, status);
                        finished = true;
                    }
                    None => events.into_iter().for_each(|event| writer.push(event)),
                }
            }
            // A run that ended waiting here (for a question's answer or a frontend result)
            // stays held; its status is decided again at the owner's pace.
            let waits_here = !finished && run.pushed_ending().is_some();
            tokio::select! {
                _ = pushed.changed(), if !finished => {}
                _ = stored.changed() => confirm(run, *stored.borrow_and_update()),
                () = cancel.cancelled(), if !cancel.is_cancelled() => {
                    thread.cancel();
                }
                () = failed.cancelled(), if !failed.is_cancelled() => {}
                () = tokio::time::sleep(self.owner.poll_interval()), if waits_here => {}
                () = writer.done() => break,
            }
        }
        confirm(run, *stored.borrow());
        if writer.lost().is_cancelled() && !self.owner.alive().is_cancelled() && !run.is_done() {
            // Another process took the run over (or the store stayed unreachable): the loop
            // here stops, and the run continues from the session there.
            tracing::warn!(
                run = writer.run_id(),
                "this run is no longer ours; stopping its loop here"
            );
            thread.abort();
            // Its clients go on from the store, where the new owner writes.
            run.move_to_store();
        }
    }

    /// Ends `run`, whose events the store did not take within the writer's timeout: stops its
    /// loop, shows its clients a `RUN_ERROR` naming the cause after the events stored, and
    /// hands that end to the writer.
    fn fail(&self, writer: &RunWriter, run: &RunBuffer, thread: &Thread) {
        let Some(failure) = writer.failure() else {
            return;
        };
        tracing::error!(
            run = writer.run_id(),
            fault = failure.fault.as_str(),
            "ending the run: {failure} (last error: {})",
            failure.reason
        );
        thread.abort();
        let error = crate::types::Event::RunError {
            message: format!(
                "{}: the run store did not take this run's events within {} s; try again \
                 once it is back",
                failure.fault,
                failure.within.as_secs()
            ),
            code: Some(crate::error::ErrorCode::RunStore.as_str().to_owned()),
        };
        if let Some(end) = run.fail_unstored(&error) {
            writer.finish_with(end, RunStatus::Failed);
        }
    }

    /// What a stored run ended waiting for (a paused run's last event).
    pub(crate) async fn waits(&self, store_id: &str) -> Result<Waiting, RunStoreError> {
        let record = self.owner.store().get(store_id).await?;
        let last = self
            .owner
            .store()
            .events_after(store_id, record.last_seq.saturating_sub(1), 1)
            .await?;
        Ok(last.first().map(waiting_on).unwrap_or_default())
    }
}

/// The store has `run`'s events through number `stored`: they become readable.
fn confirm(run: &RunBuffer, stored: u64) {
    let count = stored.saturating_sub(run.stored_through());
    if count > 0 {
        run.confirm(usize::try_from(count).unwrap_or(usize::MAX));
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

/// The custom event's name (after `mux.`) that stores a run's frontend tools.
const FRONTEND_TOOLS: &str = "frontend_tools";

/// The event that stores the page's frontend `tools` with its run (after `RUN_STARTED`).
pub(crate) fn frontend_tools_event(tools: &[crate::types::Tool]) -> crate::types::Event {
    crate::translate::custom(FRONTEND_TOOLS, serde_json::json!({ "tools": tools }))
}

/// The frontend tools `event` stores, if it is the event that does.
pub(crate) fn frontend_tools_of(event: &StoredEvent) -> Option<Vec<crate::types::Tool>> {
    match serde_json::from_value::<crate::types::Event>(event.event.clone()).ok()? {
        crate::types::Event::Custom { name, value }
            if name.strip_prefix("mux.") == Some(FRONTEND_TOOLS) =>
        {
            serde_json::from_value(value.get("tools")?.clone()).ok()
        }
        _ => None,
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
