//! Sessions in PostgreSQL, shared by many processes and machines, through sqlx.

use mux_tool::BoxFuture;
use sqlx::Row;
use sqlx::postgres::{PgPool, PgPoolOptions};

use super::page::{self, PageCursor, SessionPage};
use super::sql::{
    CREATING, VERSION_TABLE, db_error, decode_list, decode_meta, decode_record, encode_meta,
    encode_records, forked_meta, pending, to_i64,
};
use super::{HistoryRecord, Session, SessionError, SessionMeta, SessionStore, check_id};

/// The migrations, in order: version and SQL.
const MIGRATIONS: &[(i64, &str)] = &[(1, include_str!("migrations/postgres/0001_sessions.sql"))];

/// Reads run in one snapshot, so a load sees the metadata and log of one moment.
const BEGIN_SNAPSHOT: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";

/// The advisory lock key that serializes migrations across processes ("mux sess" in ASCII).
const MIGRATION_LOCK: i64 = 0x6d75_7820_7365_7373;

/// Sessions in a PostgreSQL database, shared by every process that connects to it.
///
/// Each append is one statement: it locks the session's row, reserves the next sequence
/// numbers and inserts the records under them, so concurrent appenders from any number of
/// processes get one total order, every record is kept exactly once, and a reader sees an
/// append whole or not at all. A client killed mid-append loses that append only. Schema
/// migrations run on connect, serialized by an advisory lock; a database written by a newer
/// mux is refused with [`SessionError::SchemaTooNew`].
///
/// ```no_run
/// use mux_orchestrator::session::{PostgresSessionStore, SessionMeta, SessionStore};
///
/// # async fn demo() -> Result<(), mux_orchestrator::session::SessionError> {
/// // A unix socket in /run/postgresql, or `postgres://user:password@localhost/db`.
/// let store = PostgresSessionStore::connect("postgres:///mux?host=/run/postgresql").await?;
/// let meta = SessionMeta::new();
/// store.create(&meta).await?;
/// assert!(store.load(&meta.id).await?.messages.is_empty());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct PostgresSessionStore {
    pool: PgPool,
}

impl PostgresSessionStore {
    /// Connects to the database at `url` (a pool of up to eight connections) and migrates it.
    /// An operation waits at most 2 s for a connection, so an unreachable server is reported
    /// (and the loop holds its records, see [`LoopError::Unwritten`](crate::LoopError::Unwritten))
    /// instead of stalling a run.
    pub async fn connect(url: &str) -> Result<Self, SessionError> {
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .acquire_timeout(std::time::Duration::from_secs(2))
            .connect(url)
            .await
            .map_err(db_error("", "connecting to the database"))?;
        Self::with_pool(pool).await
    }

    /// A store on an existing pool, after migrating its database.
    pub async fn with_pool(pool: PgPool) -> Result<Self, SessionError> {
        migrate(&pool).await?;
        Ok(Self { pool })
    }

    /// The connection pool, for maintenance and inspection.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Closes the pool's connections, waiting for those in use.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// `Ok` if session `id` exists.
    async fn exists(&self, id: &str) -> Result<(), SessionError> {
        let found: Option<i32> = sqlx::query_scalar("SELECT 1 FROM mux_sessions WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .map_err(db_error(id, "looking the session up"))?;
        found
            .map(|_| ())
            .ok_or_else(|| SessionError::NotFound(id.to_owned()))
    }
}

/// Runs the pending migrations in one transaction under an advisory lock, so processes that
/// connect at once migrate the database once.
async fn migrate(pool: &PgPool) -> Result<(), SessionError> {
    let err = |operation| db_error("", operation);
    let mut tx = pool.begin().await.map_err(err("migrating the schema"))?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(MIGRATION_LOCK)
        .execute(&mut *tx)
        .await
        .map_err(err("locking the schema"))?;
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
        sqlx::query("INSERT INTO mux_schema_versions (version) VALUES ($1)")
            .bind(version)
            .execute(&mut *tx)
            .await
            .map_err(err("recording the schema version"))?;
    }
    tx.commit().await.map_err(err("migrating the schema"))
}

impl SessionStore for PostgresSessionStore {
    fn create<'a>(&'a self, meta: &'a SessionMeta) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            check_id(&meta.id)?;
            let json = encode_meta(meta)?;
            sqlx::query(
                "INSERT INTO mux_sessions (id, updated_at_ms, parent, meta) VALUES ($1, $2, $3, $4)",
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
                "UPDATE mux_sessions SET updated_at_ms = $1, parent = $2, meta = $3 WHERE id = $4",
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
            let count = texts.len() as u64;
            // One statement, so one round trip and its own transaction: the UPDATE takes the
            // session row's lock and reserves `count` sequence numbers (a concurrent appender
            // waits for the commit, then sees the new `next_seq`), and the INSERT writes the
            // records under those numbers. The primary key (session_id, seq) backs it up.
            let done = sqlx::query(
                "WITH reserved AS ( \
                     UPDATE mux_sessions SET next_seq = next_seq + cardinality($2::text[]) \
                     WHERE id = $1 RETURNING next_seq - cardinality($2::text[]) AS first) \
                 INSERT INTO mux_session_records (session_id, seq, record) \
                 SELECT $1, reserved.first + r.ord - 1, r.record \
                 FROM reserved, unnest($2::text[]) WITH ORDINALITY AS r(record, ord)",
            )
            .bind(id)
            .bind(&texts)
            .execute(&self.pool)
            .await
            .map_err(err("appending"))?;
            if done.rows_affected() != count {
                return Err(SessionError::NotFound(id.to_owned()));
            }
            Ok(())
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Session, SessionError>> {
        Box::pin(async move {
            let err = |operation| db_error(id, operation);
            // One snapshot: the metadata and the log as of the same moment.
            let mut tx = self
                .pool
                .begin_with(BEGIN_SNAPSHOT)
                .await
                .map_err(err("loading"))?;
            let meta: Option<String> =
                sqlx::query_scalar("SELECT meta FROM mux_sessions WHERE id = $1")
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(err("reading metadata"))?;
            let Some(meta) = meta else {
                return Err(SessionError::NotFound(id.to_owned()));
            };
            let rows = sqlx::query(
                "SELECT seq, record FROM mux_session_records WHERE session_id = $1 ORDER BY seq",
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
                    "SELECT id, meta FROM mux_sessions ORDER BY updated_at_ms DESC, id LIMIT $1",
                )
                .bind(fetch),
                Some(cursor) => sqlx::query_as(
                    "SELECT id, meta FROM mux_sessions \
                     WHERE updated_at_ms < $1 OR (updated_at_ms = $2 AND id > $3) \
                     ORDER BY updated_at_ms DESC, id LIMIT $4",
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
            let mut tx = self.pool.begin().await.map_err(err("deleting"))?;
            let done = sqlx::query("DELETE FROM mux_sessions WHERE id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(err("deleting the session"))?;
            if done.rows_affected() == 0 {
                return Err(SessionError::NotFound(id.to_owned()));
            }
            sqlx::query("DELETE FROM mux_session_records WHERE session_id = $1")
                .bind(id)
                .execute(&mut *tx)
                .await
                .map_err(err("deleting the history"))?;
            tx.commit().await.map_err(err("deleting"))
        })
    }

    /// Copies the session's rows into a new session in one transaction (copy-on-fork); the
    /// original's row is share-locked meanwhile, so no append lands half in the copy.
    fn fork<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionMeta, SessionError>> {
        Box::pin(async move {
            let err = |operation| db_error(id, operation);
            let mut tx = self.pool.begin().await.map_err(err("forking"))?;
            let row: Option<(String, i64)> =
                sqlx::query_as("SELECT meta, next_seq FROM mux_sessions WHERE id = $1 FOR SHARE")
                    .bind(id)
                    .fetch_optional(&mut *tx)
                    .await
                    .map_err(err("reading metadata"))?;
            let Some((original, next_seq)) = row else {
                return Err(SessionError::NotFound(id.to_owned()));
            };
            let meta = forked_meta(id, &decode_meta(id, &original)?);
            sqlx::query(
                "INSERT INTO mux_sessions (id, updated_at_ms, parent, meta, next_seq) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(&meta.id)
            .bind(to_i64(meta.updated_at_ms))
            .bind(&meta.parent)
            .bind(encode_meta(&meta)?)
            .bind(next_seq)
            .execute(&mut *tx)
            .await
            .map_err(db_error(&meta.id, CREATING))?;
            sqlx::query(
                "INSERT INTO mux_session_records (session_id, seq, record) \
                 SELECT $1, seq, record FROM mux_session_records WHERE session_id = $2",
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
