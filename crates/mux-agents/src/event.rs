//! What an agent tells its faces: its own loop events and those of its subagents, tagged.

use mux_orchestrator::LoopEvent;
use tokio::sync::broadcast;

use crate::AgentId;

/// An event from an agent or, tagged with their id, from one of its subagents (at any depth).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum AgentEvent {
    /// An event of this agent's own loop.
    Loop(LoopEvent),
    /// A subagent was spawned through the `task` tool.
    SubagentSpawned {
        /// Its id: answer its approvals with [`AgentRuntime::send`](crate::AgentRuntime::send).
        id: AgentId,
        /// Its definition's name.
        agent: String,
        /// Its depth (1 for a direct child of a top-level agent).
        depth: u32,
    },
    /// An event of a subagent's loop: output, tool calls, approval requests.
    Subagent {
        /// The subagent's id.
        id: AgentId,
        /// Its definition's name.
        agent: String,
        /// The event.
        event: LoopEvent,
    },
    /// A subagent finished a delegated task.
    SubagentComplete {
        /// The subagent's id.
        id: AgentId,
        /// Its definition's name.
        agent: String,
        /// Its final text, or what went wrong.
        result: Result<String, String>,
    },
    /// This subscriber fell behind and missed this many events.
    Lagged {
        /// How many.
        missed: u64,
    },
}

/// A subscription to an agent's events. A subscriber that falls behind gets
/// [`AgentEvent::Lagged`] and carries on.
#[derive(Debug)]
pub struct AgentEvents {
    receiver: broadcast::Receiver<AgentEvent>,
}

impl AgentEvents {
    pub(crate) fn new(receiver: broadcast::Receiver<AgentEvent>) -> Self {
        Self { receiver }
    }

    /// The next event; `None` once the agent is gone and every event was read.
    pub async fn recv(&mut self) -> Option<AgentEvent> {
        match self.receiver.recv().await {
            Ok(event) => Some(event),
            Err(broadcast::error::RecvError::Lagged(missed)) => Some(AgentEvent::Lagged { missed }),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }

    /// The next event if one is ready.
    pub fn try_recv(&mut self) -> Option<AgentEvent> {
        match self.receiver.try_recv() {
            Ok(event) => Some(event),
            Err(broadcast::error::TryRecvError::Lagged(missed)) => {
                Some(AgentEvent::Lagged { missed })
            }
            Err(_) => None,
        }
    }
}
