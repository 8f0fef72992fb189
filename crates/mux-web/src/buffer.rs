//! One AG-UI run's events, numbered and kept, so a client can reattach and replay.
//!
//! Events carry the run store's numbers: the first event of a new run is 1, and a run taken
//! over from another process goes on after the last number it stored (its `base`). A stored
//! run's events are readable once the run store has them ([`RunBuffer::confirm`]), so a
//! client never sees an event another process could not replay; a local one's (an error
//! answered before any run began) at once. Followers wait on a watch channel, never on a lock.

use std::sync::{Arc, Mutex, PoisonError};

use mux_orchestrator::runs::EventJson;
use tokio::sync::watch;

use crate::types::{Event, Outcome};

/// How a run's events ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// `RUN_FINISHED` with an answer, or with nothing pending.
    Finished,
    /// `RUN_FINISHED` on interrupts or frontend calls that wait: the run is paused.
    Paused,
    /// `RUN_FINISHED` cancelled.
    Cancelled,
    /// `RUN_ERROR`.
    Failed,
}

impl Ending {
    /// How `event` ends a run, if it does.
    pub(crate) fn of(event: &Event) -> Option<Self> {
        match event {
            Event::RunError { .. } => Some(Self::Failed),
            Event::RunFinished { outcome, .. } => Some(match outcome {
                Outcome::Cancelled => Self::Cancelled,
                Outcome::Interrupt { .. } => Self::Paused,
                Outcome::Success {
                    pending_tool_call_ids,
                } if !pending_tool_call_ids.is_empty() => Self::Paused,
                Outcome::Success { .. } => Self::Finished,
            }),
            _ => None,
        }
    }
}

/// A run's event log.
#[derive(Debug)]
pub(crate) struct RunBuffer {
    pub(crate) thread_id: String,
    pub(crate) run_id: String,
    /// The number of the event before the first.
    base: u64,
    /// Whether a writer confirms events (else they are readable as pushed).
    stored: bool,
    log: Mutex<Log>,
    /// The number of readable events.
    readable: watch::Sender<usize>,
    /// The number of pushed events.
    pushed: watch::Sender<usize>,
}

#[derive(Debug, Default)]
struct Log {
    /// Each event serialized once: clients read the text, and the run's writer stores it.
    events: Vec<EventJson>,
    done: bool,
    ending: Option<Ending>,
    /// How many events the run store has.
    confirmed: usize,
    /// This process stopped writing the run (another one continues it, or will): what
    /// follows the confirmed events is read from the run store.
    moved: bool,
}

impl RunBuffer {
    /// A run whose events a writer confirms into the run store, numbered after `base`.
    pub(crate) fn stored(thread_id: &str, run_id: &str, base: u64) -> Arc<Self> {
        Self::with(thread_id, run_id, base, true)
    }

    /// A run kept only here (refused before it began in the run store).
    pub(crate) fn local(thread_id: &str, run_id: &str) -> Arc<Self> {
        Self::with(thread_id, run_id, 0, false)
    }

    fn with(thread_id: &str, run_id: &str, base: u64, stored: bool) -> Arc<Self> {
        Arc::new(Self {
            thread_id: thread_id.to_owned(),
            run_id: run_id.to_owned(),
            base,
            stored,
            log: Mutex::default(),
            readable: watch::Sender::new(0),
            pushed: watch::Sender::new(0),
        })
    }

    fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends `events`; a terminal event closes the log. Returns false when it was closed
    /// already (the events are dropped: the run has ended).
    pub(crate) fn push(&self, events: impl IntoIterator<Item = Event>) -> bool {
        let (len, readable) = {
            let mut log = self.log();
            if log.done {
                return false;
            }
            for event in events {
                let event = for_client(event);
                let ending = Ending::of(&event);
                match EventJson::of(&event) {
                    Ok(json) => log.events.push(json),
                    Err(err) => {
                        tracing::error!(kind = event.kind(), %err, "unserializable AG-UI event")
                    }
                }
                if ending.is_some() {
                    log.done = true;
                    log.ending = ending;
                    break;
                }
            }
            if !self.stored {
                log.confirmed = log.events.len();
            }
            (log.events.len(), log.confirmed)
        };
        self.pushed.send_replace(len);
        self.readable.send_replace(readable);
        true
    }

    /// Whether the run store has (or will have) this run's events.
    pub(crate) fn is_stored(&self) -> bool {
        self.stored
    }

    /// Whether the run has ended.
    pub(crate) fn is_done(&self) -> bool {
        self.log().done
    }

    /// How the run ended, once its last event is pushed (the store may not have it yet).
    pub(crate) fn pushed_ending(&self) -> Option<Ending> {
        self.log().ending
    }

    /// Readable events numbered after `after`, and whether none will follow them.
    pub(crate) fn read(&self, after: u64) -> (Vec<(u64, Arc<str>)>, bool) {
        let log = self.log();
        let skip = usize::try_from(after.saturating_sub(self.base)).unwrap_or(usize::MAX);
        let events = log.events[..log.confirmed]
            .iter()
            .enumerate()
            .skip(skip)
            .map(|(i, e)| (self.base + i as u64 + 1, e.shared()))
            .collect();
        (events, log.done && log.confirmed == log.events.len())
    }

    /// The events pushed after the first `count`, and how the run ended once it has (then
    /// none follow them): what the run's writer has not been handed yet.
    pub(crate) fn pushed_after(&self, count: usize) -> (Vec<EventJson>, Option<Ending>) {
        let log = self.log();
        let events = log.events.get(count..).unwrap_or_default().to_vec();
        (events, log.ending)
    }

    /// The number of the last event the run store has.
    pub(crate) fn stored_through(&self) -> u64 {
        self.base + self.log().confirmed as u64
    }

    /// The run store took the next `count` events: they become readable.
    pub(crate) fn confirm(&self, count: usize) {
        let readable = {
            let mut log = self.log();
            log.confirmed = (log.confirmed + count).min(log.events.len());
            log.confirmed
        };
        self.readable.send_replace(readable);
    }

    /// This process no longer writes the run: another one took it over (or will, once the
    /// store is back). Followers go on reading from the run store after what they read here.
    pub(crate) fn move_to_store(&self) {
        let readable = {
            let mut log = self.log();
            log.moved = true;
            log.confirmed
        };
        // Wakes the followers even when nothing became readable.
        self.readable.send_modify(|n| *n = readable);
    }

    /// The run store did not take the run's events in time: the run ends here with `error`
    /// (a `RUN_ERROR`), shown at once though the store has not taken it. What the store did
    /// not take is dropped (and `RUN_STARTED` kept, when nothing was stored), so clients see
    /// the stored events, then the error. Returns the events after the stored ones (what the
    /// writer is handed as the run's end), or `None` when every client has its end already
    /// (the last event, stored, ended the run).
    pub(crate) fn fail_unstored(&self, error: &Event) -> Option<Vec<EventJson>> {
        let readable = {
            let mut log = self.log();
            if log.done && log.confirmed == log.events.len() {
                return None;
            }
            let keep = log.confirmed.max(1).min(log.events.len());
            log.events.truncate(keep);
            match EventJson::of(error) {
                Ok(json) => log.events.push(json),
                Err(err) => tracing::error!(%err, "unserializable AG-UI event"),
            }
            log.done = true;
            log.ending = Some(Ending::Failed);
            let unstored = log.events[log.confirmed..].to_vec();
            log.confirmed = log.events.len();
            (log.events.len(), unstored)
        };
        let (len, unstored) = readable;
        self.pushed.send_replace(len);
        self.readable.send_replace(len);
        Some(unstored)
    }

    /// Whether [`move_to_store`](Self::move_to_store) was called: what is not readable here
    /// by now is read from the run store.
    pub(crate) fn is_moved(&self) -> bool {
        self.log().moved
    }

    /// A receiver that changes whenever events become readable.
    pub(crate) fn watch(&self) -> watch::Receiver<usize> {
        self.readable.subscribe()
    }

    /// A receiver that changes whenever events are pushed (for the writer).
    pub(crate) fn watch_pushed(&self) -> watch::Receiver<usize> {
        self.pushed.subscribe()
    }
}

/// The event as a client may see it: a `RUN_ERROR`'s store failure or OS error is logged and
/// named, not shown (see [`crate::error::run_error_message`]).
fn for_client(event: Event) -> Event {
    match event {
        Event::RunError { message, code } => Event::RunError {
            message: crate::error::run_error_message(code.as_deref(), message),
            code,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_event_closes_the_log() {
        let buffer = RunBuffer::local("t", "r");
        assert!(buffer.push([Event::StepStarted {
            step_name: "a".into()
        }]));
        assert!(buffer.push([
            Event::RunError {
                message: "x".into(),
                code: None
            },
            Event::StepStarted {
                step_name: "late".into()
            }
        ]));
        assert!(!buffer.push([Event::StepStarted {
            step_name: "b".into()
        }]));
        let (events, done) = buffer.read(1);
        assert!(done);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].0, 2);
        assert_eq!(buffer.pushed_ending(), Some(Ending::Failed));
    }

    #[test]
    fn a_run_the_store_did_not_take_ends_with_its_error_after_what_was_stored() {
        let step = |name: &str| Event::StepStarted {
            step_name: name.into(),
        };
        let error = Event::RunError {
            message: "the store's disk is full".into(),
            code: Some("run_store_unavailable".into()),
        };
        // Nothing stored: the first event (RUN_STARTED) and the error, readable at once.
        let buffer = RunBuffer::stored("t", "r", 0);
        buffer.push([step("started"), step("a")]);
        let unstored = buffer.fail_unstored(&error).unwrap();
        assert_eq!(unstored.len(), 2);
        let (events, done) = buffer.read(0);
        assert!(done);
        assert_eq!(events.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [1, 2]);
        assert!(events[1].1.contains("RUN_ERROR"), "{}", events[1].1);
        assert!(!buffer.push([step("late")]), "the log is closed");
        // Some stored: the error follows them.
        let buffer = RunBuffer::stored("t", "r", 0);
        buffer.push([step("started"), step("a"), step("b")]);
        buffer.confirm(2);
        assert_eq!(buffer.fail_unstored(&error).unwrap().len(), 1);
        let (events, done) = buffer.read(0);
        assert!(done);
        assert_eq!(events.len(), 3);
        assert!(events[2].1.contains("RUN_ERROR"));
        // Every client has its stored end already: nothing changes.
        let buffer = RunBuffer::stored("t", "r", 0);
        buffer.push([step("started"), error.clone()]);
        buffer.confirm(2);
        assert!(buffer.fail_unstored(&error).is_none());
        assert_eq!(buffer.read(0).0.len(), 2);
    }

    #[test]
    fn a_stored_run_shows_only_what_the_store_took_numbered_after_its_base() {
        let buffer = RunBuffer::stored("t", "r", 7);
        buffer.push([
            Event::StepStarted {
                step_name: "a".into(),
            },
            Event::StepStarted {
                step_name: "b".into(),
            },
        ]);
        assert!(buffer.read(0).0.is_empty());
        assert_eq!(buffer.pushed_after(0).0.len(), 2);
        assert_eq!(buffer.pushed_after(1).0.len(), 1);
        assert_eq!(buffer.pushed_after(3), (Vec::new(), None));
        buffer.confirm(1);
        let (events, done) = buffer.read(0);
        assert_eq!(events.iter().map(|e| e.0).collect::<Vec<_>>(), [8]);
        assert!(!done);
        assert_eq!(buffer.stored_through(), 8);
        buffer.confirm(1);
        assert_eq!(buffer.read(8).0[0].0, 9);
        assert!(buffer.read(9).0.is_empty());
    }
}
