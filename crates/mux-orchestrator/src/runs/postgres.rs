//! [`PostgresRunStore`]: the run contract across processes on one PostgreSQL.
//!
//! - `mux_runs` holds each run; a partial unique index on the session of active runs makes
//!   "one active run per session" hold on every process, atomically.
//! - `mux_run_events` holds the events, numbered from the run's `last_seq` under its row lock.
//! - Leases are the database's `now()` plus the lease, so processes need not agree on the time.
//! - `claim_expired` takes a row with `FOR UPDATE SKIP LOCKED`: claimants racing for expired
//!   runs each get a different one.
//! - Every change sends `NOTIFY mux_runs, '<run id>'`; one listener per store wakes the
//!   waiters of that run. A lost notification only delays a reader until its wait ends.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use mux_tool::BoxFuture;
use serde_json::Value;
use sqlx::postgres::{PgListener, PgPool, PgPoolOptions, PgRow};
use sqlx::{Postgres, Row, Transaction};
use tokio::sync::Notify;

use super::{
    RunRecord, RunStatus, RunStore, RunStoreError, StoredEvent, failed, not_held, unclaimable,
};

/// The notification channel.
const CHANNEL: &str = "mux_runs";

/// The schema, applied idempotently under an advisory lock.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS mux_runs (
    run_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    status TEXT NOT NULL,
    owner TEXT,
    lease_until TIMESTAMPTZ,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    last_seq BIGINT NOT NULL DEFAULT 0,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS mux_runs_one_active_per_session
    ON mux_runs (session_id) WHERE status IN ('running', 'paused');
CREATE INDEX IF NOT EXISTS mux_runs_leases
    ON mux_runs (lease_until) WHERE status = 'running';
CREATE TABLE IF NOT EXISTS mux_run_events (
    run_id TEXT NOT NULL REFERENCES mux_runs (run_id) ON DELETE CASCADE,
    seq BIGINT NOT NULL,
    event JSONB NOT NULL,
    PRIMARY KEY (run_id, seq)
);
";

/// An advisory lock key for the schema ("mux runs").
const SCHEMA_LOCK: i64 = 0x6d75_7872_756e_7301;

const COLUMNS: &str = "run_id, session_id, status, owner, cancel_requested, last_seq";

/// Runs in PostgreSQL, shared by every process on the database.
#[derive(Clone, Debug)]
pub struct PostgresRunStore {
    pool: PgPool,
    waiters: Arc<Waiters>,
    listener: Arc<tokio::task::JoinHandle<()>>,
}

/// Run id → the waiters to wake.
#[derive(Debug, Default)]
struct Waiters(Mutex<HashMap<String, Arc<Notify>>>);

impl Waiters {
    fn of(&self, run_id: &str) -> Arc<Notify> {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(map.entry(run_id.to_owned()).or_default())
    }

    fn wake(&self, run_id: &str) {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(notify) = map.get(run_id) {
            notify.notify_waiters();
        }
    }

    fn wake_all(&self) {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.values().for_each(|notify| notify.notify_waiters());
    }

    fn forget_idle(&self) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.retain(|_, notify| Arc::strong_count(notify) > 1);
    }
}

impl Drop for PostgresRunStore {
    fn drop(&mut self) {
        // The last handle stops the listener.
        if Arc::strong_count(&self.listener) == 1 {
            self.listener.abort();
        }
    }
}

fn millis(lease: Duration) -> i64 {
    i64::try_from(lease.as_millis()).unwrap_or(i64::MAX)
}

fn record(row: &PgRow) -> Result<RunRecord, RunStoreError> {
    let read = failed("reading a run");
    let status: String = row.try_get("status").map_err(read)?;
    let last_seq: i64 = row.try_get("last_seq").map_err(failed("reading a run"))?;
    Ok(RunRecord {
        run_id: row.try_get("run_id").map_err(failed("reading a run"))?,
        session_id: row.try_get("session_id").map_err(failed("reading a run"))?,
        status: RunStatus::parse(&status).ok_or_else(|| RunStoreError::Store {
            operation: "reading a run",
            reason: format!("unknown status `{status}`"),
        })?,
        owner: row.try_get("owner").map_err(failed("reading a run"))?,
        cancel_requested: row
            .try_get("cancel_requested")
            .map_err(failed("reading a run"))?,
        last_seq: u64::try_from(last_seq).unwrap_or_default(),
    })
}

impl PostgresRunStore {
    /// Connects to `url` (a pool of up to sixteen connections, 2 s to get one), creates the
    /// tables if needed and starts listening for changes.
    pub async fn connect(url: &str) -> Result<Self, RunStoreError> {
        let pool = PgPoolOptions::new()
            .max_connections(16)
            .acquire_timeout(Duration::from_secs(2))
            .connect(url)
            .await
            .map_err(failed("connecting"))?;
        Self::with_pool(pool).await
    }

    /// A store on an existing pool (it may be the session store's).
    pub async fn with_pool(pool: PgPool) -> Result<Self, RunStoreError> {
        let mut tx = pool.begin().await.map_err(failed("creating the tables"))?;
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(SCHEMA_LOCK)
            .execute(&mut *tx)
            .await
            .map_err(failed("locking the schema"))?;
        sqlx::raw_sql(SCHEMA)
            .execute(&mut *tx)
            .await
            .map_err(failed("creating the tables"))?;
        tx.commit().await.map_err(failed("creating the tables"))?;
        let waiters = Arc::new(Waiters::default());
        let listener = tokio::spawn(listen(pool.clone(), Arc::clone(&waiters)));
        Ok(Self {
            pool,
            waiters,
            listener: Arc::new(listener),
        })
    }

    /// The pool, for inspection and maintenance.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    async fn notify(tx: &mut Transaction<'_, Postgres>, run_id: &str) -> Result<(), RunStoreError> {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(run_id)
            .execute(&mut **tx)
            .await
            .map_err(failed("notifying"))?;
        Ok(())
    }
}

/// Wakes the waiters of each notified run. While the connection is down, waiters wake on
/// their own time; after a reconnect, all wake once (notifications may have been lost).
async fn listen(pool: PgPool, waiters: Arc<Waiters>) {
    loop {
        let connected = async {
            let mut listener = PgListener::connect_with(&pool).await?;
            listener.listen(CHANNEL).await?;
            waiters.wake_all();
            loop {
                let notification = listener.recv().await?;
                waiters.wake(notification.payload());
                waiters.forget_idle();
            }
            #[allow(unreachable_code)]
            Ok::<(), sqlx::Error>(())
        };
        if let Err(err) = connected.await {
            tracing::debug!("run store listener: {err}; reconnecting");
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// `WHERE` for a run `owner` holds: running, its owner, the lease not run out.
const HELD: &str = "run_id = $1 AND owner = $2 AND status = 'running' AND lease_until > now()";

/// A condition that is always true and notifies the run `$1` once per row it is evaluated
/// on, so a statement's changed row sends its notification with the same commit (`pg_notify`
/// is volatile: it runs per row, and not at all when no row changed).
const NOTIFIED: &str = "pg_notify('mux_runs', $1) IS NOT NULL";

impl RunStore for PostgresRunStore {
    fn begin<'a>(
        &'a self,
        session_id: &'a str,
        run_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<RunRecord, RunStoreError>> {
        Box::pin(async move {
            let inserted = sqlx::query(&format!(
                "INSERT INTO mux_runs (run_id, session_id, status, owner, lease_until) \
                 VALUES ($1, $2, 'running', $3, now() + $4 * interval '1 millisecond') \
                 RETURNING {COLUMNS}"
            ))
            .bind(run_id)
            .bind(session_id)
            .bind(owner)
            .bind(millis(lease))
            .fetch_one(&self.pool)
            .await;
            match inserted {
                Ok(row) => record(&row),
                Err(sqlx::Error::Database(err)) if err.is_unique_violation() => {
                    if err.constraint() == Some("mux_runs_one_active_per_session") {
                        let active = self.active_run(session_id).await?;
                        Err(RunStoreError::Busy {
                            session_id: session_id.to_owned(),
                            run_id: active.map(|run| run.run_id).unwrap_or_default(),
                        })
                    } else {
                        Err(RunStoreError::Exists(run_id.to_owned()))
                    }
                }
                Err(err) => Err(failed("beginning a run")(err)),
            }
        })
    }

    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<RunRecord, RunStoreError>> {
        Box::pin(async move {
            let row = sqlx::query(&format!(
                "UPDATE mux_runs SET lease_until = now() + $3 * interval '1 millisecond', \
                 updated_at = now() WHERE {HELD} RETURNING {COLUMNS}"
            ))
            .bind(run_id)
            .bind(owner)
            .bind(millis(lease))
            .fetch_optional(&self.pool)
            .await
            .map_err(failed("renewing a lease"))?;
            match row {
                Some(row) => record(&row),
                None => Err(not_held(self, run_id, owner).await),
            }
        })
    }

    fn set_status<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        status: RunStatus,
    ) -> BoxFuture<'a, Result<(), RunStoreError>> {
        Box::pin(async move {
            let keep = status == RunStatus::Running;
            let done = sqlx::query(&format!(
                "WITH held AS ( \
                     UPDATE mux_runs SET status = $3, \
                         owner = CASE WHEN $4 THEN owner END, \
                         lease_until = CASE WHEN $4 THEN lease_until END, \
                         updated_at = now() WHERE {HELD} RETURNING run_id) \
                 SELECT run_id FROM held WHERE {NOTIFIED}"
            ))
            .bind(run_id)
            .bind(owner)
            .bind(status.as_str())
            .bind(keep)
            .fetch_optional(&self.pool)
            .await
            .map_err(failed("setting a status"))?;
            if done.is_none() {
                return Err(not_held(self, run_id, owner).await);
            }
            Ok(())
        })
    }

    fn claim<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<RunRecord, RunStoreError>> {
        Box::pin(async move {
            let row = sqlx::query(&format!(
                "UPDATE mux_runs SET status = 'running', owner = $2, \
                 lease_until = now() + $3 * interval '1 millisecond', updated_at = now() \
                 WHERE run_id = $1 AND (status = 'paused' \
                     OR (status = 'running' AND (lease_until IS NULL OR lease_until <= now()))) \
                 RETURNING {COLUMNS}"
            ))
            .bind(run_id)
            .bind(owner)
            .bind(millis(lease))
            .fetch_optional(&self.pool)
            .await
            .map_err(failed("claiming a run"))?;
            match row {
                Some(row) => record(&row),
                None => Err(unclaimable(self, run_id).await),
            }
        })
    }

    fn hand_over<'a>(
        &'a self,
        from: &'a str,
        to: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<RunRecord, RunStoreError>> {
        Box::pin(async move {
            let mut tx = self
                .pool
                .begin()
                .await
                .map_err(failed("handing a run over"))?;
            let session: Option<String> = sqlx::query_scalar(
                "UPDATE mux_runs SET status = 'finished', owner = NULL, lease_until = NULL, \
                 updated_at = now() \
                 WHERE run_id = $1 AND (status = 'paused' OR (status = 'running' AND \
                     (owner = $2 OR lease_until IS NULL OR lease_until <= now()))) \
                 RETURNING session_id",
            )
            .bind(from)
            .bind(owner)
            .fetch_optional(&mut *tx)
            .await
            .map_err(failed("handing a run over"))?;
            let Some(session) = session else {
                return Err(unclaimable(self, from).await);
            };
            let inserted = sqlx::query(&format!(
                "INSERT INTO mux_runs (run_id, session_id, status, owner, lease_until) \
                 VALUES ($1, $2, 'running', $3, now() + $4 * interval '1 millisecond') \
                 RETURNING {COLUMNS}"
            ))
            .bind(to)
            .bind(&session)
            .bind(owner)
            .bind(millis(lease))
            .fetch_one(&mut *tx)
            .await;
            let row = match inserted {
                Ok(row) => row,
                Err(sqlx::Error::Database(err)) if err.is_unique_violation() => {
                    return Err(RunStoreError::Exists(to.to_owned()));
                }
                Err(err) => return Err(failed("handing a run over")(err)),
            };
            Self::notify(&mut tx, from).await?;
            tx.commit().await.map_err(failed("handing a run over"))?;
            record(&row)
        })
    }

    fn claim_expired<'a>(
        &'a self,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Option<RunRecord>, RunStoreError>> {
        Box::pin(async move {
            let row = sqlx::query(&format!(
                "UPDATE mux_runs SET owner = $1, \
                 lease_until = now() + $2 * interval '1 millisecond', updated_at = now() \
                 WHERE run_id = ( \
                     SELECT run_id FROM mux_runs \
                     WHERE status = 'running' AND (lease_until IS NULL OR lease_until <= now()) \
                     ORDER BY lease_until NULLS FIRST LIMIT 1 \
                     FOR UPDATE SKIP LOCKED) \
                 RETURNING {COLUMNS}"
            ))
            .bind(owner)
            .bind(millis(lease))
            .fetch_optional(&self.pool)
            .await
            .map_err(failed("claiming an expired run"))?;
            row.as_ref().map(record).transpose()
        })
    }

    fn get<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<RunRecord, RunStoreError>> {
        Box::pin(async move {
            let row = sqlx::query(&format!("SELECT {COLUMNS} FROM mux_runs WHERE run_id = $1"))
                .bind(run_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(failed("reading a run"))?;
            match row {
                Some(row) => record(&row),
                None => Err(RunStoreError::NotFound(run_id.to_owned())),
            }
        })
    }

    fn active_run<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<RunRecord>, RunStoreError>> {
        Box::pin(async move {
            let row = sqlx::query(&format!(
                "SELECT {COLUMNS} FROM mux_runs \
                 WHERE session_id = $1 AND status IN ('running', 'paused')"
            ))
            .bind(session_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(failed("reading a session's run"))?;
            row.as_ref().map(record).transpose()
        })
    }

    fn request_cancel<'a>(&'a self, run_id: &'a str) -> BoxFuture<'a, Result<(), RunStoreError>> {
        Box::pin(async move {
            let done = sqlx::query(&format!(
                "WITH asked AS ( \
                     UPDATE mux_runs SET cancel_requested = TRUE, updated_at = now() \
                     WHERE run_id = $1 RETURNING run_id) \
                 SELECT run_id FROM asked WHERE {NOTIFIED}"
            ))
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(failed("cancelling"))?;
            if done.is_none() {
                return Err(RunStoreError::NotFound(run_id.to_owned()));
            }
            Ok(())
        })
    }

    fn append_events<'a>(
        &'a self,
        run_id: &'a str,
        owner: &'a str,
        events: &'a [Value],
        end: Option<RunStatus>,
    ) -> BoxFuture<'a, Result<u64, RunStoreError>> {
        Box::pin(async move {
            let count = i64::try_from(events.len()).unwrap_or(i64::MAX);
            let status = end.unwrap_or(RunStatus::Running);
            // One statement, so one round trip and one commit: the row lock orders
            // appenders, the lease check fences a lost owner out, the events go in under the
            // numbers reserved, and the notification leaves with the commit.
            let first: Option<i64> = sqlx::query_scalar(&format!(
                "WITH held AS ( \
                     UPDATE mux_runs SET last_seq = last_seq + $3, updated_at = now(), \
                         status = $5, owner = CASE WHEN $6 THEN owner END, \
                         lease_until = CASE WHEN $6 THEN lease_until END \
                     WHERE {HELD} RETURNING last_seq - $3 AS first), \
                 inserted AS ( \
                     INSERT INTO mux_run_events (run_id, seq, event) \
                     SELECT $1, held.first + e.ord, e.event \
                     FROM held, unnest($4::jsonb[]) WITH ORDINALITY AS e(event, ord)) \
                 SELECT first FROM held WHERE {NOTIFIED}"
            ))
            .bind(run_id)
            .bind(owner)
            .bind(count)
            .bind(events)
            .bind(status.as_str())
            .bind(status == RunStatus::Running)
            .fetch_optional(&self.pool)
            .await
            .map_err(failed("appending events"))?;
            let Some(first) = first else {
                return Err(not_held(self, run_id, owner).await);
            };
            Ok(u64::try_from(first + count).unwrap_or_default())
        })
    }

    fn events_after<'a>(
        &'a self,
        run_id: &'a str,
        after: u64,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<StoredEvent>, RunStoreError>> {
        Box::pin(async move {
            let rows = sqlx::query(
                "SELECT seq, event FROM mux_run_events \
                 WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3",
            )
            .bind(run_id)
            .bind(i64::try_from(after).unwrap_or(i64::MAX))
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(failed("reading events"))?;
            if rows.is_empty() {
                // A run with no events yet, or no run at all.
                self.get(run_id).await?;
            }
            rows.iter()
                .map(|row| {
                    let seq: i64 = row.try_get("seq").map_err(failed("reading events"))?;
                    Ok(StoredEvent {
                        seq: u64::try_from(seq).unwrap_or_default(),
                        event: row.try_get("event").map_err(failed("reading events"))?,
                    })
                })
                .collect()
        })
    }

    fn forget_ended<'a>(
        &'a self,
        older_than: Duration,
    ) -> BoxFuture<'a, Result<u64, RunStoreError>> {
        Box::pin(async move {
            let done = sqlx::query(
                "DELETE FROM mux_runs WHERE status IN ('finished', 'failed', 'cancelled') \
                 AND updated_at < now() - $1 * interval '1 millisecond'",
            )
            .bind(millis(older_than))
            .execute(&self.pool)
            .await
            .map_err(failed("forgetting ended runs"))?;
            Ok(done.rows_affected())
        })
    }

    fn changed<'a>(&'a self, run_id: &'a str, wait: Duration) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let notify = self.waiters.of(run_id);
            let _ = tokio::time::timeout(wait, notify.notified()).await;
        })
    }

    fn notifies(&self) -> bool {
        true
    }
}
