//! [`SqliteRunStore`]: the run contract on one machine, in one SQLite file (WAL).
//!
//! The same tables as PostgreSQL's (a partial unique index keeps one active run per session;
//! events numbered under the run's row), with times from this machine's clock, which every
//! process on one file shares. SQLite has no notifications: [`changed`](RunStore::changed)
//! wakes at once for a change made through this store, and polls for other processes'.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mux_tool::BoxFuture;
use serde_json::Value;
use sqlx::Row;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use tokio::sync::Notify;

use super::{
    RunRecord, RunStatus, RunStore, RunStoreError, StoredEvent, failed, not_held, unclaimable,
};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS mux_runs (
    run_id TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    status TEXT NOT NULL,
    owner TEXT,
    lease_until_ms INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    last_seq INTEGER NOT NULL DEFAULT 0,
    updated_at_ms INTEGER NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS mux_runs_one_active_per_session
    ON mux_runs (session_id) WHERE status IN ('running', 'paused');
CREATE TABLE IF NOT EXISTS mux_run_events (
    run_id TEXT NOT NULL REFERENCES mux_runs (run_id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
";

const COLUMNS: &str = "run_id, session_id, status, owner, cancel_requested, last_seq";

/// How often a waiter looks for other processes' changes.
const POLL: Duration = Duration::from_millis(100);

/// Runs in a SQLite file: the contract for the processes of one machine.
#[derive(Clone, Debug)]
pub struct SqliteRunStore {
    pool: SqlitePool,
    wake: Arc<Notify>,
}

fn now_ms() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

fn until(lease: Duration) -> i64 {
    now_ms().saturating_add(i64::try_from(lease.as_millis()).unwrap_or(i64::MAX))
}

fn record(row: &SqliteRow) -> Result<RunRecord, RunStoreError> {
    let read = |err| failed("reading a run")(err);
    let status: String = row.try_get("status").map_err(read)?;
    let last_seq: i64 = row.try_get("last_seq").map_err(read)?;
    let cancel: i64 = row.try_get("cancel_requested").map_err(read)?;
    Ok(RunRecord {
        run_id: row.try_get("run_id").map_err(read)?,
        session_id: row.try_get("session_id").map_err(read)?,
        status: RunStatus::parse(&status).ok_or_else(|| RunStoreError::Store {
            operation: "reading a run",
            reason: format!("unknown status `{status}`"),
        })?,
        owner: row.try_get("owner").map_err(read)?,
        cancel_requested: cancel != 0,
        last_seq: u64::try_from(last_seq).unwrap_or_default(),
    })
}

/// `WHERE` for a run `owner` ($2) holds at time $3.
const HELD: &str = "run_id = $1 AND owner = $2 AND status = 'running' AND lease_until_ms > $3";

impl SqliteRunStore {
    /// Opens (creating it if missing) the database file at `path`: WAL, a 30 s busy timeout.
    /// It may be the session store's file.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, RunStoreError> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(30));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .test_before_acquire(false)
            .connect_with(options)
            .await
            .map_err(failed("opening the database"))?;
        Self::with_pool(pool).await
    }

    /// Opens the database at a `sqlite://` URL.
    pub async fn connect(url: &str) -> Result<Self, RunStoreError> {
        let options = SqliteConnectOptions::from_str(url)
            .map_err(failed("reading the URL"))?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(30));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(failed("opening the database"))?;
        Self::with_pool(pool).await
    }

    /// A store on an existing pool, after creating the tables if needed.
    pub async fn with_pool(pool: SqlitePool) -> Result<Self, RunStoreError> {
        sqlx::raw_sql(SCHEMA)
            .execute(&pool)
            .await
            .map_err(failed("creating the tables"))?;
        Ok(Self {
            pool,
            wake: Arc::new(Notify::new()),
        })
    }

    /// The pool, for inspection and maintenance.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }
}

impl RunStore for SqliteRunStore {
    fn begin<'a>(
        &'a self,
        session_id: &'a str,
        run_id: &'a str,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<RunRecord, RunStoreError>> {
        Box::pin(async move {
            let inserted = sqlx::query(&format!(
                "INSERT INTO mux_runs (run_id, session_id, status, owner, lease_until_ms, updated_at_ms) \
                 VALUES ($1, $2, 'running', $3, $4, $5) RETURNING {COLUMNS}"
            ))
            .bind(run_id)
            .bind(session_id)
            .bind(owner)
            .bind(until(lease))
            .bind(now_ms())
            .fetch_one(&self.pool)
            .await;
            match inserted {
                Ok(row) => record(&row),
                Err(sqlx::Error::Database(err)) if err.is_unique_violation() => {
                    // Which constraint: the run id, or the session's active run.
                    if self.get(run_id).await.is_ok() {
                        return Err(RunStoreError::Exists(run_id.to_owned()));
                    }
                    let active = self.active_run(session_id).await?;
                    Err(RunStoreError::Busy {
                        session_id: session_id.to_owned(),
                        run_id: active.map(|run| run.run_id).unwrap_or_default(),
                    })
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
                "UPDATE mux_runs SET lease_until_ms = $4, updated_at_ms = $3 \
                 WHERE {HELD} RETURNING {COLUMNS}"
            ))
            .bind(run_id)
            .bind(owner)
            .bind(now_ms())
            .bind(until(lease))
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
                "UPDATE mux_runs SET status = $4, \
                 owner = CASE WHEN $5 THEN owner END, \
                 lease_until_ms = CASE WHEN $5 THEN lease_until_ms END, \
                 updated_at_ms = $3 WHERE {HELD}"
            ))
            .bind(run_id)
            .bind(owner)
            .bind(now_ms())
            .bind(status.as_str())
            .bind(keep)
            .execute(&self.pool)
            .await
            .map_err(failed("setting a status"))?;
            if done.rows_affected() == 0 {
                return Err(not_held(self, run_id, owner).await);
            }
            self.wake.notify_waiters();
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
            let now = now_ms();
            let row = sqlx::query(&format!(
                "UPDATE mux_runs SET status = 'running', owner = $2, lease_until_ms = $4, \
                 updated_at_ms = $3 \
                 WHERE run_id = $1 AND (status = 'paused' \
                     OR (status = 'running' AND (lease_until_ms IS NULL OR lease_until_ms <= $3))) \
                 RETURNING {COLUMNS}"
            ))
            .bind(run_id)
            .bind(owner)
            .bind(now)
            .bind(until(lease))
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
            let now = now_ms();
            let mut tx = self
                .pool
                .begin()
                .await
                .map_err(failed("handing a run over"))?;
            let session: Option<String> = sqlx::query_scalar(
                "UPDATE mux_runs SET status = 'finished', owner = NULL, lease_until_ms = NULL, \
                 updated_at_ms = $3 \
                 WHERE run_id = $1 AND (status = 'paused' OR (status = 'running' AND \
                     (owner = $2 OR lease_until_ms IS NULL OR lease_until_ms <= $3))) \
                 RETURNING session_id",
            )
            .bind(from)
            .bind(owner)
            .bind(now)
            .fetch_optional(&mut *tx)
            .await
            .map_err(failed("handing a run over"))?;
            let Some(session) = session else {
                drop(tx);
                return Err(unclaimable(self, from).await);
            };
            let inserted = sqlx::query(&format!(
                "INSERT INTO mux_runs (run_id, session_id, status, owner, lease_until_ms, updated_at_ms) \
                 VALUES ($1, $2, 'running', $3, $4, $5) RETURNING {COLUMNS}"
            ))
            .bind(to)
            .bind(&session)
            .bind(owner)
            .bind(until(lease))
            .bind(now)
            .fetch_one(&mut *tx)
            .await;
            let row = match inserted {
                Ok(row) => row,
                Err(sqlx::Error::Database(err)) if err.is_unique_violation() => {
                    return Err(RunStoreError::Exists(to.to_owned()));
                }
                Err(err) => return Err(failed("handing a run over")(err)),
            };
            tx.commit().await.map_err(failed("handing a run over"))?;
            self.wake.notify_waiters();
            record(&row)
        })
    }

    fn claim_expired<'a>(
        &'a self,
        owner: &'a str,
        lease: Duration,
    ) -> BoxFuture<'a, Result<Option<RunRecord>, RunStoreError>> {
        Box::pin(async move {
            // One statement: SQLite runs it under the database's write lock, so two
            // claimants never take the same run.
            let row = sqlx::query(&format!(
                "UPDATE mux_runs SET owner = $1, lease_until_ms = $3, updated_at_ms = $2 \
                 WHERE run_id = ( \
                     SELECT run_id FROM mux_runs \
                     WHERE status = 'running' AND (lease_until_ms IS NULL OR lease_until_ms <= $2) \
                     ORDER BY lease_until_ms LIMIT 1) \
                 AND status = 'running' AND (lease_until_ms IS NULL OR lease_until_ms <= $2) \
                 RETURNING {COLUMNS}"
            ))
            .bind(owner)
            .bind(now_ms())
            .bind(until(lease))
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
            let done = sqlx::query(
                "UPDATE mux_runs SET cancel_requested = 1, updated_at_ms = $2 WHERE run_id = $1",
            )
            .bind(run_id)
            .bind(now_ms())
            .execute(&self.pool)
            .await
            .map_err(failed("cancelling"))?;
            if done.rows_affected() == 0 {
                return Err(RunStoreError::NotFound(run_id.to_owned()));
            }
            self.wake.notify_waiters();
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
            let mut tx = self
                .pool
                .begin()
                .await
                .map_err(failed("appending events"))?;
            // A write first: the transaction takes the write lock at once.
            let first: Option<i64> = sqlx::query_scalar(&format!(
                "UPDATE mux_runs SET last_seq = last_seq + $4, updated_at_ms = $3, \
                 status = $5, owner = CASE WHEN $6 THEN owner END, \
                 lease_until_ms = CASE WHEN $6 THEN lease_until_ms END \
                 WHERE {HELD} RETURNING last_seq - $4"
            ))
            .bind(run_id)
            .bind(owner)
            .bind(now_ms())
            .bind(count)
            .bind(status.as_str())
            .bind(status == RunStatus::Running)
            .fetch_optional(&mut *tx)
            .await
            .map_err(failed("appending events"))?;
            let Some(first) = first else {
                drop(tx);
                return Err(not_held(self, run_id, owner).await);
            };
            for (i, event) in (1..).zip(events) {
                sqlx::query("INSERT INTO mux_run_events (run_id, seq, event) VALUES ($1, $2, $3)")
                    .bind(run_id)
                    .bind(first + i)
                    .bind(event.to_string())
                    .execute(&mut *tx)
                    .await
                    .map_err(failed("appending events"))?;
            }
            tx.commit().await.map_err(failed("appending events"))?;
            self.wake.notify_waiters();
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
                self.get(run_id).await?;
            }
            rows.iter()
                .map(|row| {
                    let seq: i64 = row.try_get("seq").map_err(failed("reading events"))?;
                    let text: String = row.try_get("event").map_err(failed("reading events"))?;
                    let event =
                        serde_json::from_str(&text).map_err(|err| RunStoreError::Store {
                            operation: "reading events",
                            reason: format!("event {seq} of run `{run_id}` is not JSON: {err}"),
                        })?;
                    Ok(StoredEvent {
                        seq: u64::try_from(seq).unwrap_or_default(),
                        event,
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
            let cutoff =
                now_ms().saturating_sub(i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX));
            let done = sqlx::query(
                "DELETE FROM mux_runs WHERE status IN ('finished', 'failed', 'cancelled') \
                 AND updated_at_ms < $1",
            )
            .bind(cutoff)
            .execute(&self.pool)
            .await
            .map_err(failed("forgetting ended runs"))?;
            Ok(done.rows_affected())
        })
    }

    fn changed<'a>(&'a self, _run_id: &'a str, wait: Duration) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            // This process's changes wake at once; another process's are seen at the next poll.
            let _ = tokio::time::timeout(wait.min(POLL), self.wake.notified()).await;
        })
    }
}
