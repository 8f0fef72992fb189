//! Delivering events: one lossless bounded receiver per run, plus broadcast subscribers that
//! are told explicitly when they lag.

use tokio::sync::{broadcast, mpsc};

use crate::LoopEvent;

/// Sends each event to the run's receiver (waiting when it is full: backpressure, never loss)
/// and to every subscriber.
#[derive(Clone, Debug)]
pub(crate) struct Emitter {
    primary: Option<mpsc::Sender<LoopEvent>>,
    broadcast: broadcast::Sender<LoopEvent>,
}

impl Emitter {
    pub(crate) fn new(
        primary: Option<mpsc::Sender<LoopEvent>>,
        broadcast: broadcast::Sender<LoopEvent>,
    ) -> Self {
        Self { primary, broadcast }
    }

    /// Whether any receiver or subscriber would see an event; lets the loop skip building
    /// events nobody reads.
    pub(crate) fn is_listening(&self) -> bool {
        self.primary.as_ref().is_some_and(|p| !p.is_closed()) || self.broadcast.receiver_count() > 0
    }

    pub(crate) async fn emit(&self, event: LoopEvent) {
        if self.broadcast.receiver_count() > 0 {
            // Lag is reported to the slow receiver itself, as `LoopEvent::Lagged`.
            let _ = self.broadcast.send(event.clone());
        }
        if let Some(primary) = &self.primary {
            // A dropped receiver means the face stopped listening; the run goes on.
            let _ = primary.send(event).await;
        }
    }
}

/// The receiving end of a run's events: every event, in order, none dropped.
pub type EventReceiver = mpsc::Receiver<LoopEvent>;

/// Another observer of the events. A subscriber that falls behind receives
/// [`LoopEvent::Lagged`] with the number of events it missed, then carries on.
#[derive(Debug)]
pub struct Subscription {
    receiver: broadcast::Receiver<LoopEvent>,
}

impl Subscription {
    pub(crate) fn new(receiver: broadcast::Receiver<LoopEvent>) -> Self {
        Self { receiver }
    }

    /// The next event; `None` once the orchestrator is gone.
    pub async fn recv(&mut self) -> Option<LoopEvent> {
        match self.receiver.recv().await {
            Ok(event) => Some(event),
            Err(broadcast::error::RecvError::Lagged(missed)) => Some(LoopEvent::Lagged { missed }),
            Err(broadcast::error::RecvError::Closed) => None,
        }
    }

    /// The subscription as a stream.
    pub fn into_stream(self) -> impl futures::Stream<Item = LoopEvent> + Send + Unpin {
        Box::pin(futures::stream::unfold(self, |mut sub| async move {
            let event = sub.recv().await?;
            Some((event, sub))
        }))
    }
}
