//! The connection pools of the PostgreSQL stores.

use std::time::Duration;

use std::str::FromStr as _;

use sqlx::Connection as _;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

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

/// The connection options of `url`, read as libpq reads it: `postgres://app@/mux?host=/dir`
/// (a user and no host: the socket the query names, or the default one) is a URL libpq
/// takes and the parser under sqlx refuses (`EmptyHost`); it is read without its user and
/// password, which are set after (percent-decoded).
pub(crate) fn connect_options(url: &str) -> Result<PgConnectOptions, sqlx::Error> {
    if let Some((scheme @ ("postgres" | "postgresql"), rest)) = url.split_once("://") {
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if let Some((userinfo, "")) = authority.rsplit_once('@') {
            let mut options = PgConnectOptions::from_str(&format!("{scheme}://{tail}"))?;
            let (user, password) = match userinfo.split_once(':') {
                Some((user, password)) => (user, Some(password)),
                None => (userinfo, None),
            };
            if !user.is_empty() {
                options = options.username(&percent_decoded(user));
            }
            if let Some(password) = password {
                options = options.password(&percent_decoded(password));
            }
            return Ok(options);
        }
    }
    PgConnectOptions::from_str(url)
}

/// `text` with each `%XX` replaced by its byte (a `%` not followed by two hex digits kept).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_user_without_a_host_is_read_as_libpq_reads_it() {
        let options = connect_options("postgres://app%2Dx:p%40ss@/mux?host=/tmp/pg-sock").unwrap();
        assert_eq!(options.get_username(), "app-x");
        assert_eq!(options.get_database(), Some("mux"));
        assert_eq!(
            options.get_socket(),
            Some(&std::path::PathBuf::from("/tmp/pg-sock"))
        );
        let user_only = connect_options("postgresql://app@/mux").unwrap();
        assert_eq!(user_only.get_username(), "app");
        // The usual forms are read as before.
        let tcp = connect_options("postgres://app:secret@db.internal:5433/mux").unwrap();
        assert_eq!(
            (tcp.get_host(), tcp.get_port(), tcp.get_username()),
            ("db.internal", 5433, "app")
        );
        assert_eq!(percent_decoded("100%"), "100%");
        assert_eq!(percent_decoded("%zz%41"), "%zzA");
    }
}
