//! The connection pool of a SQLite store (sessions and runs alike): a connection whose
//! transaction SQLite ended on its own never goes back into the pool.
//!
//! When a write fails for want of space or on an I/O error (`SQLITE_FULL`, `SQLITE_IOERR`),
//! SQLite may roll the whole transaction back by itself; sqlx does not see that, keeps
//! counting the transaction as open, and its `ROLLBACK` then fails. Such a connection refuses
//! every later `BEGIN IMMEDIATE` ("a savepoint statement inside a transaction"), and one that
//! begins plainly opens a savepoint that its rollback leaves open, holding the database's
//! write lock, so every other writer waits out its busy timeout and fails. Before this check,
//! a three-second disk-full blip left a process whose every run waited 30 s and failed, for
//! minutes, until the pool happened to drop the connection.
//!
//! So each connection handed back is checked: SQLite has no transaction open on it (a
//! `BEGIN; ROLLBACK` succeeds), and sqlx counts none. A connection that fails the check is
//! closed (rolling back whatever it held) and the pool opens a fresh one: recovery starts
//! with the next write once the cause is gone.

use futures::future::BoxFuture;
use sqlx::pool::PoolConnectionMetadata;
use sqlx::sqlite::{SqliteConnection, SqlitePoolOptions};
use sqlx::{Connection, Executor};

/// Pool options for a SQLite file: up to `max` connections, none pinged before use (a local
/// file does not go stale), each checked when handed back (see the module's docs).
pub(crate) fn pool_options(max: u32) -> SqlitePoolOptions {
    SqlitePoolOptions::new()
        .max_connections(max)
        .test_before_acquire(false)
        .after_release(checked)
}

/// The pool's check of a connection handed back: whether to keep it.
fn checked(
    conn: &mut SqliteConnection,
    _: PoolConnectionMetadata,
) -> BoxFuture<'_, Result<bool, sqlx::Error>> {
    Box::pin(reusable(conn))
}

/// Whether `conn` holds no transaction, by SQLite's account and by sqlx's: else it is
/// closed. The check runs after any rollback queued for the connection (a transaction
/// dropped unfinished), so only a connection left in a transaction fails it.
async fn reusable(conn: &mut SqliteConnection) -> Result<bool, sqlx::Error> {
    if let Err(err) = conn.execute("BEGIN; ROLLBACK").await {
        tracing::warn!(
            "closing a SQLite connection left in a transaction (the database may have rolled \
             it back after a failed write): {err}"
        );
        return Ok(false);
    }
    if conn.is_in_transaction() {
        tracing::warn!(
            "closing a SQLite connection whose transaction the database ended by itself \
             (after a failed write)"
        );
        return Ok(false);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use sqlx::sqlite::SqliteConnectOptions;

    /// A connection whose transaction SQLite ended by itself is not handed out again: the
    /// next `BEGIN IMMEDIATE` works, and no savepoint holds the write lock.
    #[tokio::test]
    async fn a_connection_left_in_a_transaction_is_closed_not_reused() {
        let dir = tempfile::tempdir().unwrap();
        let options = SqliteConnectOptions::new()
            .filename(dir.path().join("t.db"))
            .create_if_missing(true);
        let pool = pool_options(1).connect_with(options).await.unwrap();
        sqlx::query("CREATE TABLE t (x INTEGER)")
            .execute(&pool)
            .await
            .unwrap();
        {
            // A transaction that SQLite ends by itself while sqlx still counts it (as a
            // failed COMMIT does): sqlx's ROLLBACK on drop then fails.
            let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
            sqlx::raw_sql("INSERT INTO t VALUES (1); ROLLBACK")
                .execute(&mut *tx)
                .await
                .unwrap();
        }
        // Before the check, the one connection came back counting a transaction: `BEGIN
        // IMMEDIATE` failed on it for as long as it lived.
        let mut tx = pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
        sqlx::query("INSERT INTO t VALUES (2)")
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        // A connection that left a transaction open holding the write lock is not reused.
        {
            let mut conn = pool.acquire().await.unwrap();
            sqlx::raw_sql("BEGIN IMMEDIATE; INSERT INTO t VALUES (3)")
                .execute(&mut *conn)
                .await
                .unwrap();
        }
        let other = SqliteConnectOptions::new()
            .filename(dir.path().join("t.db"))
            .busy_timeout(std::time::Duration::from_secs(10));
        let mut other = SqliteConnection::connect_with(&other).await.unwrap();
        let mut conn = pool.acquire().await.unwrap();
        sqlx::query("INSERT INTO t VALUES (4)")
            .execute(&mut *conn)
            .await
            .unwrap();
        drop(conn);
        let rows: Vec<i64> = sqlx::query_scalar("SELECT x FROM t ORDER BY x")
            .fetch_all(&mut other)
            .await
            .unwrap();
        assert_eq!(rows, [2, 4], "the held transaction was rolled back");
    }
}
