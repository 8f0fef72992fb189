//! Serving a request handler on a socket: loopback binding, `TCP_NODELAY`, a connection cap
//! (connections past it wait in the kernel's backlog), a time limit on request headers, an
//! optional idle limit, and shutdown on a cancellation token.
//!
//! hyper's HTTP/1 connection with these limits; axum's own `serve` has none of them.

mod activity;

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use activity::{Activity, Busy, Watched};

/// Binds `127.0.0.1:port` (0 picks a free port).
pub async fn bind_loopback(port: u16) -> io::Result<TcpListener> {
    TcpListener::bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)).await
}

/// The limits [`accept_loop`] enforces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// How long a connection may take to send a request's headers.
    pub header_timeout: Duration,
    /// When set, a connection with no request in progress that moves no byte for this long
    /// is closed: a keep-alive socket left open, or a stream whose client stopped reading.
    pub idle_timeout: Option<Duration>,
    /// Connections served at once (at least one); more wait in the kernel's backlog.
    pub max_connections: usize,
}

impl Limits {
    /// `max_connections` at once, `header_timeout` for headers, no idle limit.
    pub fn new(header_timeout: Duration, max_connections: usize) -> Self {
        Self {
            header_timeout,
            idle_timeout: None,
            max_connections,
        }
    }

    /// Closes connections idle for `timeout`.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }
}

/// What serves one request: any `Fn(Request<Incoming>, SocketAddr) -> impl Future<Output =
/// Response<B>>` that can be cloned into each connection, `B` being any HTTP body.
pub trait Handler: Clone + Send + Sync + 'static {
    /// The response body.
    type Body: http_body::Body<Data: Send, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
        + Send
        + 'static;
    /// The response, to come.
    type Future: Future<Output = Response<Self::Body>> + Send + 'static;
    /// Serves `request`, which came in on a connection accepted on `local`.
    fn call(&self, request: Request<Incoming>, local: SocketAddr) -> Self::Future;
}

impl<H, Fut, B> Handler for H
where
    H: Fn(Request<Incoming>, SocketAddr) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = Response<B>> + Send + 'static,
    B: http_body::Body<Data: Send, Error: Into<Box<dyn std::error::Error + Send + Sync>>>
        + Send
        + 'static,
{
    type Body = B;
    type Future = Fut;

    fn call(&self, request: Request<Incoming>, local: SocketAddr) -> Fut {
        self(request, local)
    }
}

/// Accepts connections on `listener` until `stop` is cancelled, and serves each request
/// with `handler` (given the request and the local address the connection was accepted
/// on). Cancelling `stop` also closes every open connection. Accept errors are logged and
/// retried after a pause.
pub async fn accept_loop<H, Fut>(
    listener: TcpListener,
    limits: Limits,
    stop: CancellationToken,
    handler: H,
) where
    // The `Fn` bound lets a closure's argument types be inferred.
    H: Fn(Request<Incoming>, SocketAddr) -> Fut + Handler,
{
    let fallback = listener
        .local_addr()
        .unwrap_or_else(|_| SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0));
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
                tracing::warn!(error = %err, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let local = stream.local_addr().unwrap_or(fallback);
        let handler = handler.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let _permit = permit;
            serve_connection(stream, local, handler, limits, stop).await;
        });
    }
}

async fn serve_connection(
    stream: TcpStream,
    local: SocketAddr,
    handler: impl Handler,
    limits: Limits,
    stop: CancellationToken,
) {
    let activity = Arc::new(Activity::new());
    let io = Watched::new(stream, Arc::clone(&activity));
    let in_service = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let busy = Busy::start(Arc::clone(&in_service));
        let response = handler.call(request, local);
        async move {
            let response = response.await;
            drop(busy);
            Ok::<_, Infallible>(response)
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .serve_connection(TokioIo::new(io), service);
    let idle = async {
        match limits.idle_timeout {
            Some(limit) => activity.idle(limit).await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        () = stop.cancelled() => {}
        () = idle => {}
        _ = connection => {}
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
            |request, local| async move {
                let body = format!("{} {}", request.uri().path(), local.port());
                Response::new(body)
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
        let (addr, stop) = server(Limits::new(Duration::from_secs(5), 4)).await;
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
        let limits =
            Limits::new(Duration::from_millis(200), 4).idle_timeout(Duration::from_millis(300));
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
    async fn connections_past_the_cap_wait_for_a_free_slot() {
        let (addr, _stop) = server(Limits::new(Duration::from_secs(30), 1)).await;
        let mut first = connect(addr).await;
        assert!(get(&mut first).await.starts_with("HTTP/1.1 200"));
        let mut second = connect(addr).await;
        let _ = second
            .write_all(b"GET /second HTTP/1.1\r\nhost: localhost\r\n\r\n")
            .await;
        assert_eq!(
            answer(&mut second, Duration::from_millis(300)).await,
            "",
            "the second connection is not served while the first holds the slot"
        );
        drop(first);
        let answer = answer(&mut second, Duration::from_secs(10)).await;
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    }
}
