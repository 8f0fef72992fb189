//! Serving a router: loopback by default, TCP_NODELAY on every accepted socket, time limits
//! on every phase of a connection, a connection cap that sheds idle sockets first, and
//! graceful shutdown.
//!
//! axum's own `serve` has no header-read, idle or body timeout; a few thousand idle sockets
//! would hold every file descriptor. This accept loop is hyper's HTTP/1 connection with those
//! limits.

mod conn;
mod limits;

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tower_service::Service as _;

pub use limits::ServeLimits;

use crate::security::LocalAddr;
use conn::{Conn, RequestBody, ResponseBody, Tracker};

/// Binds `127.0.0.1:port` (0 picks a free port). Bind another address yourself only on
/// purpose, and then set a bearer token.
pub async fn bind(port: u16) -> io::Result<TcpListener> {
    mux_http::serve::bind_loopback(port).await
}

/// Serves `router` on `listener` with the default [`ServeLimits`] until the future is
/// dropped. Use [`Server`] for other limits or graceful shutdown.
pub async fn serve(listener: TcpListener, router: Router) -> io::Result<()> {
    Server::new(listener, router).run().await
}

/// A server for a router, with limits and an optional shutdown signal.
pub struct Server {
    listener: TcpListener,
    router: Router,
    limits: ServeLimits,
    shutdown: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
}

impl Server {
    /// A server for `router` on `listener`, with the default limits.
    pub fn new(listener: TcpListener, router: Router) -> Self {
        Self {
            listener,
            router,
            limits: ServeLimits::default(),
            shutdown: None,
        }
    }

    /// Sets the limits.
    pub fn limits(mut self, limits: ServeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Stops when `signal` completes: no new connections; responses in progress get
    /// [`ServeLimits::shutdown_grace`] to end, then are closed.
    pub fn with_graceful_shutdown(
        mut self,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> Self {
        self.shutdown = Some(Box::pin(signal));
        self
    }

    /// Serves until the shutdown signal (or forever). Fails only if the listener has no
    /// local address; accept errors are logged and retried with a pause.
    pub async fn run(self) -> io::Result<()> {
        let Self {
            listener,
            router,
            limits,
            shutdown,
        } = self;
        let local = listener.local_addr()?;
        let limits = Arc::new(limits);
        let cap = limits.connection_cap();
        let tracker = Arc::new(Tracker::default());
        let stopping = CancellationToken::new();
        let mut tasks = JoinSet::new();
        let mut signal = shutdown.unwrap_or_else(|| Box::pin(std::future::pending()));
        let mut backoff = Duration::from_millis(5);
        loop {
            while tasks.try_join_next().is_some() {}
            let accepted = tokio::select! {
                biased;
                () = &mut signal => break,
                accepted = listener.accept() => accepted,
            };
            match accepted {
                Ok((tcp, peer)) => {
                    backoff = Duration::from_millis(5);
                    if tracker.len() >= cap && !tracker.shed_oldest() {
                        tracing::debug!(%peer, cap, "every connection is busy; closing a new one");
                        continue;
                    }
                    if let Err(err) = tcp.set_nodelay(true) {
                        tracing::warn!(%err, "could not set TCP_NODELAY on an accepted socket");
                    }
                    let local = tcp.local_addr().unwrap_or(local);
                    let (id, conn) = tracker.add();
                    let tracker = Arc::clone(&tracker);
                    let job = Connection {
                        router: router.clone(),
                        limits: Arc::clone(&limits),
                        conn,
                        stopping: stopping.clone(),
                        local,
                        peer,
                    };
                    tasks.spawn(async move {
                        job.serve(tcp).await;
                        tracker.remove(id);
                    });
                }
                Err(err) if is_per_connection(&err) => {}
                Err(err) => {
                    // Out of descriptors (or memory): free one by shedding the oldest idle
                    // connection, and pause so the loop never spins.
                    let shed = tracker.shed_oldest();
                    tracing::warn!(%err, shed, pause = ?backoff, "accept failed");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(500));
                }
            }
        }
        drop(listener);
        stopping.cancel();
        let grace = tokio::time::sleep(limits.shutdown_grace);
        tokio::pin!(grace);
        loop {
            tokio::select! {
                next = tasks.join_next() => if next.is_none() { break },
                () = &mut grace => {
                    for conn in tracker.all() {
                        conn.shed.cancel();
                    }
                    tasks.shutdown().await;
                    break;
                }
            }
        }
        Ok(())
    }
}

/// Errors of one connection that `accept` reports (it went away before it was accepted).
fn is_per_connection(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

/// One accepted connection.
struct Connection {
    router: Router,
    limits: Arc<ServeLimits>,
    conn: Arc<Conn>,
    stopping: CancellationToken,
    local: SocketAddr,
    peer: SocketAddr,
}

impl Connection {
    async fn serve(self, tcp: TcpStream) {
        let Self {
            router,
            limits,
            conn,
            stopping,
            local,
            peer,
        } = self;
        let service_conn = Arc::clone(&conn);
        let service = hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
            let mut router = router.clone();
            let conn = Arc::clone(&service_conn);
            async move {
                conn.request_started(http_body::Body::is_end_stream(request.body()));
                let (mut parts, body) = request.into_parts();
                parts.extensions.insert(LocalAddr(local));
                parts.extensions.insert(ConnectInfo(peer));
                let body = Body::new(RequestBody {
                    inner: body,
                    conn: Some(Arc::clone(&conn)),
                });
                let response = match router.call(hyper::Request::from_parts(parts, body)).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                };
                Ok::<_, Infallible>(response.map(|inner| {
                    Body::new(ResponseBody {
                        inner,
                        conn: Some(conn),
                    })
                }))
            }
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            .max_buf_size(limits.max_header_bytes.max(8192));
        let connection = builder.serve_connection(TokioIo::new(tcp), service);
        tokio::pin!(connection);
        let watchdog = watchdog(&conn, &limits);
        tokio::pin!(watchdog);
        tokio::select! {
            served = connection.as_mut() => {
                if let Err(err) = served {
                    tracing::debug!(%err, %peer, "connection ended with an error");
                }
                return;
            }
            () = conn.shed.cancelled() => return,
            () = &mut watchdog => {
                tracing::debug!(%peer, "connection closed: out of time");
                return;
            }
            () = stopping.cancelled() => {}
        }
        // Graceful shutdown: finish the response in progress, take no new request.
        connection.as_mut().graceful_shutdown();
        tokio::select! {
            _ = connection.as_mut() => {}
            () = conn.shed.cancelled() => {}
            () = &mut watchdog => {}
        }
    }
}

/// Completes when the connection has spent longer than its limit in its current phase. It
/// sleeps until that deadline, or (while a response is sent, which has none) until the phase
/// changes: an idle SSE stream costs no wake-ups.
async fn watchdog(conn: &Conn, limits: &ServeLimits) {
    loop {
        let changed = conn.changed.notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        match conn.deadline(limits) {
            Some(at) if at <= tokio::time::Instant::now() => return,
            Some(at) => {
                tokio::select! {
                    () = tokio::time::sleep_until(at) => {}
                    () = &mut changed => {}
                }
            }
            None => changed.await,
        }
    }
}
