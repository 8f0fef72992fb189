//! [`SqliteRunStore`]: the run contract on one machine, in one SQLite file (WAL).
//!
//! The same tables as PostgreSQL's (a partial unique index keeps one active run per session;
//! events numbered under the run's row, a row per appended batch, whose rows `forget_ended`
//! deletes with their run in one transaction), with times from this machine's clock, which every
//! process on one file shares. SQLite has no notifications: [`changed`](super::RunStore::changed)
//! wakes at once for a change made through this store, and polls for other processes'.
//! The operations are the shared SQL body's (`sql.rs`); this file holds the statements.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::Sqlite;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqliteSynchronous};
use tokio::sync::Notify;

use super::RunStoreError;
use super::sql::{Dialect, SqlRuns, Statements, run_store_on_sql};

/// The schema. The batches are an ordinary (rowid) table: a batch of events is kilobytes, too
/// large a row for a `WITHOUT ROWID` table's b-tree.
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
CREATE TABLE IF NOT EXISTS mux_run_event_batches (
    run_id TEXT NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    events TEXT NOT NULL,
    PRIMARY KEY (run_id, last_seq)
);
";

/// Whether the database has the table of an earlier build, with an event a row.
const HAS_OLD_EVENTS: &str =
    "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'mux_run_events'";

/// Moves each event of that table to a batch row of its own, and drops it.
const MOVE_OLD_EVENTS: &str = "
INSERT OR IGNORE INTO mux_run_event_batches (run_id, first_seq, last_seq, events)
    SELECT run_id, seq, seq, '[' || event || ']' FROM mux_run_events;
DROP TABLE mux_run_events;
";

/// The columns of a run record.
macro_rules! columns {
    () => {
        "run_id, session_id, status, owner, cancel_requested, last_seq"
    };
}

/// This machine's time in ms since the epoch, as SQLite reads the clock.
macro_rules! now {
    () => {
        "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)"
    };
}

/// `WHERE` for a run `owner` ($2) holds: running, its owner, the lease not run out.
macro_rules! held {
    () => {
        concat!(
            "run_id = $1 AND owner = $2 AND status = 'running' AND lease_until_ms > ",
            now!()
        )
    };
}

/// SQLite's statements.
struct SqliteDialect;

impl Dialect for SqliteDialect {
    type Db = Sqlite;

    const SQL: Statements = Statements {
        begin: concat!(
            "INSERT INTO mux_runs (run_id, session_id, status, owner, lease_until_ms, ",
            "updated_at_ms) VALUES ($1, $2, 'running', $3, ",
            now!(),
            " + $4, ",
            now!(),
            ") RETURNING ",
            columns!()
        ),
        renew: concat!(
            "UPDATE mux_runs SET lease_until_ms = ",
            now!(),
            " + $3, updated_at_ms = ",
            now!(),
            " WHERE ",
            held!(),
            " RETURNING ",
            columns!()
        ),
        set_status: concat!(
            "UPDATE mux_runs SET status = $3, owner = CASE WHEN $4 THEN owner END, ",
            "lease_until_ms = CASE WHEN $4 THEN lease_until_ms END, updated_at_ms = ",
            now!(),
            " WHERE ",
            held!(),
            " RETURNING run_id"
        ),
        claim: concat!(
            "UPDATE mux_runs SET status = 'running', owner = $2, lease_until_ms = ",
            now!(),
            " + $3, updated_at_ms = ",
            now!(),
            " WHERE run_id = $1 AND (status = 'paused' OR (status = 'running' AND ",
            "(lease_until_ms IS NULL OR lease_until_ms <= ",
            now!(),
            "))) RETURNING ",
            columns!()
        ),
        hand_over: concat!(
            "UPDATE mux_runs SET status = 'finished', owner = NULL, lease_until_ms = NULL, ",
            "updated_at_ms = ",
            now!(),
            " WHERE run_id = $1 AND (status = 'paused' OR (status = 'running' AND ",
            "(owner = $2 OR lease_until_ms IS NULL OR lease_until_ms <= ",
            now!(),
            "))) RETURNING session_id"
        ),
        notify: None,
        // One statement: SQLite runs it under the database's write lock, so two claimants
        // never take the same run.
        claim_expired: concat!(
            "UPDATE mux_runs SET owner = $1, lease_until_ms = ",
            now!(),
            " + $2, updated_at_ms = ",
            now!(),
            " WHERE run_id = (SELECT run_id FROM mux_runs WHERE status = 'running' AND ",
            "run_id >= $3 AND ($4 IS NULL OR run_id < $4) AND ",
            "(lease_until_ms IS NULL OR lease_until_ms <= ",
            now!(),
            ") ORDER BY lease_until_ms LIMIT 1) AND status = 'running' AND ",
            "(lease_until_ms IS NULL OR lease_until_ms <= ",
            now!(),
            ") RETURNING ",
            columns!()
        ),
        get: concat!("SELECT ", columns!(), " FROM mux_runs WHERE run_id = $1"),
        active_run: concat!(
            "SELECT ",
            columns!(),
            " FROM mux_runs WHERE session_id = $1 AND status IN ('running', 'paused')"
        ),
        request_cancel: concat!(
            "UPDATE mux_runs SET cancel_requested = 1, updated_at_ms = ",
            now!(),
            " WHERE run_id = $1 RETURNING run_id"
        ),
        // A write first: the transaction takes the write lock at once.
        append: concat!(
            "UPDATE mux_runs SET last_seq = last_seq + $3, updated_at_ms = ",
            now!(),
            ", status = $4, owner = CASE WHEN $5 THEN owner END, ",
            "lease_until_ms = CASE WHEN $5 THEN lease_until_ms END WHERE ",
            held!(),
            " RETURNING last_seq - $3"
        ),
        // The batch as one row, its text as given.
        insert_events: Some(
            "INSERT INTO mux_run_event_batches (run_id, first_seq, last_seq, events) \
             VALUES ($1, $2 + 1, $2 + $3, $4)",
        ),
        events_after: "SELECT first_seq, last_seq, events FROM mux_run_event_batches \
                       WHERE run_id = $1 AND last_seq > $2 AND first_seq <= $3 \
                       ORDER BY last_seq LIMIT $4",
        list_runs: "SELECT r.run_id, r.session_id, r.status, r.owner, r.cancel_requested, \
                    r.last_seq, b.first_seq AS events_from, b.events \
                    FROM mux_runs r LEFT JOIN mux_run_event_batches b \
                    ON b.run_id = r.run_id AND b.last_seq = r.last_seq \
                    WHERE substr(r.run_id, 1, length($1)) = $1 AND r.run_id > $2 \
                    ORDER BY r.run_id LIMIT $3",
        forget_ended: concat!(
            "DELETE FROM mux_runs WHERE status IN ('finished', 'failed', 'cancelled') ",
            "AND updated_at_ms < ",
            now!(),
            " - $1 RETURNING run_id"
        ),
        forget_events: Some(
            "DELETE FROM mux_run_event_batches WHERE run_id IN (SELECT value FROM json_each($1))",
        ),
    };
}

/// How often a waiter looks for other processes' changes.
const POLL: Duration = Duration::from_millis(100);

/// Runs in a SQLite file: the contract for the processes of one machine.
#[derive(Clone, Debug)]
pub struct SqliteRunStore {
    sql: SqlRuns<SqliteDialect>,
    wake: Arc<Notify>,
}

/// A database error, named by what was being done.
fn failed(operation: &'static str) -> impl FnOnce(sqlx::Error) -> RunStoreError {
    move |err| RunStoreError::of_sqlx(operation, &err)
}

impl SqliteRunStore {
    /// Opens (creating it if missing) the database file at `path`: WAL, and a busy timeout of
    /// [`WRITE_TIMEOUT`](super::WRITE_TIMEOUT) (a lock another connection holds fails a write
    /// within the bound a run keeps, before a stream opens as after). It may be the session
    /// store's file.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, RunStoreError> {
        Self::open_with(SqliteConnectOptions::new().filename(path)).await
    }

    /// Opens the database at a `sqlite://` URL, as [`open`](Self::open) does.
    pub async fn connect(url: &str) -> Result<Self, RunStoreError> {
        Self::open_with(SqliteConnectOptions::from_str(url).map_err(failed("reading the URL"))?)
            .await
    }

    async fn open_with(options: SqliteConnectOptions) -> Result<Self, RunStoreError> {
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(super::WRITE_TIMEOUT);
        // A connection left in a transaction (SQLite rolled it back after a failed write)
        // is not reused: it would hold the write lock or refuse every transaction.
        let pool = crate::sqlite_pool::pool_options(4)
            .connect_with(options)
            .await
            .map_err(failed("opening the database"))?;
        Self::with_pool(pool).await
    }

    /// A store on an existing pool, after creating the tables if needed (and moving the
    /// events of an earlier build's table, an event a row, to batch rows).
    pub async fn with_pool(pool: SqlitePool) -> Result<Self, RunStoreError> {
        sqlx::raw_sql(SCHEMA)
            .execute(&pool)
            .await
            .map_err(failed("creating the tables"))?;
        move_old_events(&pool).await?;
        let wake = Arc::new(Notify::new());
        let local = Arc::clone(&wake);
        Ok(Self {
            sql: SqlRuns::new(pool, Arc::new(move |_: &str| local.notify_waiters())),
            wake,
        })
    }

    /// The pool, for inspection and maintenance.
    pub fn pool(&self) -> &SqlitePool {
        &self.sql.pool
    }

    /// A store that polls: an owner looks for cancel requests at its heartbeat only.
    const NOTIFIES: bool = false;

    /// Resolves when this store changed a run, after `wait`, or at the next poll (another
    /// process's changes).
    async fn wait_for_change(&self, _run_id: &str, wait: Duration) {
        let _ = tokio::time::timeout(wait.min(POLL), self.wake.notified()).await;
    }
}

/// Moves the events of an earlier build's `mux_run_events`, if the database has it, to batch
/// rows, and drops it: under the write lock, so of processes opening the file at once, one
/// moves them and the others find the table gone.
async fn move_old_events(pool: &SqlitePool) -> Result<(), RunStoreError> {
    let failed = || failed("moving the events of an earlier schema");
    let found: i64 = sqlx::query_scalar(HAS_OLD_EVENTS)
        .fetch_one(pool)
        .await
        .map_err(failed())?;
    if found == 0 {
        return Ok(());
    }
    let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.map_err(failed())?;
    let found: i64 = sqlx::query_scalar(HAS_OLD_EVENTS)
        .fetch_one(&mut *tx)
        .await
        .map_err(failed())?;
    if found > 0 {
        sqlx::raw_sql(MOVE_OLD_EVENTS)
            .execute(&mut *tx)
            .await
            .map_err(failed())?;
    }
    tx.commit().await.map_err(failed())
}

run_store_on_sql!(SqliteRunStore);
