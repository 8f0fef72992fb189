//! How long a SQL store's statement may go unanswered: a connection that hangs (a network that
//! drops packets without a reset, a server process stopped) fails the call instead of holding
//! its caller forever. Reads and the writes that a retry repeats harmlessly (a lease renewed,
//! a run claimed, a cancel asked) are bounded here; the PostgreSQL group commit bounds its own
//! commits and settles them (docs/sessions.md, "Unanswered commits").

use std::future::Future;
use std::time::Duration;

/// How long a statement may go unanswered when the connection does not bound statements.
pub(crate) const UNBOUNDED: Duration = Duration::from_secs(60);

/// How long a statement on a connection whose `statement_timeout` is `statement_timeout` may
/// go unanswered: twice that (PostgreSQL gives the statement up after one), or [`UNBOUNDED`]
/// when it is zero (statements not bounded).
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn answer_within(statement_timeout: Duration) -> Duration {
    if statement_timeout.is_zero() {
        UNBOUNDED
    } else {
        statement_timeout * 2
    }
}

/// The database did not answer a statement within this time.
#[derive(Debug, thiserror::Error)]
#[error("the database did not answer within {0:?}")]
pub(crate) struct Unanswered(pub(crate) Duration);

/// `call`'s result, or [`Unanswered`] when it has none within `within`.
pub(crate) async fn bounded<T, E: From<Unanswered>>(
    within: Duration,
    call: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    tokio::time::timeout(within, call)
        .await
        .unwrap_or_else(|_| Err(Unanswered(within).into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twice_the_statement_timeout_or_a_minute_without_one() {
        assert_eq!(
            answer_within(Duration::from_millis(1_500)),
            Duration::from_secs(3)
        );
        assert_eq!(answer_within(Duration::ZERO), UNBOUNDED);
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_with_no_answer_fails_unanswered() {
        #[derive(Debug)]
        struct Failed(String);
        impl From<Unanswered> for Failed {
            fn from(err: Unanswered) -> Self {
                Failed(err.to_string())
            }
        }
        let hung = bounded::<(), Failed>(Duration::from_secs(2), std::future::pending());
        let err = hung.await.unwrap_err();
        assert!(err.0.contains("did not answer within 2s"), "{}", err.0);
        let answered = bounded::<_, Failed>(Duration::from_secs(2), async { Ok(7) });
        assert_eq!(answered.await.unwrap(), 7);
    }
}
