//! Sessions in one SQLite file in WAL mode, through sqlx (SQLite bundled).

use std::path::Path;
use std::time::Duration;

use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqliteQueryResult,
    SqliteSynchronous,
};

use super::SessionError;
use super::sql::store_error;
use super::sql_store::{Dialect, SqlStore, Statements, session_store_on_sql};

/// SQLite's statements and batches.
struct SqliteDialect;

impl Dialect for SqliteDialect {
    type Db = Sqlite;
    /// The records as one JSON array, which the append statement walks with `json_each`.
    type Batch = String;

    const SQL: Statements = Statements {
        migrations: &[(1, include_str!("migrations/sqlite/0001_sessions.sql"))],
        // Takes the write lock at once, so a busy database is waited for (up to the busy
        // timeout) instead of failing mid-transaction; it also serializes migrations.
        begin_write: Some("BEGIN IMMEDIATE"),
        begin_read: None,
        lock_schema: None,
        record_version: "INSERT INTO mux_schema_versions (version) VALUES (?)",
        exists: "SELECT 1 FROM mux_sessions WHERE id = ?",
        insert_session: "INSERT INTO mux_sessions (id, updated_at_ms, parent, meta) VALUES (?, ?, ?, ?)",
        update_meta: "UPDATE mux_sessions SET updated_at_ms = ?, parent = ?, meta = ? WHERE id = ?",
        // A writing statement takes the database's write lock before it reads anything
        // (waiting up to the busy timeout), so the next sequence number it reads is still the
        // next when it writes: concurrent appenders, in this process or others, are
        // serialized by that lock.
        append: "INSERT INTO mux_session_records (session_id, seq, record) \
                 SELECT ?1, COALESCE((SELECT MAX(seq) + 1 FROM mux_session_records \
                                      WHERE session_id = ?1), 0) + batch.key, batch.value \
                 FROM json_each(?2) AS batch \
                 WHERE EXISTS (SELECT 1 FROM mux_sessions WHERE id = ?1)",
        save_and_append: None,
        select_meta: "SELECT meta FROM mux_sessions WHERE id = ?",
        load: None,
        select_records: "SELECT seq, record FROM mux_session_records WHERE session_id = ? ORDER BY seq",
        list: "SELECT id, meta FROM mux_sessions ORDER BY updated_at_ms DESC, id",
        list_first: "SELECT id, meta FROM mux_sessions ORDER BY updated_at_ms DESC, id LIMIT ?",
        list_after: "SELECT id, meta FROM mux_sessions \
                     WHERE updated_at_ms < ? OR (updated_at_ms = ? AND id > ?) \
                     ORDER BY updated_at_ms DESC, id LIMIT ?",
        delete_session: "DELETE FROM mux_sessions WHERE id = ?",
        delete_records: "DELETE FROM mux_session_records WHERE session_id = ?",
        // `BEGIN IMMEDIATE` holds the write lock, so no append lands half in the copy.
        fork_read: "SELECT meta FROM mux_sessions WHERE id = ?",
        fork_insert: "INSERT INTO mux_sessions (id, updated_at_ms, parent, meta) VALUES (?, ?, ?, ?)",
        fork_copy: "INSERT INTO mux_session_records (session_id, seq, record) \
                    SELECT ?, seq, record FROM mux_session_records WHERE session_id = ?",
        fork_next_seq: false,
    };

    fn batch(id: &str, texts: Vec<String>) -> Result<String, SessionError> {
        serde_json::to_string(&texts).map_err(SessionError::serialize(id, "serializing a record"))
    }

    fn rows_affected(done: &SqliteQueryResult) -> u64 {
        done.rows_affected()
    }
}

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
/// use mux_store::session::{HistoryRecord, SessionMeta, SessionStore, SqliteSessionStore};
/// use mux_llm::Message;
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build()?.block_on(async {
/// let dir = std::env::temp_dir().join(format!("mux-doc-{}", mux_store::session::new_session_id()));
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
    sql: SqlStore<SqliteDialect>,
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
                    id: None,
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
        // No ping before each use; a connection left in a transaction is not reused.
        let pool = crate::sqlite_pool::pool_options(4)
            .connect_with(options)
            .await
            .map_err(store_error("opening the database"))?;
        Self::with_pool(pool).await
    }

    /// A store on an existing pool, after migrating its database.
    pub async fn with_pool(pool: SqlitePool) -> Result<Self, SessionError> {
        Ok(Self {
            sql: SqlStore::migrated(pool).await?,
        })
    }

    /// The connection pool, for maintenance (backups, `VACUUM`) and inspection.
    pub fn pool(&self) -> &SqlitePool {
        &self.sql.pool
    }

    /// Closes the pool's connections (checkpointing the WAL), waiting for those in use.
    pub async fn close(&self) {
        self.sql.pool.close().await;
    }
}

session_store_on_sql!(SqliteSessionStore);
