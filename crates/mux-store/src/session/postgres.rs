//! Sessions in PostgreSQL, shared by many processes and machines, through sqlx.

use sqlx::postgres::{PgPool, PgQueryResult, Postgres};

use std::sync::Arc;

use super::sql::{encode_meta, store_error, to_i64};
use super::sql_store::{
    Appender, Dialect, MetaWrite, Reader, SqlStore, Statements, session_store_on_sql,
};
use super::{SessionError, SessionMeta};
use crate::group_commit::{GroupCommit, SavedMeta, SessionRow, SessionWrite};
use crate::pg_connections::Connections;

/// The most connections the store opens for its pool, and again for its loads.
const POOL_SIZE: u32 = 16;
/// How long getting a connection may take: an unreachable server is reported within it (the
/// loop then holds its records, see `LoopError::Unwritten`) instead of stalling a run for
/// sqlx's 30 s.
const ACQUIRE: std::time::Duration = std::time::Duration::from_secs(2);

/// PostgreSQL's statements and batches.
struct PostgresDialect;

impl Dialect for PostgresDialect {
    type Db = Postgres;
    /// The records as one `text[]`.
    type Batch = Vec<String>;

    const SQL: Statements = Statements {
        migrations: &[
            (1, include_str!("migrations/postgres/0001_sessions.sql")),
            (2, include_str!("migrations/postgres/0002_last_write.sql")),
        ],
        begin_write: None,
        // Reads run in one snapshot, so a load sees the metadata and log of one moment.
        begin_read: Some("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
        // Serializes migrations across processes; the key is "mux sess" in ASCII
        // (0x6d75_7820_7365_7373).
        lock_schema: Some("SELECT pg_advisory_xact_lock(7887342403179606899)"),
        record_version: "INSERT INTO mux_schema_versions (version) VALUES ($1)",
        exists: "SELECT 1 FROM mux_sessions WHERE id = $1",
        insert_session: "INSERT INTO mux_sessions (id, updated_at_ms, parent, meta) VALUES ($1, $2, $3, $4)",
        update_meta: "UPDATE mux_sessions SET updated_at_ms = $1, parent = $2, meta = $3 WHERE id = $4",
        // The UPDATE takes the session row's lock and reserves the batch's sequence numbers
        // (a concurrent appender waits for the commit, then sees the new `next_seq`), and the
        // INSERT writes the records under those numbers. The primary key (session_id, seq)
        // backs it up.
        append: "WITH reserved AS ( \
                     UPDATE mux_sessions SET next_seq = next_seq + cardinality($2::text[]) \
                     WHERE id = $1 RETURNING next_seq - cardinality($2::text[]) AS first) \
                 INSERT INTO mux_session_records (session_id, seq, record) \
                 SELECT $1, reserved.first + r.ord - 1, r.record \
                 FROM reserved, unnest($2::text[]) WITH ORDINALITY AS r(record, ord)",
        // `append`, with the metadata replaced by the same UPDATE.
        save_and_append: Some(
            "WITH reserved AS ( \
                 UPDATE mux_sessions SET next_seq = next_seq + cardinality($2::text[]), \
                     updated_at_ms = $3, parent = $4, meta = $5 \
                 WHERE id = $1 RETURNING next_seq - cardinality($2::text[]) AS first) \
             INSERT INTO mux_session_records (session_id, seq, record) \
             SELECT $1, reserved.first + r.ord - 1, r.record \
             FROM reserved, unnest($2::text[]) WITH ORDINALITY AS r(record, ord)",
        ),
        select_meta: "SELECT meta FROM mux_sessions WHERE id = $1",
        // The metadata row first (its seq is NULL), then the records in order.
        load: Some(
            "SELECT meta, NULL::bigint AS seq, NULL::text AS record FROM mux_sessions WHERE id = $1 \
             UNION ALL \
             SELECT NULL, seq, record FROM mux_session_records WHERE session_id = $1 \
             ORDER BY seq NULLS FIRST",
        ),
        select_records: "SELECT seq, record FROM mux_session_records WHERE session_id = $1 ORDER BY seq",
        list: "SELECT id, meta FROM mux_sessions ORDER BY updated_at_ms DESC, id",
        list_first: "SELECT id, meta FROM mux_sessions ORDER BY updated_at_ms DESC, id LIMIT $1",
        list_after: "SELECT id, meta FROM mux_sessions \
                     WHERE updated_at_ms < $1 OR (updated_at_ms = $2 AND id > $3) \
                     ORDER BY updated_at_ms DESC, id LIMIT $4",
        delete_session: "DELETE FROM mux_sessions WHERE id = $1",
        delete_records: "DELETE FROM mux_session_records WHERE session_id = $1",
        // The original's row is share-locked meanwhile, so no append lands half in the copy.
        fork_read: "SELECT meta, next_seq FROM mux_sessions WHERE id = $1 FOR SHARE",
        fork_insert: "INSERT INTO mux_sessions (id, updated_at_ms, parent, meta, next_seq) \
                      VALUES ($1, $2, $3, $4, $5)",
        fork_copy: "INSERT INTO mux_session_records (session_id, seq, record) \
                    SELECT $1, seq, record FROM mux_session_records WHERE session_id = $2",
        fork_next_seq: true,
    };

    fn batch(_id: &str, texts: Vec<String>) -> Result<Vec<String>, SessionError> {
        Ok(texts)
    }

    fn rows_affected(done: &PgQueryResult) -> u64 {
        done.rows_affected()
    }
}

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
/// use mux_store::session::{PostgresSessionStore, SessionMeta, SessionStore};
///
/// # async fn demo() -> Result<(), mux_store::session::SessionError> {
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
    sql: SqlStore<PostgresDialect>,
    /// The connections loads run on.
    loads: Arc<Connections>,
}

impl PostgresSessionStore {
    /// Connects to the database at `url` (a pool of up to sixteen connections, and as many
    /// of the store's own for loads) and migrates it.
    pub async fn connect(url: &str) -> Result<Self, SessionError> {
        let options = crate::pg_pool::connect_options(url)
            .map_err(store_error("reading the database URL"))?;
        let pool = crate::pg_pool::options(POOL_SIZE, ACQUIRE)
            .connect_with(options)
            .await
            .map_err(store_error("connecting to the database"))?;
        Self::with_pool(pool).await
    }

    /// A store on an existing pool, after migrating its database. Loads run on up to sixteen
    /// connections of the store's own, opened with the pool's options.
    pub async fn with_pool(pool: PgPool) -> Result<Self, SessionError> {
        // Appends go through this process's group commit on the database, with the run
        // store's writes.
        let group = Arc::new(GroupCommit::for_pool(&pool));
        let appender: Appender = Arc::new(move |id, texts, write| {
            let group = Arc::clone(&group);
            let id = id.to_owned();
            let create = matches!(write, MetaWrite::Create(_));
            let saved = |meta: &SessionMeta| {
                encode_meta(meta).map(|json| SavedMeta {
                    updated_at_ms: to_i64(meta.updated_at_ms),
                    parent: meta.parent.clone(),
                    json,
                })
            };
            let row = match write {
                MetaWrite::Keep => Ok(SessionRow::Keep),
                MetaWrite::Save(meta) => saved(meta).map(SessionRow::Save),
                MetaWrite::Create(meta) => saved(meta).map(SessionRow::Create),
            };
            Box::pin(async move {
                let write = SessionWrite::new(id.clone(), texts, row?);
                group
                    .write_session(write)
                    .await
                    .map_err(|failure| SessionError::Database {
                        id: Some(id),
                        operation: if create {
                            "creating the session"
                        } else {
                            "appending"
                        },
                        source: Box::new(failure),
                    })
            })
        });
        // Loads run on connections of the store's own: a pool would send a query down each
        // connection handed back, a second round trip per load.
        let connections = Arc::new(Connections::new(
            (*pool.connect_options()).clone(),
            POOL_SIZE as usize,
            ACQUIRE,
        ));
        let loads = Arc::clone(&connections);
        let reader: Reader<PostgresDialect> = Arc::new(move |sql, id| {
            let connections = Arc::clone(&connections);
            Box::pin(async move {
                let mut conn = connections.take().await?;
                let rows = sqlx::query(sql).bind(id).fetch_all(&mut *conn).await;
                // A statement the server refused leaves the connection whole.
                if matches!(rows, Ok(_) | Err(sqlx::Error::Database(_))) {
                    connections.put(conn);
                }
                rows
            })
        });
        let mut sql = SqlStore::migrated(pool)
            .await?
            .with_appender(appender)
            .with_reader(reader);
        sql.answer_within = crate::pg_pool::answer_within(&sql.pool)
            .await
            .map_err(store_error("reading statement_timeout"))?;
        Ok(Self { sql, loads })
    }

    /// The connection pool, for maintenance and inspection.
    pub fn pool(&self) -> &PgPool {
        &self.sql.pool
    }

    /// Closes the pool's connections, waiting for those in use, and the idle ones loads run
    /// on.
    pub async fn close(&self) {
        self.sql.pool.close().await;
        self.loads.close_idle().await;
    }
}

session_store_on_sql!(PostgresSessionStore);
