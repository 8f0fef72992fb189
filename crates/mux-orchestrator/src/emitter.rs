//! Delivering events: one lossless bounded receiver per run, plus broadcast subscribers that
//! are told explicitly when they lag. A full receiver holds the run back (backpressure) until
//! the run is cancelled or its loop has ended; then undelivered events wait in an overflow
//! queue instead.
//!
//! The run's channel carries boxed events: tokio's channel allocates its slots 32 at a time
//! when it is made, and 32 slots of a [`LoopEvent`] (about 250 bytes each) cost every run
//! 8 KB even while it waits, idle, in a tool. Boxed, the block is 256 bytes.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::{Context, Poll};

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
    tx: mpsc::Sender<Box<LoopEvent>>,
    /// Fires when waiting for the face must stop: the run is cancelled or its loop ended.
    stop_waiting: CancellationToken,
    /// Set when, after `stop_waiting` fired, the receiver was full: that event and every
    /// later one go here, in order, and a background task delivers them as the face reads.
    overflow: Arc<Mutex<Option<mpsc::UnboundedSender<Box<LoopEvent>>>>>,
}

impl Emitter {
    /// An emitter to a run's receiver `tx` and to `broadcast`. Waiting for room in `tx` stops
    /// when `stop_waiting` fires.
    pub(crate) fn new(
        tx: mpsc::Sender<Box<LoopEvent>>,
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
    ///
    /// The event is boxed before the first wait: a future that kept it inline would hold
    /// its 250 bytes in every state of the loop that emits, the idle ones included.
    pub(crate) fn emit(&self, event: LoopEvent) -> impl Future<Output = ()> + Send + '_ {
        self.emit_boxed(Box::new(event))
    }

    /// [`emit`](Self::emit) for an event already boxed.
    pub(crate) async fn emit_boxed(&self, event: Box<LoopEvent>) {
        if let Some(subscribers) = self.broadcast.listened() {
            // Lag is reported to the slow receiver itself, as `LoopEvent::Lagged`.
            let _ = subscribers.send((*event).clone());
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
    async fn send(&self, event: Box<LoopEvent>) {
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
    fn queue_if_overflowing(&self, event: Box<LoopEvent>) -> Option<Box<LoopEvent>> {
        let overflow = self.overflow.lock().unwrap_or_else(PoisonError::into_inner);
        match overflow.as_ref() {
            Some(queue) => queue.send(event).err().map(|err| err.0),
            None => Some(event),
        }
    }

    fn overflow(&self, event: Box<LoopEvent>) {
        let mut overflow = self.overflow.lock().unwrap_or_else(PoisonError::into_inner);
        let queue = overflow.get_or_insert_with(|| {
            let (queue, mut pending) = mpsc::unbounded_channel::<Box<LoopEvent>>();
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
#[derive(Debug)]
pub struct EventReceiver {
    rx: mpsc::Receiver<Box<LoopEvent>>,
}

impl EventReceiver {
    /// A channel for `capacity` events: the run's sender and this receiver.
    pub(crate) fn channel(capacity: usize) -> (mpsc::Sender<Box<LoopEvent>>, Self) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (tx, Self { rx })
    }

    /// The next event; `None` once the run has ended and every event was read.
    pub async fn recv(&mut self) -> Option<LoopEvent> {
        self.rx.recv().await.map(|event| *event)
    }

    /// The next event if one is ready, without waiting.
    pub fn try_recv(&mut self) -> Result<LoopEvent, mpsc::error::TryRecvError> {
        self.rx.try_recv().map(|event| *event)
    }

    /// Polls for the next event, for a hand-written `Stream` or future.
    pub fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<LoopEvent>> {
        self.rx.poll_recv(cx).map(|event| event.map(|event| *event))
    }

    /// Stops reading: the run no longer waits for room (events already sent stay readable).
    pub fn close(&mut self) {
        self.rx.close();
    }

    /// Whether the run has ended its sending (or [`close`](Self::close) was called).
    pub fn is_closed(&self) -> bool {
        self.rx.is_closed()
    }

    /// Whether no event is waiting.
    pub fn is_empty(&self) -> bool {
        self.rx.is_empty()
    }

    /// How many events wait to be read.
    pub fn len(&self) -> usize {
        self.rx.len()
    }

    /// The events as a stream.
    pub fn into_stream(self) -> impl futures::Stream<Item = LoopEvent> + Send + Unpin {
        Box::pin(futures::stream::unfold(self, |mut events| async move {
            let event = events.recv().await?;
            Some((event, events))
        }))
    }
}

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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::run_state::RunShared;

    fn event() -> LoopEvent {
        LoopEvent::InputRejected {
            message: "m".into(),
        }
    }

    #[tokio::test]
    async fn an_emit_future_holds_the_event_boxed_not_inline() {
        // An idle loop's task is as large as its largest state, and most states emit: an
        // `emit` that kept its event inline held it two or three times (1,520 bytes in a debug
        // build, 312 boxed).
        let (tx, mut events) = EventReceiver::channel(4);
        let emitter = Emitter::new(tx, Broadcast::new(4), CancellationToken::new());
        let run = RunShared::new(emitter, CancellationToken::new());
        let emitting = run.emit(event());
        assert!(
            std::mem::size_of_val(&emitting) < 2 * std::mem::size_of::<LoopEvent>(),
            "{} bytes",
            std::mem::size_of_val(&emitting)
        );
        emitting.await;
        assert_eq!(events.recv().await, Some(event()));
    }

    #[tokio::test]
    async fn the_receiver_reads_in_order_and_reports_the_end() {
        let (tx, mut events) = EventReceiver::channel(1);
        let emitter = Emitter::new(tx, Broadcast::new(4), CancellationToken::new());
        let sending = tokio::spawn(async move {
            for n in 0..3 {
                emitter
                    .emit(LoopEvent::InputRejected {
                        message: n.to_string(),
                    })
                    .await;
            }
        });
        for n in 0..3 {
            assert_eq!(
                events.recv().await,
                Some(LoopEvent::InputRejected {
                    message: n.to_string()
                })
            );
        }
        sending.await.unwrap();
        assert_eq!(events.recv().await, None);
        assert!(events.is_closed() && events.is_empty());
        assert_eq!(events.len(), 0);
        assert!(events.try_recv().is_err());
    }
}
