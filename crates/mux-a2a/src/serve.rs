//! Serving the router on a socket with mux-http's accept loop: TCP_NODELAY, a connection
//! cap, a time limit on request headers, and an idle limit (a connection with no request in
//! progress that moves no byte for that long is closed: a keep-alive socket left open, or a
//! stream whose client stopped reading).

use std::net::SocketAddr;

use axum::Router;
use axum::body::Body;
use mux_http::serve::Limits;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::router::LocalPort;

/// Accepts connections until `stop`, each request going to `router` with the port it came
/// in on.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    stop: CancellationToken,
) {
    mux_http::serve::accept_loop(listener, limits, stop, move |request, local: SocketAddr| {
        let mut router = router.clone();
        let mut request = request.map(Body::new);
        request.extensions_mut().insert(LocalPort(local.port()));
        async move {
            match tower_service::Service::call(&mut router, request).await {
                Ok(response) => response,
                Err(never) => match never {},
            }
        }
    })
    .await;
}

/// The address a listener is bound to, for messages.
pub(crate) fn bound(listener: &TcpListener, fallback: SocketAddr) -> SocketAddr {
    listener.local_addr().unwrap_or(fallback)
}
