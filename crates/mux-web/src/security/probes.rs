//! A per-principal limit on misses (unknown or foreign thread, run and interrupt ids), so ids
//! cannot be found by trying many.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use super::auth::Principal;

/// How many misses a principal may make per window before its requests get 429.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeLimit {
    /// Misses allowed per window.
    pub misses: u32,
    /// The window.
    pub window: Duration,
}

impl Default for ProbeLimit {
    fn default() -> Self {
        Self {
            misses: 60,
            window: Duration::from_secs(60),
        }
    }
}

/// Miss counts per principal in fixed windows.
#[derive(Debug)]
pub(crate) struct Probes {
    limit: ProbeLimit,
    counts: Mutex<HashMap<Principal, (Instant, u32)>>,
}

impl Probes {
    pub(crate) fn new(limit: ProbeLimit) -> Self {
        Self {
            limit,
            counts: Mutex::default(),
        }
    }

    /// How long `principal` must wait when it has used up its misses.
    pub(crate) fn blocked(&self, principal: &Principal) -> Option<Duration> {
        let counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let (started, count) = counts.get(principal)?;
        let elapsed = started.elapsed();
        (elapsed < self.limit.window && *count >= self.limit.misses)
            .then(|| self.limit.window - elapsed)
    }

    /// Counts a miss for `principal`.
    pub(crate) fn miss(&self, principal: &Principal) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        if counts.len() > 10_000 {
            let window = self.limit.window;
            counts.retain(|_, (started, _)| now.duration_since(*started) < window);
        }
        let entry = counts.entry(principal.clone()).or_insert((now, 0));
        if now.duration_since(entry.0) >= self.limit.window {
            *entry = (now, 0);
        }
        entry.1 = entry.1.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn misses_over_the_limit_block_until_the_window_ends() {
        let probes = Probes::new(ProbeLimit {
            misses: 3,
            window: Duration::from_secs(10),
        });
        let (a, b) = (Principal::new("a"), Principal::new("b"));
        for _ in 0..3 {
            assert_eq!(probes.blocked(&a), None);
            probes.miss(&a);
        }
        assert!(probes.blocked(&a).is_some());
        assert_eq!(probes.blocked(&b), None, "another principal is not blocked");
        tokio::time::advance(Duration::from_secs(11)).await;
        assert_eq!(probes.blocked(&a), None);
    }
}
