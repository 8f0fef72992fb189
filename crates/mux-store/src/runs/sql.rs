//! The one body of the SQL run stores: every [`RunStore`](super::RunStore) operation but the
//! wake-ups written once, generic over the sqlx database, with each dialect's SQL in a
//! [`Statements`] table (`sqlite.rs` and `postgres.rs` hold the tables, the schema, the
//! constructors and how waiters wake).
//!
//! Every dialect's statements take the same parameters, so the steps around them are shared:
//! times are the database's (PostgreSQL's `now()`, SQLite's clock of the machine), leases are
//! bound in milliseconds, and a batch of events is bound as one JSON array.
//!
//! Events are stored a row per appended batch (`mux_run_event_batches`: the run, the numbers
//! of the batch's first and last event, and the events as the text of one JSON array, which
//! the database never parses). Rows are keyed by their last number, so a reader finds the
//! batches after a number in the key's order and the run's last event at its `last_seq`; this
//! file splits them into events, and a row that is not an array of exactly its count of
//! events is a typed error.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Row, Type};

use mux_tool::BoxFuture;

use super::{EventJson, ListedRun, RunRecord, RunStatus, RunStoreError, StoredEvent};

/// The SQL one dialect runs. `COLUMNS` rows are `run_id, session_id, status, owner,
/// cancel_requested, last_seq`.
pub(super) struct Statements {
    /// Inserts a running run, returning its `COLUMNS` (binds run id, session id, owner,
    /// lease ms).
    pub(super) begin: &'static str,
    /// Extends a held run's lease, returning its `COLUMNS` (binds run id, owner, lease ms).
    pub(super) renew: &'static str,
    /// Moves a held run to a status, returning a row when it did (binds run id, owner,
    /// status, whether the owner keeps it).
    pub(super) set_status: &'static str,
    /// Takes a paused run or an expired one, returning its `COLUMNS` (binds run id, owner,
    /// lease ms).
    pub(super) claim: &'static str,
    /// Ends a paused, held or expired run as finished, returning its session id (binds run
    /// id, owner); `begin` then begins the next on that session.
    pub(super) hand_over: &'static str,
    /// Wakes the waiters of a run within a transaction (binds run id), if the dialect
    /// notifies.
    pub(super) notify: Option<&'static str>,
    /// Takes the longest expired running run whose id is in a range, returning its `COLUMNS`
    /// (binds owner, lease ms, the range's start (a prefix) and its end or NULL: ids `>=`
    /// the start and `<` the end in byte order, which is what start with the prefix, as a
    /// range an index on the ids serves).
    pub(super) claim_expired: &'static str,
    /// A run's `COLUMNS` (binds run id).
    pub(super) get: &'static str,
    /// A session's active run's `COLUMNS` (binds session id).
    pub(super) active_run: &'static str,
    /// Asks a run to cancel, returning a row when it exists (binds run id).
    pub(super) request_cancel: &'static str,
    /// Reserves the numbers of a batch on a held run and moves it to a status, returning the
    /// number before the first (binds run id, owner, count, status, whether the owner keeps
    /// it, and, without `insert_events`, the events as one JSON array, which it inserts as
    /// one batch row when the count is not 0).
    pub(super) append: &'static str,
    /// Inserts a batch row after `append`, in its transaction (binds run id, the number
    /// before the first, the count (not 0), the events as one JSON array); `None` when
    /// `append` inserts it.
    pub(super) insert_events: Option<&'static str>,
    /// `(first_seq, last_seq, events)`, in order, of the batch rows that hold numbers above
    /// one and up to another (binds run id, the number after which, the last number wanted,
    /// the most rows).
    pub(super) events_after: &'static str,
    /// Runs whose ids start with a prefix and sort after an id in byte order, in that order,
    /// with `COLUMNS`, `events_from` and `events`, the first number and the events of the
    /// batch row ending at `last_seq`, or NULLs (binds prefix, after, limit).
    pub(super) list_runs: &'static str,
    /// Deletes runs ended longer ago than a number of ms, returning their ids (binds the ms),
    /// and, without `forget_events`, their batch rows.
    pub(super) forget_ended: &'static str,
    /// Deletes the batch rows of runs after `forget_ended`, in its transaction (binds the run
    /// ids as one JSON array); `None` when `forget_ended` deletes them.
    pub(super) forget_events: Option<&'static str>,
}

/// A database the SQL run store runs on: its statements.
pub(super) trait Dialect: Send + Sync + 'static {
    /// The sqlx database.
    type Db: Database;
    /// The statements.
    const SQL: Statements;
}

/// Writes an owner's append (run id, owner, events, the status it moves the run to) some
/// other way than a statement of its own, e.g. in a group commit; answers the number before
/// its first event, or `None` when the owner does not hold the run.
pub(super) type Appender = Arc<
    dyn Fn(
            &str,
            &str,
            &[EventJson],
            RunStatus,
        ) -> BoxFuture<'static, Result<Option<i64>, RunStoreError>>
        + Send
        + Sync,
>;

/// Inserts a run some other way than a statement of its own, e.g. in a group commit (run id,
/// session id, owner, lease): answers whether it was inserted (not when its id is taken or
/// its session has a run in progress).
pub(super) type Beginner = Arc<
    dyn Fn(&str, &str, &str, Duration) -> BoxFuture<'static, Result<bool, RunStoreError>>
        + Send
        + Sync,
>;

/// Runs in a SQL database of dialect `D`.
pub(super) struct SqlRuns<D: Dialect> {
    pub(super) pool: Pool<D::Db>,
    /// Wakes this process's waiters of a run after a change.
    wake: Arc<dyn Fn(&str) + Send + Sync>,
    /// Writes appends and status changes instead of `append` and `set_status`.
    appender: Option<Appender>,
    /// Inserts runs instead of `begin`.
    beginner: Option<Beginner>,
    /// How long a statement on the pool may go unanswered (`crate::store_bound`).
    pub(super) answer_within: std::time::Duration,
}

impl<D: Dialect> Clone for SqlRuns<D> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            wake: Arc::clone(&self.wake),
            appender: self.appender.clone(),
            beginner: self.beginner.clone(),
            answer_within: self.answer_within,
        }
    }
}

impl<D: Dialect> std::fmt::Debug for SqlRuns<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlRuns").field("pool", &self.pool).finish()
    }
}

/// `time` in whole milliseconds, as the statements bind a lease.
pub(super) fn millis(time: Duration) -> i64 {
    i64::try_from(time.as_millis()).unwrap_or(i64::MAX)
}

/// The least string above every string that starts with `prefix`, in byte order (the same
/// as code point order in UTF-8), or `None` when no string is (`""`, or only `char::MAX`s):
/// the ids that start with `prefix` are those `>= prefix` and `<` it.
fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// The row a writing statement's `RETURNING` gave, if any, out of all its rows. A statement
/// outside a transaction is read to its end (`fetch_all`, never `fetch_one` or
/// `fetch_optional`): SQLite commits it when it ends, and a commit that fails (a full disk)
/// is reported only to a reader that steps that far. A reader that stops at the first row
/// resets the statement, which rolls the write back and drops the error: the write would be
/// answered as stored though it was not (a run "begun" that does not exist).
fn written<R>(rows: Vec<R>) -> Option<R> {
    rows.into_iter().next()
}

/// A database error, named by what was being done.
fn failed(operation: &'static str) -> impl FnOnce(sqlx::Error) -> RunStoreError {
    move |err| RunStoreError::of_sqlx(operation, &err)
}

/// The events of a stored batch row of `run_id` numbered `first..=last`, its `text`: a JSON
/// array of exactly that many events, at least one, from number 1 on (so `limit` rows hold at
/// least `limit` events), or why not, naming the run and the numbers.
fn unpack(
    operation: &'static str,
    run_id: &str,
    first: i64,
    last: i64,
    text: &str,
) -> Result<Vec<Value>, RunStoreError> {
    let damaged = |why: String| RunStoreError::Store {
        operation,
        reason: format!("the events {first} to {last} of run `{run_id}` {why}"),
    };
    let events: Vec<Value> = serde_json::from_str(text)
        .map_err(|err| damaged(format!("are not a JSON array: {err}")))?;
    let count = last
        .checked_sub(first)
        .and_then(|gap| gap.checked_add(1))
        .filter(|count| first >= 1 && *count >= 1);
    if count != i64::try_from(events.len()).ok() {
        return Err(damaged(format!("are stored as {} events", events.len())));
    }
    Ok(events)
}

impl<D, DB> SqlRuns<D>
where
    D: Dialect<Db = DB>,
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'r> Option<String>: Decode<'r, DB>,
    for<'r> Option<i64>: Decode<'r, DB>,
    Option<String>: for<'q> Encode<'q, DB> + Type<DB>,
    String: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
    i64: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
    bool: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
    for<'s> &'s str: ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
{
    /// The store on `pool`; `wake` wakes this process's waiters of a run.
    pub(super) fn new(pool: Pool<DB>, wake: Arc<dyn Fn(&str) + Send + Sync>) -> Self {
        Self {
            pool,
            wake,
            appender: None,
            beginner: None,
            answer_within: crate::store_bound::UNBOUNDED,
        }
    }

    /// The store bounding its statements on the pool by `within` (`crate::store_bound`).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(super) fn with_answer_within(mut self, within: std::time::Duration) -> Self {
        self.answer_within = within;
        self
    }

    /// The store writing appends and status changes through `appender`.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(super) fn with_appender(mut self, appender: Appender) -> Self {
        self.appender = Some(appender);
        self
    }

    /// The store inserting runs through `beginner`.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(super) fn with_beginner(mut self, beginner: Beginner) -> Self {
        self.beginner = Some(beginner);
        self
    }

    fn record(row: &DB::Row) -> Result<RunRecord, RunStoreError> {
        let read = || failed("reading a run");
        let status: String = row.try_get("status").map_err(read())?;
        let last_seq: i64 = row.try_get("last_seq").map_err(read())?;
        Ok(RunRecord {
            run_id: row.try_get("run_id").map_err(read())?,
            session_id: row.try_get("session_id").map_err(read())?,
            status: RunStatus::parse(&status).ok_or_else(|| RunStoreError::Store {
                operation: "reading a run",
                reason: format!("unknown status `{status}`"),
            })?,
            owner: row.try_get("owner").map_err(read())?,
            cancel_requested: row.try_get("cancel_requested").map_err(read())?,
            last_seq: u64::try_from(last_seq).unwrap_or_default(),
        })
    }

    /// Why `owner` could not act on `run_id`: the run is missing, or `owner` does not hold it.
    async fn not_held(&self, run_id: &str, owner: &str) -> RunStoreError {
        match self.get(run_id).await {
            Ok(_) => RunStoreError::LeaseLost {
                run_id: run_id.to_owned(),
                owner: owner.to_owned(),
            },
            Err(err) => err,
        }
    }

    /// Why `run_id` could not be claimed: it is missing, held by another owner, or over.
    async fn unclaimable(&self, run_id: &str) -> RunStoreError {
        match self.get(run_id).await {
            Ok(run) => RunStoreError::Held {
                run_id: run_id.to_owned(),
                status: run.status,
            },
            Err(err) => err,
        }
    }

    /// A run that takes `COLUMNS` from `row`, or why `owner` does not hold it.
    async fn held(
        &self,
        row: Option<DB::Row>,
        run_id: &str,
        owner: &str,
    ) -> Result<RunRecord, RunStoreError> {
        match row {
            Some(row) => Self::record(&row),
            None => Err(self.not_held(run_id, owner).await),
        }
    }

    pub(super) async fn begin(
        &self,
        session_id: &str,
        run_id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<RunRecord, RunStoreError> {
        if let Some(beginner) = &self.beginner {
            if beginner(run_id, session_id, owner, lease).await? {
                return Ok(RunRecord::begun(run_id, session_id, owner));
            }
            return Err(self.taken(session_id, run_id).await);
        }
        let inserted = sqlx::query(D::SQL.begin)
            .bind(run_id)
            .bind(session_id)
            .bind(owner)
            .bind(millis(lease))
            .fetch_all(&self.pool)
            .await
            .and_then(|rows| written(rows).ok_or(sqlx::Error::RowNotFound));
        match inserted {
            Ok(row) => Self::record(&row),
            Err(sqlx::Error::Database(err)) if err.is_unique_violation() => {
                Err(self.taken(session_id, run_id).await)
            }
            Err(err) => Err(failed("beginning a run")(err)),
        }
    }

    /// Why `run_id` could not begin on `session_id`: the id is taken, or the session has a run
    /// in progress.
    async fn taken(&self, session_id: &str, run_id: &str) -> RunStoreError {
        if self.get(run_id).await.is_ok() {
            return RunStoreError::Exists(run_id.to_owned());
        }
        match self.active_run(session_id).await {
            Ok(active) => RunStoreError::Busy {
                session_id: session_id.to_owned(),
                run_id: active.map(|run| run.run_id).unwrap_or_default(),
            },
            Err(err) => err,
        }
    }

    pub(super) async fn renew(
        &self,
        run_id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<RunRecord, RunStoreError> {
        let row = sqlx::query(D::SQL.renew)
            .bind(run_id)
            .bind(owner)
            .bind(millis(lease))
            .fetch_all(&self.pool)
            .await
            .map(written)
            .map_err(failed("renewing a lease"))?;
        self.held(row, run_id, owner).await
    }

    pub(super) async fn set_status(
        &self,
        run_id: &str,
        owner: &str,
        status: RunStatus,
    ) -> Result<(), RunStoreError> {
        if let Some(appender) = &self.appender {
            // A status change is an append of no events.
            if appender(run_id, owner, &[], status).await?.is_none() {
                return Err(self.not_held(run_id, owner).await);
            }
            (self.wake)(run_id);
            return Ok(());
        }
        let done = sqlx::query(D::SQL.set_status)
            .bind(run_id)
            .bind(owner)
            .bind(status.as_str())
            .bind(status == RunStatus::Running)
            .fetch_all(&self.pool)
            .await
            .map(written)
            .map_err(failed("setting a status"))?;
        if done.is_none() {
            return Err(self.not_held(run_id, owner).await);
        }
        (self.wake)(run_id);
        Ok(())
    }

    pub(super) async fn claim(
        &self,
        run_id: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<RunRecord, RunStoreError> {
        let row = sqlx::query(D::SQL.claim)
            .bind(run_id)
            .bind(owner)
            .bind(millis(lease))
            .fetch_all(&self.pool)
            .await
            .map(written)
            .map_err(failed("claiming a run"))?;
        match row {
            Some(row) => Self::record(&row),
            None => Err(self.unclaimable(run_id).await),
        }
    }

    pub(super) async fn hand_over(
        &self,
        from: &str,
        to: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<RunRecord, RunStoreError> {
        let failed = failed("handing a run over");
        let mut tx = self.pool.begin().await.map_err(failed)?;
        let session: Option<String> = sqlx::query_scalar(D::SQL.hand_over)
            .bind(from)
            .bind(owner)
            .fetch_optional(&mut *tx)
            .await
            .map_err(self::failed("handing a run over"))?;
        let Some(session) = session else {
            drop(tx);
            return Err(self.unclaimable(from).await);
        };
        let inserted = sqlx::query(D::SQL.begin)
            .bind(to)
            .bind(session.as_str())
            .bind(owner)
            .bind(millis(lease))
            .fetch_one(&mut *tx)
            .await;
        let row = match inserted {
            Ok(row) => row,
            Err(sqlx::Error::Database(err)) if err.is_unique_violation() => {
                return Err(RunStoreError::Exists(to.to_owned()));
            }
            Err(err) => return Err(self::failed("handing a run over")(err)),
        };
        if let Some(notify) = D::SQL.notify {
            sqlx::query(notify)
                .bind(from)
                .execute(&mut *tx)
                .await
                .map_err(self::failed("notifying"))?;
        }
        tx.commit()
            .await
            .map_err(self::failed("handing a run over"))?;
        (self.wake)(from);
        Self::record(&row)
    }

    pub(super) async fn claim_expired(
        &self,
        prefix: &str,
        owner: &str,
        lease: Duration,
    ) -> Result<Option<RunRecord>, RunStoreError> {
        let row = sqlx::query(D::SQL.claim_expired)
            .bind(owner)
            .bind(millis(lease))
            .bind(prefix)
            .bind(prefix_end(prefix))
            .fetch_all(&self.pool)
            .await
            .map(written)
            .map_err(failed("claiming an expired run"))?;
        row.as_ref().map(Self::record).transpose()
    }

    pub(super) async fn get(&self, run_id: &str) -> Result<RunRecord, RunStoreError> {
        let row = sqlx::query(D::SQL.get)
            .bind(run_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(failed("reading a run"))?;
        match row {
            Some(row) => Self::record(&row),
            None => Err(RunStoreError::NotFound(run_id.to_owned())),
        }
    }

    pub(super) async fn active_run(
        &self,
        session_id: &str,
    ) -> Result<Option<RunRecord>, RunStoreError> {
        let row = sqlx::query(D::SQL.active_run)
            .bind(session_id)
            .fetch_optional(&self.pool)
            .await
            .map_err(failed("reading a session's run"))?;
        row.as_ref().map(Self::record).transpose()
    }

    pub(super) async fn request_cancel(&self, run_id: &str) -> Result<(), RunStoreError> {
        let done = sqlx::query(D::SQL.request_cancel)
            .bind(run_id)
            .fetch_all(&self.pool)
            .await
            .map(written)
            .map_err(failed("cancelling"))?;
        if done.is_none() {
            return Err(RunStoreError::NotFound(run_id.to_owned()));
        }
        (self.wake)(run_id);
        Ok(())
    }

    pub(super) async fn append_json(
        &self,
        run_id: &str,
        owner: &str,
        events: &[EventJson],
        end: Option<RunStatus>,
    ) -> Result<u64, RunStoreError> {
        let count = i64::try_from(events.len()).unwrap_or(i64::MAX);
        let status = end.unwrap_or(RunStatus::Running);
        let failed = || failed("appending events");
        let append = sqlx::query_scalar(D::SQL.append)
            .bind(run_id)
            .bind(owner)
            .bind(count)
            .bind(status.as_str())
            .bind(status == RunStatus::Running);
        // The row lock (or the database's write lock) orders appenders; the lease check
        // fences a lost owner out; the end goes with the last events.
        let first: Option<i64> = match (&self.appender, D::SQL.insert_events) {
            (Some(appender), _) => appender(run_id, owner, events, status).await?,
            (None, None) => append
                .bind(EventJson::array(events))
                .fetch_all(&self.pool)
                .await
                .map(written)
                .map_err(failed())?,
            (None, Some(insert)) => {
                let mut tx = self.pool.begin().await.map_err(failed())?;
                let first: Option<i64> = append.fetch_optional(&mut *tx).await.map_err(failed())?;
                if let Some(first) = first.filter(|_| !events.is_empty()) {
                    sqlx::query(insert)
                        .bind(run_id)
                        .bind(first)
                        .bind(count)
                        .bind(EventJson::array(events))
                        .execute(&mut *tx)
                        .await
                        .map_err(failed())?;
                }
                tx.commit().await.map_err(failed())?;
                first
            }
        };
        let Some(first) = first else {
            return Err(self.not_held(run_id, owner).await);
        };
        (self.wake)(run_id);
        Ok(u64::try_from(first + count).unwrap_or_default())
    }

    pub(super) async fn events_after(
        &self,
        run_id: &str,
        after: u64,
        limit: usize,
    ) -> Result<Vec<StoredEvent>, RunStoreError> {
        let until = after.saturating_add(u64::try_from(limit).unwrap_or(u64::MAX));
        let number = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        // Each row holds at least one wanted number, so `limit` rows are enough.
        let rows = sqlx::query(D::SQL.events_after)
            .bind(run_id)
            .bind(number(after))
            .bind(number(until))
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(failed("reading events"))?;
        if rows.is_empty() {
            // A run with no events yet, or no run at all.
            self.get(run_id).await?;
        }
        let mut read = Vec::new();
        for row in &rows {
            let first: i64 = row.try_get(0).map_err(failed("reading events"))?;
            let last: i64 = row.try_get(1).map_err(failed("reading events"))?;
            let text: String = row.try_get(2).map_err(failed("reading events"))?;
            let events = unpack("reading events", run_id, first, last, &text)?;
            // `unpack` checked that `first` is at least 1.
            let first = u64::try_from(first).unwrap_or_default();
            read.extend(
                (first..)
                    .zip(events)
                    .filter(|(seq, _)| *seq > after && *seq <= until)
                    .map(|(seq, event)| StoredEvent { seq, event }),
            );
        }
        read.truncate(limit);
        Ok(read)
    }

    pub(super) async fn list_runs(
        &self,
        prefix: &str,
        after: &str,
        limit: usize,
    ) -> Result<Vec<ListedRun>, RunStoreError> {
        let rows = sqlx::query(D::SQL.list_runs)
            .bind(prefix)
            .bind(after)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(failed("listing runs"))?;
        rows.iter()
            .map(|row| {
                let run = Self::record(row)?;
                let read = || failed("listing runs");
                let first: Option<i64> = row.try_get("events_from").map_err(read())?;
                let text: Option<String> = row.try_get("events").map_err(read())?;
                let (Some(first), Some(text)) = (first, text) else {
                    return Ok((run, None));
                };
                let last = i64::try_from(run.last_seq).unwrap_or(i64::MAX);
                let events = unpack("listing runs", &run.run_id, first, last, &text)?;
                let last = events.into_iter().last().map(|event| StoredEvent {
                    seq: run.last_seq,
                    event,
                });
                Ok((run, last))
            })
            .collect()
    }

    pub(super) async fn forget_ended(&self, older_than: Duration) -> Result<u64, RunStoreError> {
        let failed = || failed("forgetting ended runs");
        let forget = sqlx::query_scalar(D::SQL.forget_ended).bind(millis(older_than));
        let gone: Vec<String> = match D::SQL.forget_events {
            None => forget.fetch_all(&self.pool).await.map_err(failed())?,
            // The runs and their events go together: no batch outlives its run.
            Some(forget_events) => {
                let mut tx = self.pool.begin().await.map_err(failed())?;
                let gone: Vec<String> = forget.fetch_all(&mut *tx).await.map_err(failed())?;
                if !gone.is_empty() {
                    let ids = serde_json::to_string(&gone).map_err(|err| RunStoreError::Store {
                        operation: "forgetting ended runs",
                        reason: err.to_string(),
                    })?;
                    sqlx::query(forget_events)
                        .bind(ids)
                        .execute(&mut *tx)
                        .await
                        .map_err(failed())?;
                }
                tx.commit().await.map_err(failed())?;
                gone
            }
        };
        Ok(gone.len() as u64)
    }
}

/// The delegation of [`RunStore`](super::RunStore) to a [`SqlRuns`] in field `sql`, for the
/// public store types of each dialect; they implement `changed` and `notifies` as inherent
/// `wait_for_change` and `NOTIFIES`.
macro_rules! run_store_on_sql {
    ($store:ty) => {
        impl $crate::runs::RunStore for $store {
            fn begin<'a>(
                &'a self,
                session_id: &'a str,
                run_id: &'a str,
                owner: &'a str,
                lease: ::std::time::Duration,
            ) -> ::mux_tool::BoxFuture<
                'a,
                Result<$crate::runs::RunRecord, $crate::runs::RunStoreError>,
            > {
                Box::pin(self.sql.begin(session_id, run_id, owner, lease))
            }

            fn renew<'a>(
                &'a self,
                run_id: &'a str,
                owner: &'a str,
                lease: ::std::time::Duration,
            ) -> ::mux_tool::BoxFuture<
                'a,
                Result<$crate::runs::RunRecord, $crate::runs::RunStoreError>,
            > {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.renew(run_id, owner, lease),
                ))
            }

            fn set_status<'a>(
                &'a self,
                run_id: &'a str,
                owner: &'a str,
                status: $crate::runs::RunStatus,
            ) -> ::mux_tool::BoxFuture<'a, Result<(), $crate::runs::RunStoreError>> {
                Box::pin(self.sql.set_status(run_id, owner, status))
            }

            fn claim<'a>(
                &'a self,
                run_id: &'a str,
                owner: &'a str,
                lease: ::std::time::Duration,
            ) -> ::mux_tool::BoxFuture<
                'a,
                Result<$crate::runs::RunRecord, $crate::runs::RunStoreError>,
            > {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.claim(run_id, owner, lease),
                ))
            }

            fn hand_over<'a>(
                &'a self,
                from: &'a str,
                to: &'a str,
                owner: &'a str,
                lease: ::std::time::Duration,
            ) -> ::mux_tool::BoxFuture<
                'a,
                Result<$crate::runs::RunRecord, $crate::runs::RunStoreError>,
            > {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.hand_over(from, to, owner, lease),
                ))
            }

            fn claim_expired<'a>(
                &'a self,
                prefix: &'a str,
                owner: &'a str,
                lease: ::std::time::Duration,
            ) -> ::mux_tool::BoxFuture<
                'a,
                Result<Option<$crate::runs::RunRecord>, $crate::runs::RunStoreError>,
            > {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.claim_expired(prefix, owner, lease),
                ))
            }

            fn get<'a>(
                &'a self,
                run_id: &'a str,
            ) -> ::mux_tool::BoxFuture<
                'a,
                Result<$crate::runs::RunRecord, $crate::runs::RunStoreError>,
            > {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.get(run_id),
                ))
            }

            fn active_run<'a>(
                &'a self,
                session_id: &'a str,
            ) -> ::mux_tool::BoxFuture<
                'a,
                Result<Option<$crate::runs::RunRecord>, $crate::runs::RunStoreError>,
            > {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.active_run(session_id),
                ))
            }

            fn request_cancel<'a>(
                &'a self,
                run_id: &'a str,
            ) -> ::mux_tool::BoxFuture<'a, Result<(), $crate::runs::RunStoreError>> {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.request_cancel(run_id),
                ))
            }

            fn append_json<'a>(
                &'a self,
                run_id: &'a str,
                owner: &'a str,
                events: &'a [$crate::runs::EventJson],
                end: Option<$crate::runs::RunStatus>,
            ) -> ::mux_tool::BoxFuture<'a, Result<u64, $crate::runs::RunStoreError>> {
                Box::pin(self.sql.append_json(run_id, owner, events, end))
            }

            fn events_after<'a>(
                &'a self,
                run_id: &'a str,
                after: u64,
                limit: usize,
            ) -> ::mux_tool::BoxFuture<
                'a,
                Result<Vec<$crate::runs::StoredEvent>, $crate::runs::RunStoreError>,
            > {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.events_after(run_id, after, limit),
                ))
            }

            fn list_runs<'a>(
                &'a self,
                prefix: &'a str,
                after: &'a str,
                limit: usize,
            ) -> ::mux_tool::BoxFuture<
                'a,
                Result<Vec<$crate::runs::ListedRun>, $crate::runs::RunStoreError>,
            > {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.list_runs(prefix, after, limit),
                ))
            }

            fn forget_ended<'a>(
                &'a self,
                older_than: ::std::time::Duration,
            ) -> ::mux_tool::BoxFuture<'a, Result<u64, $crate::runs::RunStoreError>> {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.forget_ended(older_than),
                ))
            }

            fn changed<'a>(
                &'a self,
                run_id: &'a str,
                wait: ::std::time::Duration,
            ) -> ::mux_tool::BoxFuture<'a, ()> {
                Box::pin(self.wait_for_change(run_id, wait))
            }

            fn notifies(&self) -> bool {
                Self::NOTIFIES
            }
        }
    };
}

pub(super) use run_store_on_sql;

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn a_prefix_range_holds_exactly_the_ids_that_start_with_it() {
        assert_eq!(prefix_end("web."), Some("web/".to_owned()));
        assert_eq!(prefix_end("a\u{d7ff}"), Some("a\u{e000}".to_owned()));
        assert_eq!(prefix_end("a\u{10ffff}"), Some("b".to_owned()));
        assert_eq!(prefix_end(""), None);
        assert_eq!(prefix_end("\u{10ffff}"), None);
        let ids = [
            "web",
            "web.",
            "web.x",
            "web.\u{10ffff}",
            "web/",
            "weba",
            "a2a.x",
            "wec",
        ];
        for prefix in ["web.", "web", "a2a.", "w", "\u{10ffff}"] {
            let end = prefix_end(prefix);
            for id in ids {
                let in_range = id >= prefix && end.as_deref().is_none_or(|end| id < end);
                assert_eq!(in_range, id.starts_with(prefix), "{prefix:?} {id:?}");
            }
        }
    }
}
