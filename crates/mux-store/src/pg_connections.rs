//! Connections of a store's own, kept open from one use to the next and handed out without
//! the test a pool makes: sqlx sends a query down every connection handed back to its pool,
//! a round trip after every statement. A connection is put back only by whoever finished
//! with it whole, so one whose query was cancelled midway (its future dropped) is closed,
//! never reused: the reason sqlx tests on release does not arise.
//!
//! Each connection knows its server process ([`Backend`]): who to stop when it stops
//! answering.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgConnection};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// At most `max` connections to one database, and the idle ones among them.
#[derive(Debug)]
pub(crate) struct Connections {
    options: PgConnectOptions,
    /// Idle connections, each with its server process and when it was put back.
    idle: Mutex<Vec<(PgConnection, Backend, Instant)>>,
    /// One permit per connection that may be open and in use.
    permits: Arc<Semaphore>,
    /// How long getting a connection (a permit, then opening one) may take.
    acquire: Duration,
}

/// A connection in use: [put it back](Connections::put) when done with it whole; dropped, it
/// is closed.
#[derive(Debug)]
pub(crate) struct Held {
    conn: PgConnection,
    backend: Backend,
    _permit: OwnedSemaphorePermit,
}

/// The server process behind a connection, as `pg_stat_activity` names it (a pid alone may be
/// reused once the process is gone), and the connection's `statement_timeout`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Backend {
    /// The process id.
    pub(crate) pid: i32,
    /// When it started, as PostgreSQL prints it.
    pub(crate) started: String,
    /// The connection's `statement_timeout`; zero when statements are not bounded.
    pub(crate) statement_timeout: Duration,
}

impl Backend {
    /// The server process behind `conn`.
    async fn of(conn: &mut PgConnection) -> Result<Self, sqlx::Error> {
        let (pid, started, timeout_ms): (i32, String, i64) = sqlx::query_as(&format!(
            "SELECT pid, backend_start::text, {} \
             FROM pg_stat_activity WHERE pid = pg_backend_pid()",
            crate::pg_pool::STATEMENT_TIMEOUT_MS
        ))
        .fetch_one(conn)
        .await?;
        Ok(Self {
            pid,
            started,
            statement_timeout: crate::pg_pool::statement_timeout(timeout_ms),
        })
    }
}

impl Held {
    /// The server process behind the connection.
    pub(crate) fn backend(&self) -> &Backend {
        &self.backend
    }
}

impl Deref for Held {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        &self.conn
    }
}

impl DerefMut for Held {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.conn
    }
}

impl Connections {
    /// Up to `max` connections on `options`, each got within `acquire`.
    pub(crate) fn new(options: PgConnectOptions, max: usize, acquire: Duration) -> Self {
        Self {
            options,
            idle: Mutex::default(),
            permits: Arc::new(Semaphore::new(max)),
            acquire,
        }
    }

    /// An open connection: the last one put back, or a new one. One idle longer than the
    /// pools trust ([`crate::pg_pool::TRUSTED_IDLE`]) is tested first (its test answered within
    /// a quarter of the time to get one), so a restarted server or a silent connection fails
    /// no statement. [`sqlx::Error::PoolTimedOut`] when none is got within the time.
    pub(crate) async fn take(&self) -> Result<Held, sqlx::Error> {
        tokio::time::timeout(self.acquire, async {
            let permit = Arc::clone(&self.permits)
                .acquire_owned()
                .await
                .map_err(|_| sqlx::Error::PoolClosed)?;
            loop {
                let idle = self
                    .idle
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .pop();
                let Some((mut conn, backend, since)) = idle else {
                    break;
                };
                // A ping left unanswered (a connection gone silent) drops the connection, and
                // leaves time to open another.
                if since.elapsed() < crate::pg_pool::TRUSTED_IDLE
                    || matches!(
                        tokio::time::timeout(self.acquire / 4, conn.ping()).await,
                        Ok(Ok(()))
                    )
                {
                    return Ok(Held {
                        conn,
                        backend,
                        _permit: permit,
                    });
                }
            }
            let mut conn = PgConnection::connect_with(&self.options).await?;
            let backend = Backend::of(&mut conn).await?;
            Ok(Held {
                conn,
                backend,
                _permit: permit,
            })
        })
        .await
        .map_err(|_| sqlx::Error::PoolTimedOut)?
    }

    /// Keeps `held`'s connection for a later use.
    pub(crate) fn put(&self, held: Held) {
        let Held {
            conn,
            backend,
            _permit,
        } = held;
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((conn, backend, Instant::now()));
    }

    /// Closes the idle connections (those in use close when dropped, or are kept when put
    /// back).
    pub(crate) async fn close_idle(&self) {
        let idle = std::mem::take(&mut *self.idle.lock().unwrap_or_else(PoisonError::into_inner));
        for (conn, _, _) in idle {
            let _ = conn.close().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(url: &str) -> PgConnectOptions {
        url.parse().expect("a test database URL")
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connection_whose_query_was_cancelled_is_never_handed_out_again() {
        let db = mux_testkit::postgres::TestDatabase::new().await;
        let connections = Connections::new(options(&db.url), 1, Duration::from_secs(5));
        let mut held = connections.take().await.unwrap();
        let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&mut *held)
            .await
            .unwrap();
        assert_eq!(held.backend().pid, pid, "each connection knows its process");
        connections.put(held);

        // A query dropped midway: its connection goes with it.
        let mut held = connections.take().await.unwrap();
        let cancelled = tokio::time::timeout(
            Duration::from_millis(200),
            sqlx::query("SELECT pg_sleep(5)").execute(&mut *held),
        )
        .await;
        assert!(cancelled.is_err());
        drop(held);

        let mut held = connections.take().await.unwrap();
        let (again, one): (i32, i32) = sqlx::query_as("SELECT pg_backend_pid(), 1")
            .fetch_one(&mut *held)
            .await
            .unwrap();
        assert_eq!(one, 1);
        assert_ne!(
            again, pid,
            "a fresh connection, not the one cancelled mid-query"
        );
        connections.put(held);
        let mut held = connections.take().await.unwrap();
        let reused: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
            .fetch_one(&mut *held)
            .await
            .unwrap();
        assert_eq!(reused, again, "one put back whole is kept");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_connection_knows_its_statement_timeout_and_none_is_zero() {
        let db = mux_testkit::postgres::TestDatabase::new().await;
        let bounded = options(&db.url).options([("statement_timeout", "1500ms")]);
        let held = Connections::new(bounded, 1, Duration::from_secs(5))
            .take()
            .await
            .unwrap();
        assert_eq!(
            held.backend().statement_timeout,
            Duration::from_millis(1500)
        );
        let minutes = options(&db.url).options([("statement_timeout", "2min")]);
        let held = Connections::new(minutes, 1, Duration::from_secs(5))
            .take()
            .await
            .unwrap();
        assert_eq!(held.backend().statement_timeout, Duration::from_secs(120));
        let held = Connections::new(options(&db.url), 1, Duration::from_secs(5))
            .take()
            .await
            .unwrap();
        assert_eq!(held.backend().statement_timeout, Duration::ZERO);
        assert!(!held.backend().started.is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_more_than_max_are_in_use_and_a_taker_waits_at_most_its_time() {
        let db = mux_testkit::postgres::TestDatabase::new().await;
        let connections = Connections::new(options(&db.url), 2, Duration::from_millis(300));
        let first = connections.take().await.unwrap();
        let _second = connections.take().await.unwrap();
        let started = Instant::now();
        assert!(matches!(
            connections.take().await,
            Err(sqlx::Error::PoolTimedOut)
        ));
        assert!(started.elapsed() >= Duration::from_millis(300));
        // One dropped frees its place.
        drop(first);
        connections.take().await.unwrap();
    }
}
