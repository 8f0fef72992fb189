//! The reconnect policy: none, immediate, or exponential backoff with jitter.

use std::time::Duration;

/// How the coordinator retries a server whose connection was lost or failed.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ReconnectPolicy {
    /// Never reconnect on its own; an explicit `reconnect` makes one attempt.
    None,
    /// Up to `max_attempts` attempts, one right after the other.
    Immediate {
        /// The most attempts.
        max_attempts: u32,
    },
    /// Up to `max_attempts` attempts, waiting `initial`, then twice that, and so on up to
    /// `max`, each wait varied by ±`jitter` (a fraction, 0.0 to 1.0).
    Backoff {
        /// The most attempts.
        max_attempts: u32,
        /// The first wait.
        initial: Duration,
        /// The longest wait.
        max: Duration,
        /// How much each wait varies, as a fraction of it.
        jitter: f64,
    },
}

impl Default for ReconnectPolicy {
    /// Five attempts, waiting 500 ms doubling up to 30 s, with 20 % jitter.
    fn default() -> Self {
        Self::Backoff {
            max_attempts: 5,
            initial: Duration::from_millis(500),
            max: Duration::from_secs(30),
            jitter: 0.2,
        }
    }
}

impl ReconnectPolicy {
    /// The most attempts the policy makes.
    pub fn max_attempts(&self) -> u32 {
        match self {
            Self::None => 0,
            Self::Immediate { max_attempts } | Self::Backoff { max_attempts, .. } => *max_attempts,
        }
    }

    /// The wait before attempt `attempt` (counted from 1).
    ///
    /// ```
    /// use std::time::Duration;
    /// use mux_mcp::ReconnectPolicy;
    /// let policy = ReconnectPolicy::Backoff {
    ///     max_attempts: 5, initial: Duration::from_secs(1), max: Duration::from_secs(3), jitter: 0.0,
    /// };
    /// assert_eq!(policy.delay(1), Duration::from_secs(1));
    /// assert_eq!(policy.delay(2), Duration::from_secs(2));
    /// assert_eq!(policy.delay(3), Duration::from_secs(3));
    /// ```
    pub fn delay(&self, attempt: u32) -> Duration {
        match self {
            Self::None | Self::Immediate { .. } => Duration::ZERO,
            Self::Backoff {
                initial,
                max,
                jitter,
                ..
            } => {
                let doublings = attempt.saturating_sub(1).min(30);
                let base = initial.saturating_mul(1u32 << doublings).min(*max);
                let jitter = jitter.clamp(0.0, 1.0);
                let factor = 1.0 + jitter * (2.0 * random_unit() - 1.0);
                base.mul_f64(factor.max(0.0))
            }
        }
    }
}

/// A number in [0, 1) from the standard library's randomly keyed hasher.
fn random_unit() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_within_the_jitter() {
        let policy = ReconnectPolicy::Backoff {
            max_attempts: 10,
            initial: Duration::from_millis(100),
            max: Duration::from_millis(1000),
            jitter: 0.5,
        };
        for (attempt, base) in [
            (1, 100.0),
            (2, 200.0),
            (3, 400.0),
            (4, 800.0),
            (5, 1000.0),
            (9, 1000.0),
        ] {
            for _ in 0..50 {
                let ms = policy.delay(attempt).as_secs_f64() * 1000.0;
                assert!(
                    ms >= base * 0.5 - 0.001 && ms <= base * 1.5 + 0.001,
                    "{attempt}: {ms}"
                );
            }
        }
        assert_eq!(ReconnectPolicy::None.max_attempts(), 0);
        assert_eq!(
            ReconnectPolicy::Immediate { max_attempts: 3 }.delay(2),
            Duration::ZERO
        );
    }
}
