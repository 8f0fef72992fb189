//! Connection bookkeeping: what each connection is doing and since when, which one to shed
//! at the cap, and the request and response bodies that report when they end.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::limits::ServeLimits;

/// What a connection is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for a request's headers (a new connection, or keep-alive between requests).
    Waiting,
    /// The request's headers arrived; its body has not ended.
    Receiving,
    /// The request was read; its response is being produced (no limit: a handler may think).
    Sending,
    /// The response body is being sent; `since` is when it last moved (a client that stops
    /// reading stops it).
    Streaming,
}

#[derive(Debug)]
struct State {
    phase: Phase,
    since: Instant,
    served: u64,
}

/// One connection.
#[derive(Debug)]
pub(crate) struct Conn {
    state: Mutex<State>,
    /// Cancelled to close the connection (shed at the cap).
    pub(crate) shed: CancellationToken,
    /// Woken at every phase change.
    pub(crate) changed: Notify,
}

impl Conn {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set(&self, from: &[Phase], to: Phase) {
        let mut state = self.state();
        if from.contains(&state.phase) {
            if to == Phase::Waiting {
                state.served += 1;
            }
            state.phase = to;
            state.since = Instant::now();
            drop(state);
            self.changed.notify_waiters();
        }
    }

    /// A request's headers arrived; `body_ended` when it has no body.
    pub(crate) fn request_started(&self, body_ended: bool) {
        let to = if body_ended {
            Phase::Sending
        } else {
            Phase::Receiving
        };
        self.set(&[Phase::Waiting], to);
    }

    fn body_ended(&self) {
        self.set(&[Phase::Receiving], Phase::Sending);
    }

    fn response_ended(&self) {
        self.set(
            &[Phase::Receiving, Phase::Sending, Phase::Streaming],
            Phase::Waiting,
        );
    }

    /// A frame of the response body went out: the response is moving.
    fn response_moved(&self) {
        let mut state = self.state();
        if matches!(state.phase, Phase::Sending | Phase::Streaming) {
            state.phase = Phase::Streaming;
            state.since = Instant::now();
        }
    }

    /// Whether the connection is idle or still sending its request: shed first at the cap.
    fn sheddable(&self) -> bool {
        matches!(self.state().phase, Phase::Waiting | Phase::Receiving)
    }

    /// When the connection's current phase runs out of time (`None`: producing a response,
    /// which has no limit).
    pub(crate) fn deadline(&self, limits: &ServeLimits) -> Option<Instant> {
        let state = self.state();
        let limit: Duration = match state.phase {
            Phase::Waiting if state.served == 0 => limits.header_read_timeout,
            Phase::Waiting => limits.idle_timeout,
            Phase::Receiving => limits.body_read_timeout,
            Phase::Streaming => limits.idle_timeout,
            Phase::Sending => return None,
        };
        Some(state.since + limit)
    }
}

/// The open connections, oldest first.
#[derive(Debug, Default)]
pub(crate) struct Tracker {
    next: Mutex<u64>,
    conns: Mutex<BTreeMap<u64, Arc<Conn>>>,
}

impl Tracker {
    fn conns(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<Conn>>> {
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many connections are open.
    pub(crate) fn len(&self) -> usize {
        self.conns().len()
    }

    /// Registers a new connection; its id is for [`Tracker::remove`].
    pub(crate) fn add(&self) -> (u64, Arc<Conn>) {
        let id = {
            let mut next = self.next.lock().unwrap_or_else(PoisonError::into_inner);
            *next += 1;
            *next
        };
        let conn = Arc::new(Conn {
            state: Mutex::new(State {
                phase: Phase::Waiting,
                since: Instant::now(),
                served: 0,
            }),
            shed: CancellationToken::new(),
            changed: Notify::new(),
        });
        self.conns().insert(id, Arc::clone(&conn));
        (id, conn)
    }

    /// Forgets a closed connection.
    pub(crate) fn remove(&self, id: u64) {
        self.conns().remove(&id);
    }

    /// Closes the oldest connection that is idle or still sending its request; false when
    /// every connection is sending a response.
    pub(crate) fn shed_oldest(&self) -> bool {
        let mut conns = self.conns();
        let oldest = conns
            .iter()
            .find(|(_, conn)| conn.sheddable())
            .map(|(id, _)| *id);
        match oldest.and_then(|id| conns.remove(&id)) {
            Some(conn) => {
                conn.shed.cancel();
                true
            }
            None => false,
        }
    }

    /// Every open connection (for graceful shutdown).
    pub(crate) fn all(&self) -> Vec<Arc<Conn>> {
        self.conns().values().cloned().collect()
    }
}

/// A request body that tells its connection when it ends (read to the end, failed, or
/// dropped unread).
pub(crate) struct RequestBody<B> {
    pub(crate) inner: B,
    pub(crate) conn: Option<Arc<Conn>>,
}

/// A response body that tells its connection when it ends (sent, failed, or dropped).
pub(crate) struct ResponseBody<B> {
    pub(crate) inner: B,
    pub(crate) conn: Option<Arc<Conn>>,
}

fn moved(conn: &Option<Arc<Conn>>, response: bool) {
    if let (Some(conn), true) = (conn, response) {
        conn.response_moved();
    }
}

fn end(conn: &mut Option<Arc<Conn>>, response: bool) {
    if let Some(conn) = conn.take() {
        if response {
            conn.response_ended();
        } else {
            conn.body_ended();
        }
    }
}

macro_rules! reporting_body {
    ($name:ident, $response:expr) => {
        impl<B> Body for $name<B>
        where
            B: Body<Data = Bytes> + Unpin,
        {
            type Data = Bytes;
            type Error = B::Error;

            fn poll_frame(
                mut self: Pin<&mut Self>,
                cx: &mut Context<'_>,
            ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
                let polled = Pin::new(&mut self.inner).poll_frame(cx);
                match &polled {
                    Poll::Ready(None) | Poll::Ready(Some(Err(_))) => end(&mut self.conn, $response),
                    Poll::Ready(Some(Ok(_))) => moved(&self.conn, $response),
                    Poll::Pending => {}
                }
                polled
            }

            fn is_end_stream(&self) -> bool {
                self.inner.is_end_stream()
            }

            fn size_hint(&self) -> SizeHint {
                self.inner.size_hint()
            }
        }

        impl<B> Drop for $name<B> {
            fn drop(&mut self) {
                end(&mut self.conn, $response);
            }
        }
    };
}

reporting_body!(RequestBody, false);
reporting_body!(ResponseBody, true);

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_oldest_idle_or_receiving_connection_is_shed_never_a_sending_one() {
        let tracker = Tracker::default();
        let (_, sending) = tracker.add();
        sending.request_started(true);
        let (_, receiving) = tracker.add();
        receiving.request_started(false);
        let (_, waiting) = tracker.add();
        assert!(tracker.shed_oldest());
        assert!(receiving.shed.is_cancelled() && !sending.shed.is_cancelled());
        assert!(tracker.shed_oldest());
        assert!(waiting.shed.is_cancelled());
        assert!(!tracker.shed_oldest(), "only a sending connection is left");
        assert_eq!(tracker.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn each_phase_has_its_time_limit() {
        let limits = ServeLimits::default()
            .header_read_timeout(Duration::from_secs(1))
            .idle_timeout(Duration::from_secs(2))
            .body_read_timeout(Duration::from_secs(3));
        let tracker = Tracker::default();
        let (_, conn) = tracker.add();
        let start = Instant::now();
        assert_eq!(conn.deadline(&limits), Some(start + Duration::from_secs(1)));
        conn.request_started(false);
        assert_eq!(conn.deadline(&limits), Some(start + Duration::from_secs(3)));
        conn.body_ended();
        assert_eq!(conn.deadline(&limits), None, "a handler may take its time");
        tokio::time::advance(Duration::from_secs(5)).await;
        conn.response_moved();
        let moved = Instant::now();
        assert_eq!(
            conn.deadline(&limits),
            Some(moved + Duration::from_secs(2)),
            "a stalled response is cut"
        );
        conn.response_ended();
        assert_eq!(conn.deadline(&limits), Some(moved + Duration::from_secs(2)));
    }
}
