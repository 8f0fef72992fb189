//! Delivering events: one lossless bounded receiver per run, plus broadcast subscribers that
//! are told explicitly when they lag. A full receiver holds the run back (backpressure) until
//! the run is cancelled or its loop has ended; then undelivered events wait in an overflow
//! queue instead.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use crate::LoopEvent;

/// The subscribers' channel, made at the first subscription: a broadcast channel allocates
/// all its slots up front (a thousand events for each conversation), and most conversations
/// (a web thread, an editor session) are never subscribed to.
#[derive(Clone, Debug)]
pub(crate) struct Broadcast {
    capacity: usize,
    sender: Arc<OnceLock<broadcast::Sender<LoopEvent>>>,
}

impl Broadcast {
    /// A channel that will hold `capacity` events per subscriber, once someone subscribes.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            sender: Arc::default(),
        }
    }

    /// A new subscriber, making the channel if it is the first.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<LoopEvent> {
        self.sender
            .get_or_init(|| broadcast::channel(self.capacity).0)
            .subscribe()
    }

    /// The channel, when someone is subscribed to it.
    fn listened(&self) -> Option<&broadcast::Sender<LoopEvent>> {
        self.sender.get().filter(|tx| tx.receiver_count() > 0)
    }
}

/// Sends each event to the run's receiver (waiting when it is full: backpressure, never loss)
/// and to every subscriber.
#[derive(Clone, Debug)]
pub(crate) struct Emitter {
    primary: Option<Primary>,
    broadcast: Broadcast,
}

/// The run's own receiver, and what happens to events it cannot take once waiting stops.
#[derive(Clone, Debug)]
struct Primary {
    tx: mpsc::Sender<LoopEvent>,
    /// Fires when waiting for the face must stop: the run is cancelled or its loop ended.
    stop_waiting: CancellationToken,
    /// Set when, after `stop_waiting` fired, the receiver was full: that event and every
    /// later one go here, in order, and a background task delivers them as the face reads.
    overflow: Arc<Mutex<Option<mpsc::UnboundedSender<LoopEvent>>>>,
}

impl Emitter {
    /// An emitter to a run's receiver `tx` and to `broadcast`. Waiting for room in `tx` stops
    /// when `stop_waiting` fires.
    pub(crate) fn new(
        tx: mpsc::Sender<LoopEvent>,
        broadcast: Broadcast,
        stop_waiting: CancellationToken,
    ) -> Self {
        let primary = Some(Primary {
            tx,
            stop_waiting,
            overflow: Arc::default(),
        });
        Self { primary, broadcast }
    }

    /// An emitter to `broadcast` subscribers only, for a run without a receiver.
    pub(crate) fn broadcast_only(broadcast: Broadcast) -> Self {
        Self {
            primary: None,
            broadcast,
        }
    }

    /// Whether any receiver or subscriber would see an event; lets the loop skip building
    /// events nobody reads.
    pub(crate) fn is_listening(&self) -> bool {
        self.primary.as_ref().is_some_and(|p| !p.tx.is_closed())
            || self.broadcast.listened().is_some()
    }

    /// Delivers `event`. While the run is live this waits for room in the receiver; once it
    /// is cancelled or its loop ended it never waits (see [`Primary::send`]).
    pub(crate) async fn emit(&self, event: LoopEvent) {
        if let Some(subscribers) = self.broadcast.listened() {
            // Lag is reported to the slow receiver itself, as `LoopEvent::Lagged`.
            let _ = subscribers.send(event.clone());
        }
        if let Some(primary) = &self.primary {
            primary.send(event).await;
        }
    }
}

impl Primary {
    /// Sends in order. An event that finds the receiver full after `stop_waiting` fired is not
    /// dropped: it is queued, with every later event, for a task that hands them over as the
    /// face reads and stops when the receiver is dropped. The run ends without waiting.
    async fn send(&self, event: LoopEvent) {
        let Some(event) = self.queue_if_overflowing(event) else {
            return;
        };
        tokio::select! {
            biased;
            permit = self.tx.reserve() => {
                // An error means the face dropped the receiver: it stopped listening.
                if let Ok(permit) = permit {
                    permit.send(event);
                }
            }
            () = self.stop_waiting.cancelled() => self.overflow(event),
        }
    }

    /// Queues `event` behind earlier overflow, keeping the order; gives it back if there is
    /// none.
    fn queue_if_overflowing(&self, event: LoopEvent) -> Option<LoopEvent> {
        let overflow = self.overflow.lock().unwrap_or_else(PoisonError::into_inner);
        match overflow.as_ref() {
            Some(queue) => queue.send(event).err().map(|err| err.0),
            None => Some(event),
        }
    }

    fn overflow(&self, event: LoopEvent) {
        let mut overflow = self.overflow.lock().unwrap_or_else(PoisonError::into_inner);
        let queue = overflow.get_or_insert_with(|| {
            let (queue, mut pending) = mpsc::unbounded_channel::<LoopEvent>();
            let tx = self.tx.clone();
            // Ends once every emitter is gone and the queue is delivered, or the face
            // drops the receiver.
            tokio::spawn(async move {
                while let Some(event) = pending.recv().await {
                    if tx.send(event).await.is_err() {
                        break;
                    }
                }
            });
            queue
        });
        let _ = queue.send(event);
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
