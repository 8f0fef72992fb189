//! The writer's own connections, kept open from one commit to the next. A pool would send a
//! query down every connection handed back to it (sqlx tests each on release), a round trip
//! per commit that writes nothing.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection};

/// The idle connections of one writer, and how to open more.
#[derive(Debug)]
pub(super) struct Connections {
    options: PgConnectOptions,
    /// Idle connections, each with when it was put back.
    idle: Mutex<Vec<(PgConnection, Instant)>>,
    /// How long opening a connection may take.
    connect: Duration,
}

impl Connections {
    pub(super) fn new(options: PgConnectOptions, connect: Duration) -> Self {
        Self {
            options,
            idle: Mutex::default(),
            connect,
        }
    }

    /// An open connection: the last one put back, or a new one. One idle longer than the
    /// pools trust ([`crate::pg_pool::TRUSTED_IDLE`]) is tested first, so a restarted server
    /// fails no commit.
    pub(super) async fn take(&self) -> Result<PgConnection, sqlx::Error> {
        loop {
            let idle = self
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .pop();
            let Some((mut conn, since)) = idle else {
                break;
            };
            if since.elapsed() < crate::pg_pool::TRUSTED_IDLE || conn.ping().await.is_ok() {
                return Ok(conn);
            }
        }
        tokio::time::timeout(self.connect, PgConnection::connect_with(&self.options))
            .await
            .map_err(|_| sqlx::Error::PoolTimedOut)?
    }

    /// Keeps `conn` for a later commit.
    pub(super) fn put(&self, conn: PgConnection) {
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((conn, Instant::now()));
    }
}
