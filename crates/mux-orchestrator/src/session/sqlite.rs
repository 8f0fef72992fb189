//! Sessions in one SQLite file in WAL mode, through sqlx (SQLite bundled).

use std::path::Path;
use std::time::Duration;

use mux_tool::BoxFuture;
use sqlx::Row;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::page::{self, PageCursor, SessionPage};
use super::sql::{
    CREATING, VERSION_TABLE, db_error, decode_list, decode_meta, decode_record, encode_meta,
    encode_records, forked_meta, pending, to_i64,
};
use super::{HistoryRecord, Session, SessionError, SessionMeta, SessionStore, check_id};

/// The migrations, in order: version and SQL.
const MIGRATIONS: &[(i64, &str)] = &[(1, include_str!("migrations/sqlite/0001_sessions.sql"))];

/// Opens write transactions: takes the write lock at once, so a busy database is waited for
/// (up to the busy timeout) instead of failing mid-transaction.
const BEGIN_WRITE: &str = "BEGIN IMMEDIATE";

/// Sessions in one SQLite file, shared by the threads of a process and by the processes of one
/// machine.
///
/// The file is in WAL mode with `synchronous = NORMAL`: a committed append survives the
/// process being killed, and readers never wait for the writer. (A power loss may lose the last
/// commits; open with [`open_with`](Self::open_with) and `synchronous(Full)` if that matters.)
/// Each append is one statement that takes the next sequence numbers of its session under
/// the database's write lock, so concurrent appenders, in this process or others, get one
/// total order and no record is kept twice. Schema migrations run on open; a database written by a newer mux is refused
/// with [`SessionError::SchemaTooNew`].
///
/// ```
/// use mux_orchestrator::session::{HistoryRecord, SessionMeta, SessionStore, SqliteSessionStore};
/// use mux_llm::Message;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let dir = std::env::temp_dir().join(format!("mux-doc-{}", mux_orchestrator::session::new_session_id()));
/// std::fs::create_dir_all(&dir)?;
/// let store = SqliteSessionStore::open(dir.join("sessions.db")).await?;
/// let meta = SessionMeta::new();
/// store.create(&meta).await?;
/// store.append(&meta.id, &[HistoryRecord::Message { message: Message::user("hi") }]).await?;
/// assert_eq!(store.load(&meta.id).await?.messages[0].text(), "hi");
/// # store.close().await;
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct SqliteSessionStore {
    pool: SqlitePool,
}

impl SqliteSessionStore {
    /// Opens (creating it and its directory if missing) the database file at `path` and
    /// migrates it.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, SessionError> {
        let path = path.as_ref();
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            tokio::fs::create_dir_all(dir)
                .await
                .map_err(|source| SessionError::Io {
                    id: String::new(),
                    operation: "creating the database directory",
                    source,
                })?;
        }
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(30));
        Self::open_with(options).await
    }

    /// Opens a database with the caller's connection options (four pooled connections) and
    /// migrates it. The options should keep WAL mode and a busy timeout.
    pub async fn open_with(options: SqliteConnectOptions) -> Result<Self, SessionError> {
        // A connection to a local file does not go stale: no ping before each use.
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .test_before_acquire(false)
            .connect_with(options)
            .await
            .map_err(db_error("", "opening the database"))?;
        Self::with_pool(pool).await
    }

    /// A store on an existing pool, after migrating its database.
    pub async fn with_pool(pool: SqlitePool) -> Result<Self, SessionError> {
        migrate(&pool).await?;
        Ok(Self { pool })
    }

    /// The connection pool, for maintenance (backups, `VACUUM`) and inspection.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// Closes the pool's connections (checkpointing the WAL), waiting for those in use.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// `Ok` if session `id` exists.
    async fn exists(&self, id: &str) -> Result<(), SessionError> {
        let found: Option<i64> = sqlx::query_scalar("SELECT 1 FROM mux_sessions WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error(id, "looking the session up"))?;
        found
            .map(|_| ())
            .ok_or_else(|| SessionError::NotFound(id.to_owned()))
    }
}

/// Runs the pending migrations in one write transaction, so two processes opening a new file
/// at once migrate it once.
async fn migrate(pool: &SqlitePool) -> Result<(), SessionError> {
    let err = |operation| db_error("", operation);
    let mut tx = pool
        .begin_with(BEGIN_WRITE)
        .await
        .map_err(err("migrating the schema"))?;
    sqlx::query(VERSION_TABLE)
        .execute(&mut *tx)
        .await
        .map_err(err("creating the version table"))?;
    let current: i64 =
        sqlx::query_scalar("SELECT COALESCE(MAX(version), 0) FROM mux_schema_versions")
            .fetch_one(&mut *tx)
            .await
            .map_err(err("reading the schema version"))?;
    for (version, sql) in pending(MIGRATIONS, current)? {
        sqlx::raw_sql(sql)
            .execute(&mut *tx)
            .await
            .map_err(err("migrating the schema"))?;
        sqlx::query("INSERT INTO mux_schema_versions (version) VALUES (?)")
            .bind(version)
            .execute(&mut *tx)
            .await
            .map_err(err("recording the schema version"))?;
    }
    tx.commit().await.map_err(err("migrating the schema"))
}

impl SessionStore for SqliteSessionStore {
    fn create<'a>(&'a self, meta: &'a SessionMeta) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            check_id(&meta.id)?;
            let json = encode_meta(meta)?;
            sqlx::query(
                "INSERT INTO mux_sessions (id, updated_at_ms, parent, meta) VALUES (?, ?, ?, ?)",
            )
            .bind(&meta.id)
            .bind(to_i64(meta.updated_at_ms))
            .bind(&meta.parent)
            .bind(json)
            .execute(&self.pool)
            .await
            .map_err(db_error(&meta.id, CREATING))?;
            Ok(())
        })
    }

    fn save_meta<'a>(&'a self, meta: &'a SessionMeta) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            let json = encode_meta(meta)?;
            let done = sqlx::query(
                "UPDATE mux_sessions SET updated_at_ms = ?, parent = ?, meta = ? WHERE id = ?",
            )
            .bind(to_i64(meta.updated_at_ms))
            .bind(&meta.parent)
            .bind(json)
            .bind(&meta.id)
            .execute(&self.pool)
            .await
            .map_err(db_error(&meta.id, "saving metadata"))?;
            if done.rows_affected() == 0 {
                return Err(SessionError::NotFound(meta.id.clone()));
            }
            Ok(())
        })
    }

    fn append<'a>(
        &'a self,
        id: &'a str,
        records: &'a [HistoryRecord],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            let texts = encode_records(id, records)?;
            let err = |operation| db_error(id, operation);
            if texts.is_empty() {
                return self.exists(id).await;
            }
            let batch = serde_json::to_string(&texts).map_err(|e| SessionError::Io {
                id: id.to_owned(),
                operation: "serializing a record",
                source: std::io::Error::other(e),
            })?;
            // One statement, so one trip to the connection's thread. A writing statement takes
            // the database's write lock before it reads anything (waiting up to the busy
            // timeout), so the next sequence number it reads is still the next when it writes:
            // concurrent appenders, in this process or others, are serialized by that lock.
            let done = sqlx::query(
                "INSERT INTO mux_session_records (session_id, seq, record) \
                 SELECT ?1, COALESCE((SELECT MAX(seq) + 1 FROM mux_session_records \
                                      WHERE session_id = ?1), 0) + batch.key, batch.value \
                 FROM json_each(?2) AS batch \
                 WHERE EXISTS (SELECT 1 FROM mux_sessions WHERE id = ?1)",
            )
            .bind(id)
            .bind(batch)
            .execute(&self.pool)
            .await
            .map_err(err("appending"))?;
            if done.rows_affected() != texts.len() as u64 {
                return Err(SessionError::NotFound(id.to_owned()));
            }
            Ok(())
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Session, SessionError>> {
        Box::pin(async move {
            let err = |operation| db_error(id, operation);
            // One read transaction: the metadata and the log from the same snapshot.
            let mut tx = self.pool.begin().await.map_err(err("loading"))?;
            let meta: Option<String> =
                sqlx::query_scalar("SELECT meta FROM mux_sessions WHERE id = ?")
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(err("reading metadata"))?;
            let Some(meta) = meta else {
                return Err(SessionError::NotFound(id.to_owned()));
            };
            let rows = sqlx::query(
                "SELECT seq, record FROM mux_session_records WHERE session_id = ? ORDER BY seq",
            )
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

    fn list(&self) -> BoxFuture<'_, Result<Vec<SessionMeta>, SessionError>> {
        Box::pin(async move {
            let rows: Vec<(String, String)> =
                sqlx::query_as("SELECT id, meta FROM mux_sessions ORDER BY updated_at_ms DESC, id")
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db_error("", "listing sessions"))?;
            Ok(decode_list(rows))
        })
    }

    fn list_page<'a>(
        &'a self,
        after: Option<&'a PageCursor>,
        limit: usize,
    ) -> BoxFuture<'a, Result<SessionPage, SessionError>> {
        Box::pin(async move {
            let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
            let query = match after {
                None => sqlx::query_as(
                    "SELECT id, meta FROM mux_sessions ORDER BY updated_at_ms DESC, id LIMIT ?",
                )
                .bind(fetch),
                Some(cursor) => sqlx::query_as(
                    "SELECT id, meta FROM mux_sessions \
                     WHERE updated_at_ms < ? OR (updated_at_ms = ? AND id > ?) \
                     ORDER BY updated_at_ms DESC, id LIMIT ?",
                )
                .bind(to_i64(cursor.updated_at_ms))
                .bind(to_i64(cursor.updated_at_ms))
                .bind(&cursor.id)
                .bind(fetch),
            };
            let rows: Vec<(String, String)> = query
                .fetch_all(&self.pool)
                .await
                .map_err(db_error("", "listing sessions"))?;
            let more = rows.len() > limit;
            let mut sessions = decode_list(rows);
            sessions.truncate(limit);
            Ok(page::finish(sessions, limit, more))
        })
    }

    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            let err = |operation| db_error(id, operation);
            let mut tx = self
                .pool
                .begin_with(BEGIN_WRITE)
                .await
                .map_err(err("deleting"))?;
            let done = sqlx::query("DELETE FROM mux_sessions WHERE id = ?")
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(err("deleting the session"))?;
            if done.rows_affected() == 0 {
                return Err(SessionError::NotFound(id.to_owned()));
            }
            sqlx::query("DELETE FROM mux_session_records WHERE session_id = ?")
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(err("deleting the history"))?;
            tx.commit().await.map_err(err("deleting"))
        })
    }

    /// Copies the session's rows into a new session in one transaction (copy-on-fork).
    fn fork<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionMeta, SessionError>> {
        Box::pin(async move {
            let err = |operation| db_error(id, operation);
            let mut tx = self
                .pool
                .begin_with(BEGIN_WRITE)
                .await
                .map_err(err("forking"))?;
            let row: Option<(String,)> =
                sqlx::query_as("SELECT meta FROM mux_sessions WHERE id = ?")
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(err("reading metadata"))?;
            let Some((original,)) = row else {
                return Err(SessionError::NotFound(id.to_owned()));
            };
            let meta = forked_meta(id, &decode_meta(id, &original)?);
            sqlx::query(
                "INSERT INTO mux_sessions (id, updated_at_ms, parent, meta) VALUES (?, ?, ?, ?)",
            )
            .bind(&meta.id)
            .bind(to_i64(meta.updated_at_ms))
            .bind(&meta.parent)
            .bind(encode_meta(&meta)?)
            .execute(&mut *tx)
            .await
            .map_err(db_error(&meta.id, CREATING))?;
            sqlx::query(
                "INSERT INTO mux_session_records (session_id, seq, record) \
                 SELECT ?, seq, record FROM mux_session_records WHERE session_id = ?",
            )
            .bind(&meta.id)
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(err("copying the history"))?;
            tx.commit().await.map_err(err("forking"))?;
            Ok(meta)
        })
    }
}
