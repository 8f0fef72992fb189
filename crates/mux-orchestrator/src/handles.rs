//! What a run hands back: the events, the input sender and the handle of a started run (its
//! summary is [`crate::RunSummary`]).

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::LoopError;
use crate::emitter::EventReceiver;
use crate::event::LoopInput;
use crate::summary::RunSummary;

/// A started run.
#[derive(Debug)]
pub struct Run {
    /// Every event of the run, in order.
    pub events: EventReceiver,
    /// Where the face sends answers, messages and cancel.
    pub input: InputSender,
    /// Waits for the outcome or cancels.
    pub handle: RunHandle,
}

/// Sends [`LoopInput`]s into a run.
#[derive(Clone, Debug)]
pub struct InputSender {
    /// Boxed: the channel allocates 32 slots when it is made, and an input is 56 bytes.
    pub(crate) tx: mpsc::Sender<Box<LoopInput>>,
    pub(crate) cancel: CancellationToken,
}

impl InputSender {
    /// Sends an input; returns false when the run has ended.
    ///
    /// [`LoopInput::Cancel`] takes effect at once, ahead of inputs still queued: it never
    /// waits behind a router that is itself waiting for a face to read.
    pub async fn send(&self, input: LoopInput) -> bool {
        if matches!(input, LoopInput::Cancel) {
            self.cancel.cancel();
            return !self.tx.is_closed();
        }
        self.tx.send(Box::new(input)).await.is_ok()
    }
}

/// The outcome of a run, and a cancel that really cancels.
#[derive(Debug)]
pub struct RunHandle {
    pub(crate) join: JoinHandle<Result<RunSummary, LoopError>>,
    pub(crate) cancel: CancellationToken,
    /// Whether the prompt's message is stored (`None` until the loop appended it).
    pub(crate) prompt: watch::Receiver<Option<bool>>,
}

impl RunHandle {
    /// Resolves once the run's prompt is in the conversation, before the model is asked and
    /// before anything can wait for a person: true when the session store took it (or the
    /// session has no store), false when the store holds it back for a later write, or when
    /// the run ended first (a hook blocked the prompt; the run failed or was cancelled; a
    /// run without a prompt, such as [`resume_run`](crate::Orchestrator::resume_run)).
    ///
    /// A face awaits it before it acknowledges the prompt, while it reads the run's events
    /// (the loop may wait for the face to take one before it gets there).
    pub fn prompt_stored(&self) -> impl Future<Output = bool> + Send + 'static {
        let mut prompt = self.prompt.clone();
        async move {
            prompt
                .wait_for(Option::is_some)
                .await
                .is_ok_and(|stored| *stored == Some(true))
        }
    }

    /// As [`prompt_stored`](Self::prompt_stored), telling the two cases of false apart:
    /// `Some(true)` when the session store took the prompt (or the session has no store),
    /// `Some(false)` when the store could not write it (it holds it back for a later write:
    /// a face must not acknowledge it), `None` when the run ended before the prompt was
    /// appended.
    pub fn prompt_written(&self) -> impl Future<Output = Option<bool>> + Send + 'static {
        let mut prompt = self.prompt.clone();
        async move {
            prompt
                .wait_for(Option::is_some)
                .await
                .map_or(None, |written| *written)
        }
    }

    /// Cancels the run: the model stream is dropped and running tools are cancelled.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The run's cancellation token (a child of the orchestrator's).
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// Stops the run's task where it waits, writing nothing more: for a face that drops a
    /// paused run whose state is stored (its session and journal), to rebuild it on resume
    /// with [`Orchestrator::resume_run`](crate::Orchestrator::resume_run). Unlike
    /// [`cancel`](Self::cancel), the session records no cancellation.
    pub fn abort(&self) {
        self.join.abort();
    }

    /// Whether the run has ended.
    pub fn is_finished(&self) -> bool {
        self.join.is_finished()
    }

    /// Waits for the run to end.
    pub async fn wait(self) -> Result<RunSummary, LoopError> {
        match self.join.await {
            Ok(result) => result,
            Err(err) => Err(LoopError::Crashed(err.to_string())),
        }
    }
}
