//! What a connection shares with its handler, transport, calls and subscription: state, log
//! and events ([`Shared`]), the calls in flight ([`PendingCalls`]) and the
//! [`ProgressBarrier`]. It imports none of its sibling modules, so they all import it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Instant, SystemTime};

use mux_tool::ToolContext;
use rmcp::model::ProgressToken;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::event::EventSender;
use crate::log::LogBuffer;
use crate::{ConnectionState, LogEntry, LogLevel, LogSource, McpEvent, TransitionError};

/// Locks `mutex`, taking the value even when a panicking holder poisoned it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// State, log and events of one connection, shared with its rmcp handler and tasks.
pub(crate) struct Shared {
    pub(crate) server: String,
    pub(super) state: Mutex<ConnectionState>,
    pub(super) log: Mutex<LogBuffer>,
    pub(super) events: EventSender,
}

impl Shared {
    /// Records a log entry and publishes it.
    pub(crate) fn log(&self, level: LogLevel, source: LogSource, message: String) {
        let entry = LogEntry {
            at: SystemTime::now(),
            level,
            source,
            message,
        };
        lock(&self.log).push(entry.clone());
        self.events.send(McpEvent::Log {
            server: self.server.clone(),
            entry,
        });
    }

    pub(super) fn state(&self) -> ConnectionState {
        lock(&self.state).clone()
    }

    /// Moves to `to` if the state machine allows it, publishing the change.
    pub(super) fn transition(&self, to: ConnectionState) -> Result<(), TransitionError> {
        let mut state = lock(&self.state);
        if !state.can_become(&to) {
            return Err(TransitionError {
                server: self.server.clone(),
                from: state.name(),
                to: to.name(),
            });
        }
        let from = std::mem::replace(&mut *state, to.clone());
        // Published under the lock so every subscriber sees transitions in order.
        self.events.send(McpEvent::StateChanged {
            server: self.server.clone(),
            from: from.clone(),
            to: to.clone(),
        });
        drop(state);
        self.log(
            LogLevel::Debug,
            LogSource::Protocol,
            format!("state: {} -> {}", from.name(), to.name()),
        );
        Ok(())
    }
}

/// The calls in flight, by the progress token of their current request: the calling tool's
/// context (where progress goes) and what timeouts, cancellation and listings need.
pub(crate) type PendingCalls = Arc<Mutex<HashMap<ProgressToken, PendingEntry>>>;

/// A call in flight (one round of it, for calls that take several requests).
pub(crate) struct PendingEntry {
    /// Where the request's progress goes.
    pub(crate) cx: ToolContext,
    pub(super) call_id: String,
    pub(super) tool: String,
    pub(super) started: Instant,
    pub(super) cancel: CancellationToken,
    pub(super) deadline: Instant,
    /// Set by the deadline keeper before it cancels `cancel`.
    pub(super) timed_out: bool,
}

/// Lets a finished call wait until the progress notifications that arrived before its result
/// have been delivered: rmcp handles notifications in spawned tasks, so without this the last
/// progress update could land after the call returned.
#[derive(Debug, Default)]
pub(crate) struct ProgressBarrier {
    received: AtomicU64,
    handled: AtomicU64,
    notify: Notify,
}

impl ProgressBarrier {
    /// Counts a progress notification read from the transport.
    pub(crate) fn received(&self) {
        self.received.fetch_add(1, Ordering::SeqCst);
    }

    pub(super) fn handled(&self) {
        self.handled.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    /// Waits (at most `limit`) until every notification received so far was handled.
    pub(crate) async fn settle(&self, limit: std::time::Duration) {
        let target = self.received.load(Ordering::SeqCst);
        if self.handled.load(Ordering::SeqCst) >= target {
            // The common case: no timer needed.
            return;
        }
        let _ = tokio::time::timeout(limit, async {
            loop {
                let notified = self.notify.notified();
                if self.handled.load(Ordering::SeqCst) >= target {
                    return;
                }
                notified.await;
            }
        })
        .await;
    }
}
