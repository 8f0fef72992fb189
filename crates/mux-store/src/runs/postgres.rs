//! [`PostgresRunStore`]: the run contract across processes on one PostgreSQL.
//!
//! - `mux_runs` holds each run; a partial unique index on the session of active runs makes
//!   "one active run per session" hold on every process, atomically.
//! - `mux_run_event_batches` holds the events, a row per appended batch (its first and last
//!   number and the events as the text of one JSON array, never parsed here), numbered from
//!   the run's `last_seq` under its row lock. A row has no foreign key: `forget_ended` deletes
//!   a run's rows in the statement that deletes the run.
//! - Leases are the database's `now()` plus the lease, so processes need not agree on the time.
//! - `claim_expired` takes a row with `FOR UPDATE SKIP LOCKED`: claimants racing for expired
//!   runs each get a different one. It looks among one face's runs, as a range of ids in
//!   byte order (`COLLATE "C"`, served by an index on running runs' ids beside the one on
//!   their leases).
//! - Every change sends `NOTIFY mux_runs, '<run id>'` with its commit (folded into the
//!   statement); one listener per store wakes the waiters of that run, and this process's
//!   own changes wake its waiters at once. A lost notification only delays a reader until
//!   its wait ends.
//! - Appends and status changes are written by this process's group commit on the database
//!   (`group_commit`): concurrent runs' writes (and the session store's) share one commit.
//! - The operations are the shared SQL body's (`sql.rs`); this file holds the statements.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use sqlx::Postgres;
use sqlx::postgres::{PgListener, PgPool};
use tokio::sync::Notify;

use super::RunStoreError;
use super::sql::{Appender, Beginner, Dialect, SqlRuns, Statements, millis, run_store_on_sql};
use crate::group_commit::{Failure, GroupCommit, RunAppend, RunBegin};

/// The notification channel.
const CHANNEL: &str = "mux_runs";

/// The schema, applied idempotently under an advisory lock. A database of an earlier build,
/// with an event a row in `mux_run_events`, has each of them moved to a batch row of its own
/// and that table dropped.
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
CREATE INDEX IF NOT EXISTS mux_runs_running_ids
    ON mux_runs (run_id COLLATE \"C\") WHERE status = 'running';
CREATE TABLE IF NOT EXISTS mux_run_event_batches (
    run_id TEXT NOT NULL,
    first_seq BIGINT NOT NULL,
    last_seq BIGINT NOT NULL,
    events TEXT NOT NULL,
    PRIMARY KEY (run_id, last_seq)
);
DO $$ BEGIN
    IF to_regclass('mux_run_events') IS NOT NULL THEN
        INSERT INTO mux_run_event_batches (run_id, first_seq, last_seq, events)
            SELECT run_id, seq, seq, '[' || event::text || ']' FROM mux_run_events
            ON CONFLICT DO NOTHING;
        DROP TABLE mux_run_events;
    END IF;
END $$;
";

/// An advisory lock key for the schema ("mux runs").
const SCHEMA_LOCK: i64 = 0x6d75_7872_756e_7301;

/// The columns of a run record.
macro_rules! columns {
    () => {
        "run_id, session_id, status, owner, cancel_requested, last_seq"
    };
}

/// `WHERE` for a run `owner` ($2) holds: running, its owner, the lease not run out.
macro_rules! held {
    () => {
        "run_id = $1 AND owner = $2 AND status = 'running' AND lease_until > now()"
    };
}

/// A condition that is always true and notifies the run `$1` once per row it is evaluated
/// on, so a statement's changed row sends its notification with the same commit (`pg_notify`
/// is volatile: it runs per row, and not at all when no row changed).
macro_rules! notified {
    () => {
        "pg_notify('mux_runs', $1) IS NOT NULL"
    };
}

/// PostgreSQL's statements.
struct PostgresDialect;

impl Dialect for PostgresDialect {
    type Db = Postgres;

    const SQL: Statements = Statements {
        begin: concat!(
            "INSERT INTO mux_runs (run_id, session_id, status, owner, lease_until) ",
            "VALUES ($1, $2, 'running', $3, now() + $4 * interval '1 millisecond') ",
            "RETURNING ",
            columns!()
        ),
        renew: concat!(
            "UPDATE mux_runs SET lease_until = now() + $3 * interval '1 millisecond', ",
            "updated_at = now() WHERE ",
            held!(),
            " RETURNING ",
            columns!()
        ),
        set_status: concat!(
            "WITH held AS (UPDATE mux_runs SET status = $3, ",
            "owner = CASE WHEN $4 THEN owner END, ",
            "lease_until = CASE WHEN $4 THEN lease_until END, ",
            "updated_at = now() WHERE ",
            held!(),
            " RETURNING run_id) SELECT run_id FROM held WHERE ",
            notified!()
        ),
        claim: concat!(
            "UPDATE mux_runs SET status = 'running', owner = $2, ",
            "lease_until = now() + $3 * interval '1 millisecond', updated_at = now() ",
            "WHERE run_id = $1 AND (status = 'paused' ",
            "OR (status = 'running' AND (lease_until IS NULL OR lease_until <= now()))) ",
            "RETURNING ",
            columns!()
        ),
        hand_over: "UPDATE mux_runs SET status = 'finished', owner = NULL, lease_until = NULL, \
                    updated_at = now() \
                    WHERE run_id = $1 AND (status = 'paused' OR (status = 'running' AND \
                        (owner = $2 OR lease_until IS NULL OR lease_until <= now()))) \
                    RETURNING session_id",
        notify: Some("SELECT pg_notify('mux_runs', $1)"),
        // `FOR UPDATE SKIP LOCKED`: claimants racing for expired runs each get another.
        claim_expired: concat!(
            "UPDATE mux_runs SET owner = $1, ",
            "lease_until = now() + $2 * interval '1 millisecond', updated_at = now() ",
            "WHERE run_id = (SELECT run_id FROM mux_runs ",
            "WHERE status = 'running' AND (lease_until IS NULL OR lease_until <= now()) ",
            "AND run_id COLLATE \"C\" >= $3 AND ($4::text IS NULL OR run_id COLLATE \"C\" < $4) ",
            "ORDER BY lease_until NULLS FIRST LIMIT 1 FOR UPDATE SKIP LOCKED) ",
            "RETURNING ",
            columns!()
        ),
        get: concat!("SELECT ", columns!(), " FROM mux_runs WHERE run_id = $1"),
        active_run: concat!(
            "SELECT ",
            columns!(),
            " FROM mux_runs WHERE session_id = $1 AND status IN ('running', 'paused')"
        ),
        request_cancel: concat!(
            "WITH asked AS (UPDATE mux_runs SET cancel_requested = TRUE, updated_at = now() ",
            "WHERE run_id = $1 RETURNING run_id) SELECT run_id FROM asked WHERE ",
            notified!()
        ),
        // One statement, so one round trip and one commit: the row lock orders appenders,
        // the events go in under the numbers reserved, and the notification leaves with the
        // commit.
        append: concat!(
            "WITH held AS (UPDATE mux_runs SET last_seq = last_seq + $3, updated_at = now(), ",
            "status = $4, owner = CASE WHEN $5 THEN owner END, ",
            "lease_until = CASE WHEN $5 THEN lease_until END WHERE ",
            held!(),
            " RETURNING last_seq - $3 AS first, last_seq), ",
            "inserted AS (INSERT INTO mux_run_event_batches (run_id, first_seq, last_seq, events) ",
            "SELECT $1, held.first + 1, held.last_seq, $6 FROM held WHERE $3 > 0) ",
            "SELECT first FROM held WHERE ",
            notified!()
        ),
        insert_events: None,
        events_after: "SELECT first_seq, last_seq, events FROM mux_run_event_batches \
                       WHERE run_id = $1 AND last_seq > $2 AND first_seq <= $3 \
                       ORDER BY last_seq LIMIT $4",
        list_runs: "SELECT r.run_id, r.session_id, r.status, r.owner, r.cancel_requested, \
                    r.last_seq, b.first_seq AS events_from, b.events \
                    FROM mux_runs r LEFT JOIN mux_run_event_batches b \
                    ON b.run_id = r.run_id AND b.last_seq = r.last_seq \
                    WHERE starts_with(r.run_id, $1) AND r.run_id COLLATE \"C\" > $2 \
                    ORDER BY r.run_id COLLATE \"C\" LIMIT $3",
        // The runs and their batches in one statement: no batch outlives its run.
        forget_ended: "WITH gone AS (DELETE FROM mux_runs \
                       WHERE status IN ('finished', 'failed', 'cancelled') \
                       AND updated_at < now() - $1 * interval '1 millisecond' RETURNING run_id), \
                       batches AS (DELETE FROM mux_run_event_batches b USING gone \
                       WHERE b.run_id = gone.run_id) \
                       SELECT run_id FROM gone",
        forget_events: None,
    };
}

/// Runs in PostgreSQL, shared by every process on the database.
#[derive(Clone, Debug)]
pub struct PostgresRunStore {
    sql: SqlRuns<PostgresDialect>,
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

/// A database error, named by what was being done.
fn failed(operation: &'static str) -> impl FnOnce(sqlx::Error) -> RunStoreError {
    move |err| RunStoreError::of_sqlx(operation, &err)
}

/// A group commit's failure as the run store's error, named by `operation`.
fn group_failed(operation: &'static str) -> impl FnOnce(Failure) -> RunStoreError {
    move |failure| match failure.fault {
        Some(fault) => RunStoreError::Unavailable {
            operation,
            fault,
            reason: failure.reason,
        },
        None => RunStoreError::Store {
            operation,
            reason: failure.reason,
        },
    }
}

impl PostgresRunStore {
    /// Connects to `url` (a pool of up to sixteen connections, 2 s to get one), creates the
    /// tables if needed and starts listening for changes.
    pub async fn connect(url: &str) -> Result<Self, RunStoreError> {
        let options =
            crate::pg_pool::connect_options(url).map_err(failed("reading the database URL"))?;
        let pool = crate::pg_pool::options(16, Duration::from_secs(2))
            .connect_with(options)
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
        let answer_within = crate::pg_pool::answer_within(&pool)
            .await
            .map_err(failed("reading statement_timeout"))?;
        let waiters = Arc::new(Waiters::default());
        let listener = tokio::spawn(listen(pool.clone(), Arc::clone(&waiters)));
        let local = Arc::clone(&waiters);
        // Appends and status changes go through this process's group commit on the database.
        let group = Arc::new(GroupCommit::for_pool(&pool));
        let beginner: Beginner = {
            let group = Arc::clone(&group);
            Arc::new(move |run_id, session_id, owner, lease| {
                let group = Arc::clone(&group);
                let begin = RunBegin::new(run_id, session_id, owner, millis(lease));
                Box::pin(async move {
                    group
                        .begin_run(begin)
                        .await
                        .map_err(group_failed("beginning a run"))
                })
            })
        };
        let appender: Appender = Arc::new(move |run_id, owner, events, status| {
            let group = Arc::clone(&group);
            let append = RunAppend::new(run_id, owner, events, status);
            Box::pin(async move {
                group
                    .append_run(append)
                    .await
                    .map_err(group_failed("appending events"))
            })
        });
        Ok(Self {
            sql: SqlRuns::new(pool, Arc::new(move |run_id: &str| local.wake(run_id)))
                .with_appender(appender)
                .with_beginner(beginner)
                .with_answer_within(answer_within),
            waiters,
            listener: Arc::new(listener),
        })
    }

    /// The pool, for inspection and maintenance.
    pub fn pool(&self) -> &PgPool {
        &self.sql.pool
    }

    /// A notification per run: waiting costs nothing while nothing happens.
    const NOTIFIES: bool = true;

    /// Resolves when `run_id` was notified, or after `wait`.
    async fn wait_for_change(&self, run_id: &str, wait: Duration) {
        let notify = self.waiters.of(run_id);
        let _ = tokio::time::timeout(wait, notify.notified()).await;
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

run_store_on_sql!(PostgresRunStore);
