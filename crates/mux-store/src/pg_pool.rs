//! The connection pools of the PostgreSQL stores.

use std::time::Duration;

use sqlx::Connection as _;
use sqlx::postgres::PgPoolOptions;

/// How long a pooled connection may sit idle and still be handed out untested. sqlx tests
/// every connection it hands out by default, a round trip before each statement; a connection
/// used moments ago is taken as is, and one idle longer is tested first, so a server that
/// restarted (which takes longer than this) costs no statement a failure.
pub(crate) const TRUSTED_IDLE: Duration = Duration::from_millis(250);

/// A connection's `statement_timeout` in milliseconds (0: not bounded), as SQL.
pub(crate) const STATEMENT_TIMEOUT_MS: &str =
    "(extract(epoch FROM current_setting('statement_timeout')::interval) * 1000)::bigint";

/// [`STATEMENT_TIMEOUT_MS`]'s value as a duration.
pub(crate) fn statement_timeout(ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// How long a statement on `pool` may go unanswered
/// ([`answer_within`](crate::store_bound::answer_within) its connections' `statement_timeout`).
pub(crate) async fn answer_within(pool: &sqlx::PgPool) -> Result<Duration, sqlx::Error> {
    let ms: i64 = sqlx::query_scalar(&format!("SELECT {STATEMENT_TIMEOUT_MS}"))
        .fetch_one(pool)
        .await?;
    Ok(crate::store_bound::answer_within(statement_timeout(ms)))
}

/// Pool options with up to `max` connections and `acquire` to get one.
pub(crate) fn options(max: u32, acquire: Duration) -> PgPoolOptions {
    PgPoolOptions::new()
        .max_connections(max)
        .acquire_timeout(acquire)
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= TRUSTED_IDLE {
                    conn.ping().await?;
                }
                Ok(true)
            })
        })
}
