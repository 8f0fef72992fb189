//! mux's retry policy on Temporal: a model call's retries become its activity's retry policy,
//! and a model error says whether Temporal may try again, and when.

use std::time::Duration;

use mux_llm::{LlmError, RetryPolicy};
use serde::{Deserialize, Serialize};
use temporalio_common::ActivityError;
use temporalio_common::error::ApplicationFailure;

/// The type name a model error carries on Temporal (`ApplicationFailure`'s type).
pub const MODEL_ERROR: &str = "mux.model";

/// An activity retry policy as it travels in a run's input: mux's [`RetryPolicy`] in
/// Temporal's terms (attempts count the first one; the interval doubles up to a cap).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ActivityRetry {
    /// Attempts in all, the first one included (at least 1).
    pub max_attempts: u32,
    /// The wait before the first retry.
    pub initial_interval_ms: u64,
    /// The longest wait between attempts.
    pub max_interval_ms: u64,
    /// How much each wait grows over the previous one.
    pub backoff_coefficient: f64,
}

impl From<&RetryPolicy> for ActivityRetry {
    /// `max_retries` retries after the first attempt, from `initial_backoff` doubling up to
    /// `max_backoff`. (Jitter is Temporal's to add; a wait the provider asks for travels with
    /// each error, see [`model_failure`].)
    fn from(policy: &RetryPolicy) -> Self {
        Self {
            max_attempts: policy.max_retries.saturating_add(1),
            initial_interval_ms: millis(policy.initial_backoff).max(1),
            max_interval_ms: millis(policy.max_backoff).max(1),
            backoff_coefficient: 2.0,
        }
    }
}

impl Default for ActivityRetry {
    fn default() -> Self {
        Self::from(&RetryPolicy::default())
    }
}

impl ActivityRetry {
    /// Temporal's retry policy.
    pub fn to_temporal(&self) -> temporalio_common::RetryPolicy {
        temporalio_common::RetryPolicy::builder()
            .initial_interval(Duration::from_millis(self.initial_interval_ms.max(1)))
            .backoff_coefficient(self.backoff_coefficient.max(1.0))
            .maximum_interval(Duration::from_millis(
                self.max_interval_ms.max(self.initial_interval_ms).max(1),
            ))
            .maximum_attempts(self.max_attempts.max(1))
            .build()
    }
}

/// Milliseconds of `duration`, saturating.
pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A model error as the model activity's failure: retryable errors (rate limits, overload,
/// server and transport errors) may be tried again, after the wait the provider asked for
/// when it asked; any other (auth, invalid request, context length) fails the run at once.
pub fn model_failure(err: LlmError) -> ActivityError {
    let retryable = err.is_retryable();
    let after = err.retry_after();
    let failure = ApplicationFailure::builder(Box::new(err))
        .type_name(MODEL_ERROR.to_owned())
        .non_retryable(!retryable)
        .maybe_next_retry_delay(after.filter(|_| retryable))
        .build();
    ActivityError::application(failure)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mux_llm::LlmFailure;

    #[test]
    fn mux_retries_become_temporal_attempts() {
        let mux = RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(4),
            ..RetryPolicy::default()
        };
        let retry = ActivityRetry::from(&mux);
        assert_eq!(retry.max_attempts, 4);
        let temporal = retry.to_temporal();
        assert_eq!(temporal.initial_interval(), Duration::from_millis(250));
        assert_eq!(temporal.maximum_interval(), Some(Duration::from_secs(4)));
        assert_eq!(temporal.maximum_attempts(), 4);
        // No retries is one attempt, not Temporal's "unlimited" (0).
        assert_eq!(
            ActivityRetry::from(&RetryPolicy::none())
                .to_temporal()
                .maximum_attempts(),
            1
        );
    }

    #[test]
    fn only_retryable_model_errors_are_tried_again() {
        let limited = LlmError::new(
            "test",
            LlmFailure::RateLimited {
                status: 429,
                message: "slow down".into(),
                retry_after: Some(Duration::from_secs(3)),
            },
        );
        let ActivityError::Application(failure) = model_failure(limited) else {
            panic!("not an application failure");
        };
        assert!(!failure.is_non_retryable());
        assert_eq!(failure.next_retry_delay(), Some(Duration::from_secs(3)));
        assert_eq!(failure.type_name(), Some(MODEL_ERROR));

        let auth = LlmError::new(
            "test",
            LlmFailure::Authentication {
                status: 401,
                message: "bad key".into(),
            },
        );
        let ActivityError::Application(failure) = model_failure(auth) else {
            panic!("not an application failure");
        };
        assert!(failure.is_non_retryable());
        assert!(failure.source_error().to_string().contains("bad key"));
    }
}
