//! Serving the router: loopback by default, TCP_NODELAY on every accepted socket.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::Router;
use axum::serve::ListenerExt as _;
use tokio::net::TcpListener;

/// Binds `127.0.0.1:port` (0 picks a free port). Bind another address yourself only on
/// purpose, and then set a bearer token.
pub async fn bind(port: u16) -> std::io::Result<TcpListener> {
    TcpListener::bind(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)).await
}

/// Serves `router` on `listener` until the future is dropped, with TCP_NODELAY set on every
/// accepted connection.
pub async fn serve(listener: TcpListener, router: Router) -> std::io::Result<()> {
    let listener = listener.tap_io(|tcp| {
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::warn!(%err, "could not set TCP_NODELAY on an accepted socket");
        }
    });
    axum::serve(listener, router).await
}
