//! Connection bookkeeping: what each connection is doing and since when, which one to shed
//! at the cap, and the request and response bodies that report when they end.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::limits::Limits;

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
pub(super) struct Conn {
    state: Mutex<State>,
    /// Cancelled to close the connection (shed at the cap).
    pub(super) shed: CancellationToken,
    /// Woken at every phase change.
    pub(super) changed: Notify,
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
    pub(super) fn request_started(&self, body_ended: bool) {
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

    /// How readily the connection is shed at the cap: 0 when idle (no request in flight:
    /// waiting for a first request, between requests, or partway through a request's
    /// headers), 1 while it sends a request's body, `None` while a response is produced or
    /// sent (never shed).
    fn shed_rank(&self) -> Option<u8> {
        match self.state().phase {
            Phase::Waiting => Some(0),
            Phase::Receiving => Some(1),
            Phase::Sending | Phase::Streaming => None,
        }
    }

    /// When the connection's current phase runs out of time (`None`: producing a response,
    /// which has no limit).
    pub(super) fn deadline(&self, limits: &Limits) -> Option<Instant> {
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
pub(super) struct Tracker {
    next: Mutex<u64>,
    conns: Mutex<BTreeMap<u64, Arc<Conn>>>,
}

impl Tracker {
    fn conns(&self) -> MutexGuard<'_, BTreeMap<u64, Arc<Conn>>> {
        self.conns.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many connections are open.
    pub(super) fn len(&self) -> usize {
        self.conns().len()
    }

    /// Registers a new connection; its id is for [`Tracker::remove`].
    pub(super) fn add(&self) -> (u64, Arc<Conn>) {
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
    pub(super) fn remove(&self, id: u64) {
        self.conns().remove(&id);
    }

    /// Closes the oldest idle connection, or when none is idle the oldest one still sending
    /// its request's body; false when every connection is producing or sending a response.
    pub(super) fn shed_oldest(&self) -> bool {
        let mut conns = self.conns();
        let mut pick: Option<(u8, u64)> = None;
        for (id, conn) in conns.iter() {
            match conn.shed_rank() {
                Some(0) => {
                    pick = Some((0, *id));
                    break;
                }
                Some(rank) if pick.is_none() => pick = Some((rank, *id)),
                _ => {}
            }
        }
        match pick.and_then(|(_, id)| conns.remove(&id)) {
            Some(conn) => {
                conn.shed.cancel();
                true
            }
            None => false,
        }
    }

    /// Every open connection (for graceful shutdown).
    pub(super) fn all(&self) -> Vec<Arc<Conn>> {
        self.conns().values().cloned().collect()
    }
}

/// A request's body as a handler gets it: hyper's body, which tells the accept loop when it
/// ends (read to the end, failed, or dropped unread), so that a slow body is timed and a
/// connection whose request was read is not shed as idle.
pub struct RequestBody {
    inner: Incoming,
    conn: Option<Arc<Conn>>,
}

impl RequestBody {
    pub(super) fn new(inner: Incoming, conn: Arc<Conn>) -> Self {
        Self {
            inner,
            conn: Some(conn),
        }
    }
}

impl std::fmt::Debug for RequestBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestBody").finish_non_exhaustive()
    }
}

/// A response body that tells its connection when it ends (sent, failed, or dropped).
pub(super) struct ResponseBody<B> {
    pub(super) inner: B,
    pub(super) conn: Option<Arc<Conn>>,
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

impl Body for RequestBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            end(&mut self.conn, false);
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

impl Drop for RequestBody {
    fn drop(&mut self) {
        end(&mut self.conn, false);
    }
}

impl<B> Body for ResponseBody<B>
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
            Poll::Ready(None | Some(Err(_))) => end(&mut self.conn, true),
            Poll::Ready(Some(Ok(_))) => moved(&self.conn, true),
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

impl<B> Drop for ResponseBody<B> {
    fn drop(&mut self) {
        end(&mut self.conn, true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn the_oldest_idle_connection_is_shed_first_never_a_sending_one() {
        let tracker = Tracker::default();
        let (_, sending) = tracker.add();
        sending.request_started(true);
        let (_, receiving) = tracker.add();
        receiving.request_started(false);
        let (_, waiting) = tracker.add();
        let (_, later) = tracker.add();
        assert!(tracker.shed_oldest());
        assert!(
            waiting.shed.is_cancelled(),
            "the oldest idle one goes first"
        );
        assert!(!receiving.shed.is_cancelled() && !later.shed.is_cancelled());
        assert!(tracker.shed_oldest());
        assert!(later.shed.is_cancelled());
        assert!(tracker.shed_oldest());
        assert!(
            receiving.shed.is_cancelled(),
            "then one still sending its body"
        );
        assert!(!sending.shed.is_cancelled());
        assert!(!tracker.shed_oldest(), "only a sending connection is left");
        assert_eq!(tracker.len(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn each_phase_has_its_time_limit() {
        let limits = Limits::default()
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
