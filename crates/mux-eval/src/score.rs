//! An evaluator's verdict on one attempt: a score in 0..=1, pass or fail, and why.

use serde::{Deserialize, Serialize};

/// An evaluator's verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Score {
    /// The score, in 0..=1 (clamped; NaN reads as 0).
    pub value: f64,
    /// Whether the attempt passes this evaluator.
    pub passed: bool,
    /// Why: what matched, what was missing, what the judge said.
    #[serde(default)]
    pub reasons: Vec<String>,
}

impl Score {
    /// A score of `value` (clamped to 0..=1; NaN is 0) with its verdict.
    pub fn new(value: f64, passed: bool) -> Self {
        let value = if value.is_nan() {
            0.0
        } else {
            value.clamp(0.0, 1.0)
        };
        Self {
            value,
            passed,
            reasons: Vec::new(),
        }
    }

    /// A pass with score 1.
    pub fn pass() -> Self {
        Self::new(1.0, true)
    }

    /// A fail with score 0 and `reason`.
    pub fn fail(reason: impl Into<String>) -> Self {
        Self::new(0.0, false).reason(reason)
    }

    /// A pass (score 1) when `ok`, else a fail (score 0); `reason` either way.
    pub fn check(ok: bool, reason: impl Into<String>) -> Self {
        Self::new(if ok { 1.0 } else { 0.0 }, ok).reason(reason)
    }

    /// Adds a reason.
    pub fn reason(mut self, reason: impl Into<String>) -> Self {
        self.reasons.push(reason.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_are_clamped_and_nan_is_zero() {
        assert_eq!(Score::new(1.5, true).value, 1.0);
        assert_eq!(Score::new(-2.0, false).value, 0.0);
        assert_eq!(Score::new(f64::NAN, false).value, 0.0);
    }
}
