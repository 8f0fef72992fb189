//! The one accept loop of every mux server (the web face, A2A, MCP): loopback binding,
//! `TCP_NODELAY` on every socket, a time limit on every phase of a connection, a connection
//! cap that sheds the oldest idle connection, and shutdown on a cancellation token.
//!
//! axum's own `serve` has no header-read, idle or body timeout, and a cap that makes new
//! connections wait for a free slot lets a few hundred silent sockets lock everyone out
//! until they time out. This loop is hyper's HTTP/1 connection with those limits; no server
//! of mux has an accept loop of its own.

mod conn;
mod limits;

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

pub use conn::RequestBody;
pub use limits::Limits;

use conn::{Conn, ResponseBody, Tracker};

/// Binds `127.0.0.1:port` (0 picks a free port).
pub async fn bind_loopback(port: u16) -> io::Result<TcpListener> {
    TcpListener::bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)).await
}

/// Where a connection came from and where it was accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Addrs {
    /// The local address the connection was accepted on.
    pub local: SocketAddr,
    /// The peer's address.
    pub peer: SocketAddr,
}

/// What serves one request: any `Fn(Request<RequestBody>, Addrs) -> impl Future<Output =
/// Response<B>>` that can be cloned into each connection, `B` being an HTTP body of
/// [`Bytes`].
pub trait Handler: Clone + Send + Sync + 'static {
    /// The response body.
    type Body: http_body::Body<Data = Bytes, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
        + Send
        + Unpin
        + 'static;
    /// The response, to come.
    type Future: Future<Output = Response<Self::Body>> + Send + 'static;
    /// Serves `request`, which came in on a connection from and to `addrs`.
    fn call(&self, request: Request<RequestBody>, addrs: Addrs) -> Self::Future;
}

impl<H, Fut, B> Handler for H
where
    H: Fn(Request<RequestBody>, Addrs) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<B>> + Send + 'static,
    B: http_body::Body<Data = Bytes, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
        + Send
        + Unpin
        + 'static,
{
    type Body = B;
    type Future = Fut;

    fn call(&self, request: Request<RequestBody>, addrs: Addrs) -> Fut {
        self(request, addrs)
    }
}

/// Accepts connections on `listener` until `stop` is cancelled, and serves each request
/// with `handler`.
///
/// At the cap ([`Limits::connection_cap`]) a new connection sheds the oldest idle one (no
/// request in flight, whether it sent a byte or not), else the oldest still sending a
/// request's body; when every connection is producing or sending a response, the new one is
/// closed. An `accept` that fails for lack of descriptors sheds one and pauses (5 ms,
/// doubling to 500 ms), never spins. Once `stop` is cancelled no connection is accepted,
/// responses in progress get [`Limits::shutdown_grace`] to end, and then every connection is
/// closed; the loop returns when they all are.
pub async fn accept_loop<H>(
    listener: TcpListener,
    limits: Limits,
    stop: CancellationToken,
    handler: H,
) where
    H: Handler,
{
    let fallback = listener
        .local_addr()
        .unwrap_or_else(|_| SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0));
    let limits = Arc::new(limits);
    let cap = limits.connection_cap();
    let tracker = Arc::new(Tracker::default());
    let mut tasks = JoinSet::new();
    let mut backoff = Duration::from_millis(5);
    loop {
        while tasks.try_join_next().is_some() {}
        let accepted = tokio::select! {
            biased;
            () = stop.cancelled() => break,
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
                let addrs = Addrs {
                    local: tcp.local_addr().unwrap_or(fallback),
                    peer,
                };
                let (id, conn) = tracker.add();
                let tracker = Arc::clone(&tracker);
                let job = Connection {
                    handler: handler.clone(),
                    limits: Arc::clone(&limits),
                    conn,
                    stopping: stop.clone(),
                    addrs,
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
struct Connection<H> {
    handler: H,
    limits: Arc<Limits>,
    conn: Arc<Conn>,
    stopping: CancellationToken,
    addrs: Addrs,
}

impl<H: Handler> Connection<H> {
    async fn serve(self, tcp: TcpStream) {
        let Self {
            handler,
            limits,
            conn,
            stopping,
            addrs,
        } = self;
        let service_conn = Arc::clone(&conn);
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            let conn = Arc::clone(&service_conn);
            conn.request_started(http_body::Body::is_end_stream(request.body()));
            let request = request.map(|body| RequestBody::new(body, Arc::clone(&conn)));
            let response = handler.call(request, addrs);
            async move {
                let response = response.await;
                Ok::<_, Infallible>(response.map(|inner| ResponseBody {
                    inner,
                    conn: Some(conn),
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
        let peer = addrs.peer;
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
        // Shutdown: finish the response in progress, take no new request.
        connection.as_mut().graceful_shutdown();
        tokio::select! {
            _ = connection.as_mut() => {}
            () = conn.shed.cancelled() => {}
            () = &mut watchdog => {}
        }
    }
}

/// Completes when the connection has spent longer than its limit in its current phase. It
/// sleeps until that deadline, or (while a response is produced, which has none) until the
/// phase changes: an idle SSE stream costs no wake-ups.
async fn watchdog(conn: &Conn, limits: &Limits) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    async fn server(limits: Limits) -> (SocketAddr, CancellationToken) {
        let listener = bind_loopback(0)
            .await
            .unwrap_or_else(|e| panic!("bind: {e}"));
        let addr = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("addr: {e}"));
        let stop = CancellationToken::new();
        tokio::spawn(accept_loop(
            listener,
            limits,
            stop.clone(),
            |request: Request<RequestBody>, addrs: Addrs| async move {
                let body = format!("{} {}", request.uri().path(), addrs.local.port());
                Response::new(http_body_util::Full::new(Bytes::from(body)))
            },
        ));
        (addr, stop)
    }

    async fn connect(addr: SocketAddr) -> TcpStream {
        TcpStream::connect(addr)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// What the peer sends next, waiting at most `wait` (empty when nothing came).
    async fn answer(stream: &mut TcpStream, wait: Duration) -> String {
        let mut buf = vec![0u8; 1024];
        let n = tokio::time::timeout(wait, stream.read(&mut buf))
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or(0);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    async fn get(stream: &mut TcpStream) -> String {
        let request = b"GET /hello HTTP/1.1\r\nhost: localhost\r\n\r\n";
        let _ = stream.write_all(request).await;
        answer(stream, Duration::from_secs(10)).await
    }

    /// Reads until the peer closes (`true`) or 10 s pass (`false`).
    async fn closed(stream: &mut TcpStream) -> bool {
        let mut buf = [0u8; 64];
        tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        })
        .await
        .is_ok()
    }

    #[tokio::test]
    async fn requests_reach_the_handler_with_the_local_address() {
        let (addr, stop) = server(Limits::default().max_connections(4)).await;
        let mut stream = connect(addr).await;
        let answer = get(&mut stream).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(
            answer.ends_with(&format!("/hello {}", addr.port())),
            "{answer}"
        );
        stop.cancel();
        assert!(closed(&mut stream).await, "stop closes open connections");
    }

    #[tokio::test]
    async fn silent_and_idle_connections_are_closed() {
        let limits = Limits::default()
            .header_read_timeout(Duration::from_millis(200))
            .idle_timeout(Duration::from_millis(300))
            .max_connections(4);
        let (addr, _stop) = server(limits).await;
        let mut silent = connect(addr).await;
        assert!(
            closed(&mut silent).await,
            "a connection sending no headers is closed"
        );
        let mut idle = connect(addr).await;
        assert!(get(&mut idle).await.starts_with("HTTP/1.1 200"));
        assert!(
            closed(&mut idle).await,
            "a keep-alive connection left idle is closed"
        );
    }

    #[tokio::test]
    async fn at_the_cap_the_oldest_idle_connection_makes_room() {
        let (addr, _stop) = server(Limits::default().max_connections(2)).await;
        let mut silent = connect(addr).await;
        let mut kept_alive = connect(addr).await;
        assert!(get(&mut kept_alive).await.starts_with("HTTP/1.1 200"));
        let mut third = connect(addr).await;
        let answer = get(&mut third).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(
            closed(&mut silent).await,
            "the oldest idle connection (it never sent a byte) was shed"
        );
    }
}
