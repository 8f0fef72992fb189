//! The idle watchdog: when a connection last moved a byte, and how many of its requests are
//! in progress.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// When a connection last moved a byte, and how many of its requests are in progress.
pub(super) struct Activity {
    start: Instant,
    last_ms: AtomicU64,
    busy: AtomicUsize,
}

impl Activity {
    pub(super) fn new() -> Self {
        Self {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
            busy: AtomicUsize::new(0),
        }
    }

    fn touch(&self) {
        let ms = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    /// Resolves once the connection has had no request in progress and moved no byte for
    /// `limit`.
    pub(super) async fn idle(&self, limit: Duration) {
        let step = (limit / 4).max(Duration::from_millis(10));
        loop {
            tokio::time::sleep(step).await;
            let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
            let quiet = self.start.elapsed().saturating_sub(last);
            if self.busy.load(Ordering::Relaxed) == 0 && quiet >= limit {
                return;
            }
        }
    }
}

/// A request in progress, from its headers to its response's head.
pub(super) struct Busy(Arc<Activity>);

impl Busy {
    pub(super) fn start(activity: Arc<Activity>) -> Self {
        activity.busy.fetch_add(1, Ordering::Relaxed);
        Self(activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::Relaxed);
        self.0.touch();
    }
}

/// A socket that records when bytes move.
pub(super) struct Watched {
    io: TcpStream,
    activity: Arc<Activity>,
}

impl Watched {
    pub(super) fn new(io: TcpStream, activity: Arc<Activity>) -> Self {
        Self { io, activity }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
