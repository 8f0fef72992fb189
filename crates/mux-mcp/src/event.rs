//! Events from connections and the coordinator, and a receiver that reports lag.

use std::time::Duration;

use serde::Serialize;
use tokio::sync::broadcast;

use crate::{ConnectionState, LogEntry, ToolInfo};

/// How a tool call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum CallEnd {
    /// The server returned a result (possibly with `isError`).
    Completed,
    /// The caller cancelled; `notifications/cancelled` was sent.
    Cancelled,
    /// The timeout passed; `notifications/cancelled` was sent.
    TimedOut,
    /// The connection was lost or the server answered with a protocol error.
    Failed,
}

/// Something that happened to a server.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum McpEvent {
    /// The connection changed state.
    StateChanged {
        /// The server.
        server: String,
        /// The previous state.
        from: ConnectionState,
        /// The new state.
        to: ConnectionState,
    },
    /// The server's tool list changed (after `notifications/tools/list_changed`).
    ToolsChanged {
        /// The server.
        server: String,
        /// The new list.
        tools: Vec<ToolInfo>,
    },
    /// A log entry was recorded.
    Log {
        /// The server.
        server: String,
        /// The entry.
        entry: LogEntry,
    },
    /// A tool call was sent.
    CallStarted {
        /// The server.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The mux call id.
        call_id: String,
    },
    /// A tool call ended.
    CallEnded {
        /// The server.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The mux call id.
        call_id: String,
        /// How long it ran.
        duration: Duration,
        /// How it ended.
        end: CallEnd,
    },
}

impl McpEvent {
    /// The server the event is about.
    pub fn server(&self) -> &str {
        match self {
            Self::StateChanged { server, .. }
            | Self::ToolsChanged { server, .. }
            | Self::Log { server, .. }
            | Self::CallStarted { server, .. }
            | Self::CallEnded { server, .. } => server,
        }
    }
}

/// How many events a subscriber may fall behind before it is told it lagged.
pub const EVENT_BUFFER: usize = 1024;

/// What [`Events::recv`] returns.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Received {
    /// The next event.
    Event(McpEvent),
    /// The subscriber fell behind and `missed` events were skipped. Take a snapshot to
    /// resynchronise.
    Lagged {
        /// How many events were skipped.
        missed: u64,
    },
}

/// A subscription to events. Nothing is skipped silently: a slow subscriber gets
/// [`Received::Lagged`] with the count.
#[derive(Debug)]
pub struct Events {
    rx: broadcast::Receiver<McpEvent>,
}

impl Events {
    pub(crate) fn new(rx: broadcast::Receiver<McpEvent>) -> Self {
        Self { rx }
    }

    /// The next event, a lag report, or `None` once the source is gone.
    pub async fn recv(&mut self) -> Option<Received> {
        match self.rx.recv().await {
            Ok(event) => Some(Received::Event(event)),
            Err(broadcast::error::RecvError::Lagged(missed)) => Some(Received::Lagged { missed }),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }

    /// Like [`Events::recv`] without waiting: `None` when nothing is ready.
    pub fn try_recv(&mut self) -> Option<Received> {
        match self.rx.try_recv() {
            Ok(event) => Some(Received::Event(event)),
            Err(broadcast::error::TryRecvError::Lagged(missed)) => {
                Some(Received::Lagged { missed })
            }
            Err(_) => None,
        }
    }
}

/// The sending side shared by a coordinator and its connections.
#[derive(Clone, Debug)]
pub(crate) struct EventSender {
    tx: broadcast::Sender<McpEvent>,
}

impl EventSender {
    pub(crate) fn new() -> Self {
        let (tx, _) = broadcast::channel(EVENT_BUFFER);
        Self { tx }
    }

    pub(crate) fn send(&self, event: McpEvent) {
        // No subscriber is not an error: events are for whoever listens.
        let _ = self.tx.send(event);
    }

    /// Sends the event `make` builds, building it only when someone listens (per-call events
    /// are on the hot path of every tool call).
    pub(crate) fn send_with(&self, make: impl FnOnce() -> McpEvent) {
        if self.tx.receiver_count() > 0 {
            self.send(make());
        }
    }

    pub(crate) fn subscribe(&self) -> Events {
        Events::new(self.tx.subscribe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_slow_subscriber_is_told_how_much_it_missed() {
        let sender = EventSender::new();
        let mut events = sender.subscribe();
        for i in 0..(EVENT_BUFFER + 10) {
            sender.send(McpEvent::CallStarted {
                server: "s".into(),
                tool: "t".into(),
                call_id: i.to_string(),
            });
        }
        assert_eq!(events.recv().await, Some(Received::Lagged { missed: 10 }));
        let Some(Received::Event(McpEvent::CallStarted { call_id, .. })) = events.recv().await
        else {
            panic!("expected the oldest kept event")
        };
        assert_eq!(call_id, "10");
    }
}
