//! The accept loop of one command's proxy: each connection's first byte says which protocol
//! it speaks (`5`: SOCKS5, anything else: HTTP). The loop, and every connection it serves,
//! ends when the [`Proxy`] is dropped.

use std::sync::Arc;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use super::gate::Gate;
use super::head;
use super::policy::NetworkPolicy;
use super::{http, socks};

/// The most connections served at once; more wait to be accepted.
const MAX_CONNECTIONS: usize = 256;

/// A running proxy; dropping it stops it and closes its connections.
#[derive(Debug)]
pub(crate) struct Proxy {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Serves `listener` (a listener in the command's network namespace, or any other) under
    /// `policy`, on the current tokio runtime.
    pub(crate) fn serve(listener: TcpListener, policy: NetworkPolicy) -> Self {
        let gate = Arc::new(Gate::new(policy));
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                if connections.len() >= MAX_CONNECTIONS {
                    connections.join_next().await;
                    continue;
                }
                tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, _)) => {
                            let gate = Arc::clone(&gate);
                            connections.spawn(async move { connection(&gate, stream).await });
                        }
                        Err(err) => {
                            tracing::warn!(%err, "the sandbox's network proxy cannot accept");
                            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        }
                    },
                    Some(_) = connections.join_next() => {}
                }
            }
        });
        Self { task }
    }
}

async fn connection(gate: &Gate, mut stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut buf = Vec::new();
    if head::fill(&mut stream, &mut buf, 1, |b| !b.is_empty())
        .await
        .is_err()
    {
        return;
    }
    let served = if buf[0] == 5 {
        socks::serve(gate, stream, buf).await
    } else {
        http::serve(gate, stream, buf).await
    };
    if let Err(why) = served {
        tracing::info!(%why, "the sandbox's network proxy refused a connection");
    }
}
