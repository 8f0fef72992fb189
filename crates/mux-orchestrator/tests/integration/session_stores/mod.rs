//! Every session store against one contract: memory, file, SQLite and PostgreSQL (a real
//! server, started from the machine's binaries), plus what only database stores promise:
//! several OS processes on one session, a process killed mid-append, schema versions.

mod contract;
#[cfg(feature = "postgres")]
mod outage;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod processes;

use crate::common::runtime;
use mux_orchestrator::session::{FileSessionStore, MemorySessionStore};

#[test]
fn the_memory_store_keeps_the_contract() {
    runtime().block_on(async {
        contract::run(&MemorySessionStore::new(), None).await;
        contract::many_sessions_page_through(&MemorySessionStore::new(), 10_000).await;
    });
}

#[test]
fn the_file_store_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("sessions");
    let store = FileSessionStore::new(&root);
    let tamper_root = root.clone();
    let tamper = move |id: String| -> futures::future::BoxFuture<'static, ()> {
        let path = tamper_root.join(id).join("history.jsonl");
        Box::pin(async move {
            let text = std::fs::read_to_string(&path).unwrap();
            let mut lines: Vec<&str> = text.lines().collect();
            lines[1] = "{\"record\":\"message\",\"mess";
            std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        })
    };
    runtime().block_on(contract::run(&store, Some(&tamper)));
}

#[test]
fn the_file_store_pages_through_10000_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let store = FileSessionStore::new(dir.path().join("sessions"));
    runtime().block_on(contract::many_sessions_page_through(&store, 10_000));
}

#[cfg(feature = "sqlite")]
mod sqlite {
    use mux_orchestrator::session::{SessionError, SessionStore, SqliteSessionStore};

    use super::{contract, runtime};

    /// Damages a record in place, as a bad disk or a hand edit would.
    fn tamper(
        pool: sqlx::SqlitePool,
    ) -> impl Fn(String) -> futures::future::BoxFuture<'static, ()> {
        move |id| {
            let pool = pool.clone();
            Box::pin(async move {
                sqlx::query("UPDATE mux_session_records SET record = '{\"record\":' WHERE session_id = ? AND seq = 1")
                    .bind(id)
                    .execute(&pool)
                    .await
                    .unwrap();
            })
        }
    }

    #[test]
    fn the_sqlite_store_keeps_the_contract() {
        let dir = tempfile::tempdir().unwrap();
        runtime().block_on(async {
            let store = SqliteSessionStore::open(dir.path().join("sessions.db"))
                .await
                .unwrap();
            contract::run(&store, Some(&tamper(store.pool().clone()))).await;
        });
    }

    #[test]
    fn the_sqlite_store_pages_through_10000_sessions() {
        let dir = tempfile::tempdir().unwrap();
        runtime().block_on(async {
            let store = SqliteSessionStore::open(dir.path().join("sessions.db"))
                .await
                .unwrap();
            contract::many_sessions_page_through(&store, 10_000).await;
        });
    }

    #[test]
    fn a_sqlite_file_reopens_with_everything_and_refuses_a_newer_schema() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        runtime().block_on(async {
            let store = SqliteSessionStore::open(&path).await.unwrap();
            let meta = mux_orchestrator::session::SessionMeta::new();
            store.create(&meta).await.unwrap();
            store.close().await;
            // Opening again runs no migration twice and keeps the data.
            let store = SqliteSessionStore::open(&path).await.unwrap();
            assert_eq!(store.load(&meta.id).await.unwrap().meta, meta);
            let journal: String = sqlx::query_scalar("PRAGMA journal_mode")
                .fetch_one(store.pool())
                .await
                .unwrap();
            assert_eq!(journal, "wal");
            sqlx::query("INSERT INTO mux_schema_versions (version) VALUES (999)")
                .execute(store.pool())
                .await
                .unwrap();
            store.close().await;
            let reopened = SqliteSessionStore::open(&path).await;
            assert!(
                matches!(reopened, Err(SessionError::SchemaTooNew { found: 999, .. })),
                "{reopened:?}"
            );
        });
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use mux_orchestrator::session::{PostgresSessionStore, SessionError, SessionStore};

    use super::{contract, runtime};
    use mux_testkit::postgres::TestDatabase;

    /// Damages a record in place, as a hand edit would.
    fn tamper(pool: sqlx::PgPool) -> impl Fn(String) -> futures::future::BoxFuture<'static, ()> {
        move |id| {
            let pool = pool.clone();
            Box::pin(async move {
                sqlx::query("UPDATE mux_session_records SET record = '{\"record\":' WHERE session_id = $1 AND seq = 1")
                    .bind(id)
                    .execute(&pool)
                    .await
                    .unwrap();
            })
        }
    }

    #[test]
    fn the_postgres_store_keeps_the_contract() {
        runtime().block_on(async {
            let db = TestDatabase::new().await;
            let store = PostgresSessionStore::connect(&db.url).await.unwrap();
            contract::run(&store, Some(&tamper(store.pool().clone()))).await;
            // The 10,000-session list, after clearing the contract's sessions.
            sqlx::query("TRUNCATE mux_sessions, mux_session_records")
                .execute(store.pool())
                .await
                .unwrap();
            contract::many_sessions_page_through(&store, 10_000).await;
            store.close().await;
        });
    }

    #[test]
    fn a_postgres_database_reconnects_with_everything_and_refuses_a_newer_schema() {
        runtime().block_on(async {
            let db = TestDatabase::new().await;
            let store = PostgresSessionStore::connect(&db.url).await.unwrap();
            let meta = mux_orchestrator::session::SessionMeta::new();
            store.create(&meta).await.unwrap();
            store.close().await;
            let store = PostgresSessionStore::connect(&db.url).await.unwrap();
            assert_eq!(store.load(&meta.id).await.unwrap().meta, meta);
            sqlx::query("INSERT INTO mux_schema_versions (version) VALUES (999)")
                .execute(store.pool())
                .await
                .unwrap();
            store.close().await;
            let reopened = PostgresSessionStore::connect(&db.url).await;
            assert!(
                matches!(reopened, Err(SessionError::SchemaTooNew { found: 999, .. })),
                "{reopened:?}"
            );
        });
    }
}
