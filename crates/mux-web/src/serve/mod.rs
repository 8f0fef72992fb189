//! Serving a router on mux-http's one accept loop (the same as A2A's and MCP's): loopback by
//! default, TCP_NODELAY on every accepted socket, time limits on every phase of a connection,
//! a connection cap that sheds the oldest idle connection, and graceful shutdown.

use std::future::Future;
use std::io;
use std::pin::Pin;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use mux_http::serve::{Addrs, RequestBody, accept_loop};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_service::Service as _;

/// The limits every connection is held to: mux-http's, shared by every mux server.
pub use mux_http::serve::Limits as ServeLimits;

use crate::security::LocalAddr;

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
        listener.local_addr()?;
        let stop = CancellationToken::new();
        let trigger = {
            let stop = stop.clone();
            async move {
                match shutdown {
                    Some(signal) => signal.await,
                    None => std::future::pending().await,
                }
                stop.cancel();
                std::future::pending::<()>().await;
            }
        };
        let handler = move |request: axum::http::Request<RequestBody>, addrs: Addrs| {
            let mut router = router.clone();
            let (mut parts, body) = request.into_parts();
            parts.extensions.insert(LocalAddr(addrs.local));
            parts.extensions.insert(ConnectInfo(addrs.peer));
            let request = axum::http::Request::from_parts(parts, Body::new(body));
            async move {
                match router.call(request).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                }
            }
        };
        tokio::select! {
            () = accept_loop(listener, limits, stop, handler) => {}
            () = trigger => {}
        }
        Ok(())
    }
}
