//! One AG-UI run's events, numbered and kept, so a client can reattach and replay.
//!
//! Event `n` (0-based) goes out with SSE id `n`; a reattach with `Last-Event-ID: n` starts at
//! `n + 1`. Followers wait on a watch channel, never on a lock.

use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;

use crate::types::Event;

/// A run's event log.
#[derive(Debug)]
pub(crate) struct RunBuffer {
    pub(crate) thread_id: String,
    pub(crate) run_id: String,
    log: Mutex<Log>,
    len: watch::Sender<usize>,
}

#[derive(Debug, Default)]
struct Log {
    events: Vec<Arc<str>>,
    done: bool,
}

impl RunBuffer {
    pub(crate) fn new(thread_id: &str, run_id: &str) -> Arc<Self> {
        Arc::new(Self {
            thread_id: thread_id.to_owned(),
            run_id: run_id.to_owned(),
            log: Mutex::default(),
            len: watch::Sender::new(0),
        })
    }

    fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Appends `events`; a terminal event closes the log. Returns false when it was closed
    /// already (the events are dropped: the run has ended).
    pub(crate) fn push(&self, events: impl IntoIterator<Item = Event>) -> bool {
        let len = {
            let mut log = self.log();
            if log.done {
                return false;
            }
            for event in events {
                let terminal = event.is_terminal();
                match serde_json::to_string(&event) {
                    Ok(json) => log.events.push(json.into()),
                    Err(err) => {
                        tracing::error!(kind = event.kind(), %err, "unserializable AG-UI event")
                    }
                }
                if terminal {
                    log.done = true;
                    break;
                }
            }
            log.events.len()
        };
        self.len.send_replace(len);
        true
    }

    /// Whether the run has ended.
    pub(crate) fn is_done(&self) -> bool {
        self.log().done
    }

    /// Events from `from` on, and whether the log is closed after them.
    pub(crate) fn read(&self, from: usize) -> (Vec<(usize, Arc<str>)>, bool) {
        let log = self.log();
        let events = log
            .events
            .iter()
            .enumerate()
            .skip(from)
            .map(|(i, e)| (i, Arc::clone(e)))
            .collect();
        (events, log.done)
    }

    /// A receiver that changes whenever events are appended.
    pub(crate) fn watch(&self) -> watch::Receiver<usize> {
        self.len.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_terminal_event_closes_the_log() {
        let buffer = RunBuffer::new("t", "r");
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
        assert_eq!(events[0].0, 1);
    }
}
