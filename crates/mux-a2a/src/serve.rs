//! Serving the router on a socket: TCP_NODELAY, a connection cap, a time limit on request
//! headers, and an idle limit (a connection with no request in progress that moves no byte
//! for that long is closed: a keep-alive socket left open, or a stream whose client stopped
//! reading).

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::router::LocalPort;

/// The limits the accept loop enforces.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub(crate) header_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_connections: usize,
}

/// Accepts connections until `stop`.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    stop: CancellationToken,
) {
    let cap = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    loop {
        let permit = tokio::select! {
            () = stop.cancelled() => return,
            permit = Arc::clone(&cap).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => return,
            },
        };
        let accepted = tokio::select! {
            () = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(err) => {
                tracing::warn!(error = %err, "mux-a2a: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let port = stream.local_addr().map(|a| a.port()).ok();
        let router = router.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let _permit = permit;
            serve_connection(stream, router, port, limits, stop).await;
        });
    }
}

async fn serve_connection(
    stream: TcpStream,
    router: Router,
    port: Option<u16>,
    limits: Limits,
    stop: CancellationToken,
) {
    let activity = Arc::new(Activity::new());
    let io = Watched {
        io: stream,
        activity: Arc::clone(&activity),
    };
    let in_service = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
        let mut router = router.clone();
        let busy = Busy::start(Arc::clone(&in_service));
        let mut request = request.map(Body::new);
        if let Some(port) = port {
            request.extensions_mut().insert(LocalPort(port));
        }
        async move {
            let response = tower_service::Service::call(&mut router, request).await;
            drop(busy);
            response.map_err(|never: Infallible| match never {})
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .serve_connection(TokioIo::new(io), service);
    tokio::select! {
        () = stop.cancelled() => {}
        () = activity.idle(limits.idle_timeout) => {}
        _ = connection => {}
    }
}

/// When a connection last moved a byte, and how many of its requests are in progress.
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
    busy: AtomicUsize,
}

impl Activity {
    fn new() -> Self {
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
    async fn idle(&self, limit: Duration) {
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
struct Busy(Arc<Activity>);

impl Busy {
    fn start(activity: Arc<Activity>) -> Self {
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
struct Watched {
    io: TcpStream,
    activity: Arc<Activity>,
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

/// The address a listener is bound to, for messages.
pub(crate) fn bound(listener: &TcpListener, fallback: SocketAddr) -> SocketAddr {
    listener.local_addr().unwrap_or(fallback)
}
