//! A running agent: its input queue, its events, its state, and the handles of its runs.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mux_orchestrator::{InputSender, LoopInput, Orchestrator, ParentRun, RunSummary};
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::{AgentError, AgentEvent, AgentEvents, AgentId};

/// Where an agent is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AgentState {
    /// Waiting for input.
    Idle,
    /// A run is in progress.
    Running,
    /// The agent exited (shut down or cancelled); it takes no more input.
    Done,
}

/// Where one run of an agent is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunStatus {
    /// Waiting behind earlier input.
    Queued,
    /// Running.
    Running,
    /// Finished normally.
    Finished,
    /// Failed.
    Failed,
    /// Cancelled (or the agent exited before it ran).
    Cancelled,
}

impl RunStatus {
    /// Whether the run has ended.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Finished | Self::Failed | Self::Cancelled)
    }
}

/// A prompt queued for the agent's task.
pub(crate) struct Job {
    pub(crate) prompt: String,
    /// The run that delegated this one.
    pub(crate) parent: Option<ParentRun>,
    pub(crate) cancel: CancellationToken,
    pub(crate) status: watch::Sender<RunStatus>,
    pub(crate) reply: oneshot::Sender<Result<RunSummary, AgentError>>,
}

/// What a handle shares with the agent's task.
pub(crate) struct AgentShared {
    pub(crate) id: AgentId,
    pub(crate) name: String,
    pub(crate) depth: u32,
    pub(crate) parent: Option<AgentId>,
    pub(crate) orchestrator: Orchestrator,
    pub(crate) jobs: mpsc::UnboundedSender<Job>,
    pub(crate) events: broadcast::Sender<AgentEvent>,
    pub(crate) state: watch::Sender<AgentState>,
    pub(crate) cancel: CancellationToken,
    /// The input sender and cancel token of the run in progress.
    pub(crate) current: Mutex<Option<(InputSender, CancellationToken)>>,
    /// Serializes updates of this agent's subagent list in its session metadata.
    pub(crate) links: tokio::sync::Mutex<()>,
}

/// A handle on a running agent. Cheap to clone.
///
/// Prompts are queued and run one at a time; [`send`](Self::send) answers the run in progress
/// (approvals, `ask_user` responses, extra messages).
#[derive(Clone)]
pub struct AgentHandle {
    pub(crate) shared: Arc<AgentShared>,
}

impl AgentHandle {
    /// The agent's id.
    pub fn id(&self) -> &AgentId {
        &self.shared.id
    }

    /// Its definition's name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// 0 for a top-level agent, the parent's depth plus one for a subagent.
    pub fn depth(&self) -> u32 {
        self.shared.depth
    }

    /// The parent's id, for a subagent.
    pub fn parent(&self) -> Option<&AgentId> {
        self.shared.parent.as_ref()
    }

    /// Its session's id.
    pub fn session_id(&self) -> String {
        self.shared.orchestrator.session().id
    }

    /// The orchestrator that runs its loop (history, usage, session metadata).
    pub fn orchestrator(&self) -> &Orchestrator {
        &self.shared.orchestrator
    }

    /// Its state now.
    pub fn state(&self) -> AgentState {
        *self.shared.state.borrow()
    }

    /// Its cancellation token: cancelling it shuts the agent and all its subagents down.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.shared.cancel
    }

    /// A subscription to its events from now on.
    pub fn subscribe(&self) -> AgentEvents {
        AgentEvents::new(self.shared.events.subscribe())
    }

    pub(crate) fn emit(&self, event: AgentEvent) {
        // No subscriber is fine: nobody is watching.
        let _ = self.shared.events.send(event);
    }

    /// Queues `prompt`; the returned handle tells its status, waits for it and cancels it.
    pub fn prompt(&self, prompt: impl Into<String>) -> Result<AgentRun, AgentError> {
        self.queue(prompt.into(), None)
    }

    /// [`prompt`](Self::prompt) on behalf of another run: the run draws from the parent's
    /// budget as well as its own limits, and its trace hangs under the parent's span
    /// ([`Orchestrator::run_under`]).
    pub fn prompt_under(
        &self,
        prompt: impl Into<String>,
        parent: ParentRun,
    ) -> Result<AgentRun, AgentError> {
        self.queue(prompt.into(), Some(parent))
    }

    fn queue(&self, prompt: String, parent: Option<ParentRun>) -> Result<AgentRun, AgentError> {
        let (status, status_rx) = watch::channel(RunStatus::Queued);
        let (reply, result) = oneshot::channel();
        let cancel = self.shared.cancel.child_token();
        let job = Job {
            prompt,
            parent,
            cancel: cancel.clone(),
            status,
            reply,
        };
        self.shared
            .jobs
            .send(job)
            .map_err(|_| AgentError::Exited(self.shared.id.clone()))?;
        Ok(AgentRun {
            status: status_rx,
            result: Some(result),
            cancel,
        })
    }

    /// Sends an input to the run in progress: an approval, a user response, a message, or
    /// cancel. Returns false when no run is in progress.
    pub async fn send(&self, input: LoopInput) -> bool {
        match self.current() {
            Some((sender, _)) => sender.send(input).await,
            None => false,
        }
    }

    /// The input and cancellation of the run in progress, if any.
    fn current(&self) -> Option<(InputSender, CancellationToken)> {
        self.shared
            .current
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Cancels the run in progress (the agent stays, ready for the next prompt). Returns false
    /// when no run is in progress.
    pub fn interrupt(&self) -> bool {
        match self.current() {
            Some((_, cancel)) => {
                cancel.cancel();
                true
            }
            None => false,
        }
    }

    /// Shuts the agent and its subagents down: runs are cancelled, queued prompts fail with
    /// [`AgentError::Cancelled`], and the agent leaves the registry.
    pub fn shutdown(&self) {
        self.shared.cancel.cancel();
    }

    /// Waits until the agent has exited. Ends when it is shut down (or its parent is).
    pub async fn wait(&self) {
        let mut state = self.shared.state.subscribe();
        // The sender lives as long as `self`, so this only ends at `Done`.
        let _ = state.wait_for(|s| *s == AgentState::Done).await;
    }

    /// Waits up to `timeout` for the agent to exit.
    pub async fn wait_timeout(&self, timeout: Duration) -> Result<(), AgentError> {
        tokio::time::timeout(timeout, self.wait())
            .await
            .map_err(|_| AgentError::Timeout(timeout))
    }
}

impl fmt::Debug for AgentHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentHandle")
            .field("id", &self.shared.id)
            .field("name", &self.shared.name)
            .field("depth", &self.shared.depth)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

/// One queued or running prompt: status polling, a wait with a timeout, a cancel that really
/// cancels.
#[derive(Debug)]
pub struct AgentRun {
    status: watch::Receiver<RunStatus>,
    result: Option<oneshot::Receiver<Result<RunSummary, AgentError>>>,
    cancel: CancellationToken,
}

impl AgentRun {
    /// Its status now.
    pub fn status(&self) -> RunStatus {
        *self.status.borrow()
    }

    /// Cancels it: a queued run never starts, a running one stops its model stream and tools.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The run's cancellation token.
    pub(crate) fn token(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Waits for the outcome. Ends when the run does, is cancelled, or the agent exits.
    pub async fn wait(&mut self) -> Result<RunSummary, AgentError> {
        let Some(result) = self.result.as_mut() else {
            return Err(AgentError::ResultTaken);
        };
        let outcome = match result.await {
            Ok(outcome) => outcome,
            Err(_) => Err(AgentError::Cancelled),
        };
        self.result = None;
        outcome
    }

    /// Waits up to `timeout`; on timeout the run goes on and can be waited for again.
    pub async fn wait_timeout(&mut self, timeout: Duration) -> Result<RunSummary, AgentError> {
        tokio::time::timeout(timeout, self.wait())
            .await
            .unwrap_or(Err(AgentError::Timeout(timeout)))
    }
}
