//! The one body of the SQL session stores: every [`SessionStore`] operation written once,
//! generic over the sqlx database, with the SQL text of each dialect in a [`Statements`]
//! table (`sqlite.rs` and `postgres.rs` hold the tables and the constructors).

use std::sync::Arc;

use mux_tool::BoxFuture;
use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Row, Type};

use super::page::{self, PageCursor, SessionPage};
use super::sql::{
    VERSION_TABLE, creating, db_error, decode_list, decode_meta, decode_record, encode_meta,
    encode_records, forked_meta, pending, store_error, to_i64,
};
use super::{HistoryRecord, Session, SessionError, SessionMeta, check_id};

/// The SQL one dialect runs. Statements that differ only in their placeholders (`?` or `$n`)
/// are still listed per dialect: the text is the dialect's, the steps around it are shared.
pub(crate) struct Statements {
    /// Migrations, in order: version and SQL.
    pub(crate) migrations: &'static [(i64, &'static str)],
    /// How a transaction that writes begins (`None`: plain `BEGIN`).
    pub(crate) begin_write: Option<&'static str>,
    /// How a transaction that only reads a snapshot begins (`None`: plain `BEGIN`).
    pub(crate) begin_read: Option<&'static str>,
    /// Taken first in the migration transaction, so concurrent openers migrate once (`None`:
    /// `begin_write` serializes them already).
    pub(crate) lock_schema: Option<&'static str>,
    /// Records that a migration ran (binds the version).
    pub(crate) record_version: &'static str,
    /// A row if the session exists (binds the id).
    pub(crate) exists: &'static str,
    /// Creates a session row (binds id, updated_at_ms, parent, meta).
    pub(crate) insert_session: &'static str,
    /// Replaces a session's metadata (binds updated_at_ms, parent, meta, id).
    pub(crate) update_meta: &'static str,
    /// Appends a batch under the next sequence numbers, in one statement, inserting nothing
    /// when the session does not exist (binds id, then the batch).
    pub(crate) append: &'static str,
    /// Replaces a session's metadata and appends a batch, in one statement (binds id, the
    /// batch, updated_at_ms, parent, meta); `None`: `update_meta` and `append` in one
    /// `begin_write` transaction.
    pub(crate) save_and_append: Option<&'static str>,
    /// The metadata column (binds the id).
    pub(crate) select_meta: &'static str,
    /// A whole session in one statement, so in one snapshot without a transaction: a first
    /// row `(meta, NULL, NULL)`, then `(NULL, seq, record)` rows in order (binds the id);
    /// `None`: `select_meta` and `select_records` in one `begin_read` transaction.
    pub(crate) load: Option<&'static str>,
    /// `(seq, record)` rows in order (binds the id).
    pub(crate) select_records: &'static str,
    /// Every `(id, meta)` in list order.
    pub(crate) list: &'static str,
    /// The first page of `(id, meta)` (binds the limit).
    pub(crate) list_first: &'static str,
    /// A page after a cursor (binds updated_at_ms twice, id, limit).
    pub(crate) list_after: &'static str,
    /// Deletes a session row (binds the id).
    pub(crate) delete_session: &'static str,
    /// Deletes a session's records (binds the id).
    pub(crate) delete_records: &'static str,
    /// The metadata to fork, locked against appends where the dialect needs it; with
    /// `fork_next_seq`, also the `next_seq` column (binds the id).
    pub(crate) fork_read: &'static str,
    /// Creates the fork's row (binds id, updated_at_ms, parent, meta, and with
    /// `fork_next_seq` the original's `next_seq`).
    pub(crate) fork_insert: &'static str,
    /// Copies the records (binds the new id, then the original's).
    pub(crate) fork_copy: &'static str,
    /// Whether the sessions table keeps the next sequence number (PostgreSQL), which a fork
    /// copies.
    pub(crate) fork_next_seq: bool,
}

/// A database the SQL store runs on: its statements and how it takes a batch of records.
pub(crate) trait Dialect: Send + Sync + 'static {
    /// The sqlx database.
    type Db: Database;
    /// A batch of records as one bound value (a JSON array, or a text array).
    type Batch: for<'q> Encode<'q, Self::Db> + Type<Self::Db> + Send + 'static;
    /// The statements.
    const SQL: Statements;
    /// The records' JSON texts as one bound value.
    fn batch(id: &str, texts: Vec<String>) -> Result<Self::Batch, SessionError>;
    /// How many rows a statement changed.
    fn rows_affected(done: &<Self::Db as Database>::QueryResult) -> u64;
}

/// What a batch written by an [`Appender`] does to its session's row.
#[derive(Clone, Copy)]
// Only the PostgreSQL store has an appender that reads the metadata.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) enum MetaWrite<'a> {
    /// Keeps the metadata.
    Keep,
    /// Replaces the metadata.
    Save(&'a SessionMeta),
    /// Creates the session with this metadata.
    Create(&'a SessionMeta),
}

/// Writes a batch of records (the session id, the records' JSON texts, and what to do with the
/// session's row) some other way than a statement of its own, e.g. in a group commit; answers
/// whether it wrote: false, with nothing written, when the session does not exist (or, for
/// [`MetaWrite::Create`], exists already).
pub(crate) type Appender = Arc<
    dyn Fn(&str, Vec<String>, MetaWrite<'_>) -> BoxFuture<'static, Result<bool, SessionError>>
        + Send
        + Sync,
>;

/// Runs a read of one statement (its text, and the session id as its one parameter) some
/// other way than on the pool, e.g. on connections of the store's own: the rows.
pub(crate) type Reader<D> = Arc<
    dyn Fn(
            &'static str,
            String,
        )
            -> BoxFuture<'static, Result<Vec<<<D as Dialect>::Db as Database>::Row>, sqlx::Error>>
        + Send
        + Sync,
>;

/// Sessions in a SQL database of dialect `D`.
pub(crate) struct SqlStore<D: Dialect> {
    pub(crate) pool: Pool<D::Db>,
    /// Writes appends (with their metadata) instead of `append` and `save_and_append`.
    appender: Option<Appender>,
    /// Runs [`Statements::load`] instead of the pool.
    reader: Option<Reader<D>>,
    /// How long a statement may go unanswered (`crate::store_bound`).
    pub(crate) answer_within: std::time::Duration,
}

impl<D: Dialect> Clone for SqlStore<D> {
    fn clone(&self) -> Self {
        Self {
            pool: self.pool.clone(),
            appender: self.appender.clone(),
            reader: self.reader.clone(),
            answer_within: self.answer_within,
        }
    }
}

impl<D: Dialect> std::fmt::Debug for SqlStore<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore")
            .field("pool", &self.pool)
            .finish()
    }
}

impl<D, DB> SqlStore<D>
where
    D: Dialect<Db = DB>,
    DB: Database,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q str>: Encode<'q, DB>,
    for<'r> &'r str: Decode<'r, DB>,
    String: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
    i64: for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
{
    /// A store on `pool`, after running the pending migrations in one transaction.
    pub(crate) async fn migrated(pool: Pool<DB>) -> Result<Self, SessionError> {
        let sql = &D::SQL;
        let err = |operation| store_error(operation);
        let mut tx = begin(&pool, sql.begin_write)
            .await
            .map_err(err("migrating the schema"))?;
        if let Some(lock) = sql.lock_schema {
            sqlx::query(lock)
                .execute(&mut *tx)
                .await
                .map_err(err("locking the schema"))?;
        }
        sqlx::query(VERSION_TABLE)
            .execute(&mut *tx)
            .await
            .map_err(err("creating the version table"))?;
        let current: i64 =
            sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM mux_schema_versions")
                .fetch_one(&mut *tx)
                .await
                .map_err(err("reading the schema version"))?;
        for (version, migration) in pending(sql.migrations, current)? {
            sqlx::raw_sql(migration)
                .execute(&mut *tx)
                .await
                .map_err(err("migrating the schema"))?;
            sqlx::query(sql.record_version)
                .bind(*version)
                .execute(&mut *tx)
                .await
                .map_err(err("recording the schema version"))?;
        }
        tx.commit().await.map_err(err("migrating the schema"))?;
        Ok(Self {
            pool,
            appender: None,
            reader: None,
            answer_within: crate::store_bound::UNBOUNDED,
        })
    }

    /// The store running its one-statement loads through `reader`.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn with_reader(mut self, reader: Reader<D>) -> Self {
        self.reader = Some(reader);
        self
    }

    /// The store writing appends through `appender`.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub(crate) fn with_appender(mut self, appender: Appender) -> Self {
        self.appender = Some(appender);
        self
    }

    /// `Ok` if session `id` exists.
    async fn exists(&self, id: &str) -> Result<(), SessionError> {
        let found = sqlx::query(D::SQL.exists)
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error(id, "looking the session up"))?;
        found
            .map(|_| ())
            .ok_or_else(|| SessionError::NotFound(id.to_owned()))
    }

    /// The statement that inserts the row of a new session of `meta` (its JSON text `json`).
    fn insert_session(
        meta: &SessionMeta,
        json: String,
    ) -> sqlx::query::Query<'_, DB, <DB as Database>::Arguments<'_>> {
        sqlx::query(D::SQL.insert_session)
            .bind(meta.id.as_str())
            .bind(to_i64(meta.updated_at_ms))
            .bind(meta.parent.as_deref())
            .bind(json)
    }

    pub(crate) fn create<'a>(
        &'a self,
        meta: &'a SessionMeta,
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            check_id(&meta.id)?;
            Self::insert_session(meta, encode_meta(meta)?)
                .execute(&self.pool)
                .await
                .map_err(creating(&meta.id))?;
            Ok(())
        })
    }

    pub(crate) fn create_and_append<'a>(
        &'a self,
        meta: &'a SessionMeta,
        records: &'a [HistoryRecord],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            let id = meta.id.as_str();
            check_id(id)?;
            let texts = encode_records(id, records)?;
            if let Some(appender) = &self.appender {
                if !appender(id, texts, MetaWrite::Create(meta)).await? {
                    return Err(SessionError::AlreadyExists(id.to_owned()));
                }
                return Ok(());
            }
            let json = encode_meta(meta)?;
            let err = || db_error(id, "creating the session");
            let mut tx = begin(&self.pool, D::SQL.begin_write).await.map_err(err())?;
            Self::insert_session(meta, json)
                .execute(&mut *tx)
                .await
                .map_err(creating(id))?;
            if !texts.is_empty() {
                sqlx::query(D::SQL.append)
                    .bind(id)
                    .bind(D::batch(id, texts)?)
                    .execute(&mut *tx)
                    .await
                    .map_err(err())?;
            }
            tx.commit().await.map_err(err())?;
            Ok(())
        })
    }

    pub(crate) fn save_meta<'a>(
        &'a self,
        meta: &'a SessionMeta,
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            let json = encode_meta(meta)?;
            let done = sqlx::query(D::SQL.update_meta)
                .bind(to_i64(meta.updated_at_ms))
                .bind(meta.parent.as_deref())
                .bind(json)
                .bind(meta.id.as_str())
                .execute(&self.pool)
                .await
                .map_err(db_error(&meta.id, "saving metadata"))?;
            if D::rows_affected(&done) == 0 {
                return Err(SessionError::NotFound(meta.id.clone()));
            }
            Ok(())
        })
    }

    pub(crate) fn append<'a>(
        &'a self,
        id: &'a str,
        records: &'a [HistoryRecord],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            let texts = encode_records(id, records)?;
            if texts.is_empty() {
                return self.exists(id).await;
            }
            if let Some(appender) = &self.appender {
                if !appender(id, texts, MetaWrite::Keep).await? {
                    return Err(SessionError::NotFound(id.to_owned()));
                }
                return Ok(());
            }
            let count = texts.len() as u64;
            // One statement, so one round trip and its own transaction; each dialect's
            // statement says how it takes the next sequence numbers under a lock.
            let done = sqlx::query(D::SQL.append)
                .bind(id)
                .bind(D::batch(id, texts)?)
                .execute(&self.pool)
                .await
                .map_err(db_error(id, "appending"))?;
            if D::rows_affected(&done) != count {
                return Err(SessionError::NotFound(id.to_owned()));
            }
            Ok(())
        })
    }

    pub(crate) fn save_and_append<'a>(
        &'a self,
        meta: &'a SessionMeta,
        records: &'a [HistoryRecord],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            let id = meta.id.as_str();
            let texts = encode_records(id, records)?;
            if texts.is_empty() {
                return self.save_meta(meta).await;
            }
            if let Some(appender) = &self.appender {
                if !appender(id, texts, MetaWrite::Save(meta)).await? {
                    return Err(SessionError::NotFound(id.to_owned()));
                }
                return Ok(());
            }
            let count = texts.len() as u64;
            let json = encode_meta(meta)?;
            let err = || db_error(id, "saving and appending");
            let done = match D::SQL.save_and_append {
                Some(statement) => sqlx::query(statement)
                    .bind(id)
                    .bind(D::batch(id, texts)?)
                    .bind(to_i64(meta.updated_at_ms))
                    .bind(meta.parent.as_deref())
                    .bind(json)
                    .execute(&self.pool)
                    .await
                    .map_err(err())?,
                None => {
                    let mut tx = begin(&self.pool, D::SQL.begin_write).await.map_err(err())?;
                    let saved = sqlx::query(D::SQL.update_meta)
                        .bind(to_i64(meta.updated_at_ms))
                        .bind(meta.parent.as_deref())
                        .bind(json)
                        .bind(id)
                        .execute(&mut *tx)
                        .await
                        .map_err(err())?;
                    if D::rows_affected(&saved) == 0 {
                        return Err(SessionError::NotFound(id.to_owned()));
                    }
                    let done = sqlx::query(D::SQL.append)
                        .bind(id)
                        .bind(D::batch(id, texts)?)
                        .execute(&mut *tx)
                        .await
                        .map_err(err())?;
                    tx.commit().await.map_err(err())?;
                    done
                }
            };
            if D::rows_affected(&done) != count {
                return Err(SessionError::NotFound(id.to_owned()));
            }
            Ok(())
        })
    }

    pub(crate) fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Session, SessionError>> {
        Box::pin(async move {
            let err = |operation| db_error(id, operation);
            if let Some(load) = D::SQL.load {
                // One statement sees one snapshot: one round trip instead of four.
                let rows = self.read(load, id).await.map_err(err("loading"))?;
                let Some((first, rest)) = rows.split_first() else {
                    return Err(SessionError::NotFound(id.to_owned()));
                };
                let meta: Option<&str> = first.try_get(0).map_err(err("reading metadata"))?;
                let Some(meta) = meta else {
                    return Err(SessionError::NotFound(id.to_owned()));
                };
                let meta = decode_meta(id, meta)?;
                let mut records = Vec::with_capacity(rest.len());
                for row in rest {
                    let seq: i64 = row.try_get(1).map_err(err("reading the history"))?;
                    let text: &str = row.try_get(2).map_err(err("reading the history"))?;
                    records.push(decode_record(id, seq, text)?);
                }
                return Ok(Session::replay(meta, records));
            }
            // One snapshot: the metadata and the log as of the same moment.
            let mut tx = begin(&self.pool, D::SQL.begin_read)
                .await
                .map_err(err("loading"))?;
            let meta: Option<String> = sqlx::query_scalar(D::SQL.select_meta)
                .bind(id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(err("reading metadata"))?;
            let Some(meta) = meta else {
                return Err(SessionError::NotFound(id.to_owned()));
            };
            let rows = sqlx::query(D::SQL.select_records)
                .bind(id)
                .fetch_all(&mut *tx)
                .await
                .map_err(err("reading the history"))?;
            tx.commit().await.map_err(err("loading"))?;
            let meta = decode_meta(id, &meta)?;
            let mut records = Vec::with_capacity(rows.len());
            for row in rows {
                let seq: i64 = row.try_get(0).map_err(err("reading the history"))?;
                let text: &str = row.try_get(1).map_err(err("reading the history"))?;
                records.push(decode_record(id, seq, text)?);
            }
            Ok(Session::replay(meta, records))
        })
    }

    /// The rows of `sql`, a read whose one parameter is the session id `id`: through the
    /// [`Reader`] when the store has one, else on the pool.
    async fn read(&self, sql: &'static str, id: &str) -> Result<Vec<DB::Row>, sqlx::Error> {
        match &self.reader {
            Some(read) => read(sql, id.to_owned()).await,
            None => sqlx::query(sql).bind(id).fetch_all(&self.pool).await,
        }
    }

    pub(crate) fn load_meta<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<SessionMeta, SessionError>> {
        Box::pin(async move {
            let err = |operation| db_error(id, operation);
            let rows = self
                .read(D::SQL.select_meta, id)
                .await
                .map_err(err("reading metadata"))?;
            let Some(row) = rows.first() else {
                return Err(SessionError::NotFound(id.to_owned()));
            };
            let meta: &str = row.try_get(0).map_err(err("reading metadata"))?;
            decode_meta(id, meta)
        })
    }

    pub(crate) fn list(&self) -> BoxFuture<'_, Result<Vec<SessionMeta>, SessionError>> {
        Box::pin(async move {
            let rows: Vec<(String, String)> = sqlx::query_as(D::SQL.list)
                .fetch_all(&self.pool)
                .await
                .map_err(store_error("listing sessions"))?;
            Ok(decode_list(rows))
        })
    }

    pub(crate) fn list_page<'a>(
        &'a self,
        after: Option<&'a PageCursor>,
        limit: usize,
    ) -> BoxFuture<'a, Result<SessionPage, SessionError>> {
        Box::pin(async move {
            let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
            let query = match after {
                None => sqlx::query_as(D::SQL.list_first).bind(fetch),
                Some(cursor) => sqlx::query_as(D::SQL.list_after)
                    .bind(to_i64(cursor.updated_at_ms))
                    .bind(to_i64(cursor.updated_at_ms))
                    .bind(cursor.id.as_str())
                    .bind(fetch),
            };
            let rows: Vec<(String, String)> = query
                .fetch_all(&self.pool)
                .await
                .map_err(store_error("listing sessions"))?;
            let more = rows.len() > limit;
            let mut sessions = decode_list(rows);
            sessions.truncate(limit);
            Ok(page::finish(sessions, limit, more))
        })
    }

    pub(crate) fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            let err = |operation| db_error(id, operation);
            let mut tx = begin(&self.pool, D::SQL.begin_write)
                .await
                .map_err(err("deleting"))?;
            let done = sqlx::query(D::SQL.delete_session)
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(err("deleting the session"))?;
            if D::rows_affected(&done) == 0 {
                return Err(SessionError::NotFound(id.to_owned()));
            }
            sqlx::query(D::SQL.delete_records)
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(err("deleting the history"))?;
            tx.commit().await.map_err(err("deleting"))
        })
    }

    /// Copies the session's rows into a new session in one transaction (copy-on-fork).
    pub(crate) fn fork<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<SessionMeta, SessionError>> {
        Box::pin(async move {
            let sql = &D::SQL;
            let err = |operation| db_error(id, operation);
            let mut tx = begin(&self.pool, sql.begin_write)
                .await
                .map_err(err("forking"))?;
            let row = sqlx::query(sql.fork_read)
                .bind(id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(err("reading metadata"))?;
            let Some(row) = row else {
                return Err(SessionError::NotFound(id.to_owned()));
            };
            let original: &str = row.try_get(0).map_err(err("reading metadata"))?;
            let meta = forked_meta(id, &decode_meta(id, original)?);
            let insert = sqlx::query(sql.fork_insert)
                .bind(meta.id.as_str())
                .bind(to_i64(meta.updated_at_ms))
                .bind(meta.parent.as_deref())
                .bind(encode_meta(&meta)?);
            let insert = if sql.fork_next_seq {
                let next_seq: i64 = row.try_get(1).map_err(err("reading metadata"))?;
                insert.bind(next_seq)
            } else {
                insert
            };
            insert.execute(&mut *tx).await.map_err(creating(&meta.id))?;
            sqlx::query(sql.fork_copy)
                .bind(meta.id.as_str())
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(err("copying the history"))?;
            tx.commit().await.map_err(err("forking"))?;
            Ok(meta)
        })
    }
}

/// Begins a transaction with `statement`, or a plain `BEGIN`.
async fn begin<DB: Database>(
    pool: &Pool<DB>,
    statement: Option<&'static str>,
) -> Result<sqlx::Transaction<'static, DB>, sqlx::Error> {
    match statement {
        Some(statement) => pool.begin_with(statement).await,
        None => pool.begin().await,
    }
}

/// The delegation of [`SessionStore`](super::SessionStore) to a [`SqlStore`] in field `sql`,
/// for the public store types of each dialect.
macro_rules! session_store_on_sql {
    ($store:ty) => {
        impl $crate::session::SessionStore for $store {
            fn create<'a>(
                &'a self,
                meta: &'a $crate::session::SessionMeta,
            ) -> ::mux_tool::BoxFuture<'a, Result<(), $crate::session::SessionError>> {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.create(meta),
                ))
            }

            fn save_meta<'a>(
                &'a self,
                meta: &'a $crate::session::SessionMeta,
            ) -> ::mux_tool::BoxFuture<'a, Result<(), $crate::session::SessionError>> {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.save_meta(meta),
                ))
            }

            fn append<'a>(
                &'a self,
                id: &'a str,
                records: &'a [$crate::session::HistoryRecord],
            ) -> ::mux_tool::BoxFuture<'a, Result<(), $crate::session::SessionError>> {
                self.sql.append(id, records)
            }

            fn save_and_append<'a>(
                &'a self,
                meta: &'a $crate::session::SessionMeta,
                records: &'a [$crate::session::HistoryRecord],
            ) -> ::mux_tool::BoxFuture<'a, Result<(), $crate::session::SessionError>> {
                self.sql.save_and_append(meta, records)
            }

            fn create_and_append<'a>(
                &'a self,
                meta: &'a $crate::session::SessionMeta,
                records: &'a [$crate::session::HistoryRecord],
            ) -> ::mux_tool::BoxFuture<'a, Result<(), $crate::session::SessionError>> {
                self.sql.create_and_append(meta, records)
            }

            fn load<'a>(
                &'a self,
                id: &'a str,
            ) -> ::mux_tool::BoxFuture<
                'a,
                Result<$crate::session::Session, $crate::session::SessionError>,
            > {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.load(id),
                ))
            }

            fn load_meta<'a>(
                &'a self,
                id: &'a str,
            ) -> ::mux_tool::BoxFuture<
                'a,
                Result<$crate::session::SessionMeta, $crate::session::SessionError>,
            > {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.load_meta(id),
                ))
            }

            fn list(
                &self,
            ) -> ::mux_tool::BoxFuture<
                '_,
                Result<Vec<$crate::session::SessionMeta>, $crate::session::SessionError>,
            > {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.list(),
                ))
            }

            fn list_page<'a>(
                &'a self,
                after: Option<&'a $crate::session::PageCursor>,
                limit: usize,
            ) -> ::mux_tool::BoxFuture<
                'a,
                Result<$crate::session::SessionPage, $crate::session::SessionError>,
            > {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.list_page(after, limit),
                ))
            }

            fn delete<'a>(
                &'a self,
                id: &'a str,
            ) -> ::mux_tool::BoxFuture<'a, Result<(), $crate::session::SessionError>> {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.delete(id),
                ))
            }

            /// Copies the session's rows into a new session in one transaction
            /// (copy-on-fork).
            fn fork<'a>(
                &'a self,
                id: &'a str,
            ) -> ::mux_tool::BoxFuture<
                'a,
                Result<$crate::session::SessionMeta, $crate::session::SessionError>,
            > {
                Box::pin($crate::store_bound::bounded(
                    self.sql.answer_within,
                    self.sql.fork(id),
                ))
            }
        }
    };
}

pub(crate) use session_store_on_sql;
