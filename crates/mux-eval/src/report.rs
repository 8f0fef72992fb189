//! A report: every case's attempts, scores and statistics, saved and read as JSON.

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::EvalError;
use crate::record::RunRecord;
use crate::score::Score;

/// One evaluator's verdict on one attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The evaluator's name.
    pub evaluator: String,
    /// Its score.
    #[serde(flatten)]
    pub score: Score,
    /// Set when the evaluator could not decide (its error); the verdict is then a fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One attempt of a case.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// What the run produced.
    pub run: RunRecord,
    /// Each evaluator's verdict.
    pub verdicts: Vec<Verdict>,
    /// Whether the run finished without a failure and every evaluator passed.
    pub passed: bool,
    /// The mean of the evaluators' scores (0 when the run failed; 1 with no evaluator).
    pub score: f64,
}

impl Attempt {
    /// An attempt from its run and verdicts.
    pub fn new(run: RunRecord, verdicts: Vec<Verdict>) -> Self {
        let failed = run.failure.is_some();
        let passed = !failed && verdicts.iter().all(|v| v.score.passed);
        let score = if failed {
            0.0
        } else if verdicts.is_empty() {
            1.0
        } else {
            verdicts.iter().map(|v| v.score.value).sum::<f64>() / verdicts.len() as f64
        };
        Self {
            run,
            verdicts,
            passed,
            score,
        }
    }

    /// Why the attempt failed, in short: the run's failure, else the first failed verdict.
    pub fn first_problem(&self) -> Option<String> {
        if let Some(failure) = &self.run.failure {
            return Some(format!("{}: {}", failure.kind, failure.message));
        }
        self.verdicts.iter().find(|v| !v.score.passed).map(|v| {
            let why = v
                .error
                .clone()
                .or_else(|| v.score.reasons.first().cloned())
                .unwrap_or_default();
            format!("{}: {why}", v.evaluator)
        })
    }
}

/// When a case with several attempts passes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PassRule {
    /// Every attempt passes.
    #[default]
    All,
    /// At least one attempt passes (pass@k with k the number of attempts).
    Any,
    /// At least this share of attempts pass.
    Rate(f64),
}

/// A case's statistics over its attempts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseStats {
    /// Whether the case passes under the run's [`PassRule`].
    pub passed: bool,
    /// Attempts made.
    pub attempts: u32,
    /// Attempts that passed.
    pub passes: u32,
    /// The share of attempts that passed.
    pub pass_rate: f64,
    /// The mean attempt score.
    pub mean_score: f64,
    /// The standard deviation of the attempt scores (0 with one attempt).
    pub spread: f64,
}

impl CaseStats {
    /// The statistics of `attempts` under `rule`.
    pub fn of(attempts: &[Attempt], rule: PassRule) -> Self {
        let n = attempts.len();
        let passes = attempts.iter().filter(|a| a.passed).count();
        let (pass_rate, mean_score, spread) = if n == 0 {
            (0.0, 0.0, 0.0)
        } else {
            let mean = attempts.iter().map(|a| a.score).sum::<f64>() / n as f64;
            let var = attempts
                .iter()
                .map(|a| (a.score - mean).powi(2))
                .sum::<f64>()
                / n as f64;
            (passes as f64 / n as f64, mean, var.sqrt())
        };
        let passed = n > 0
            && match rule {
                PassRule::All => passes == n,
                PassRule::Any => passes > 0,
                PassRule::Rate(rate) => pass_rate >= rate,
            };
        Self {
            passed,
            attempts: u32::try_from(n).unwrap_or(u32::MAX),
            passes: u32::try_from(passes).unwrap_or(u32::MAX),
            pass_rate,
            mean_score,
            spread,
        }
    }

    /// The unbiased estimate of pass@`k` from these attempts (the chance that at least one
    /// of `k` attempts drawn from them passes); `None` when `k` is 0 or over the attempts.
    pub fn pass_at(&self, k: u32) -> Option<f64> {
        pass_at_k(self.attempts, self.passes, k)
    }
}

/// The unbiased pass@k estimator over `n` attempts of which `c` passed:
/// 1 − C(n−c, k) / C(n, k). `None` when `k` is 0 or larger than `n`.
pub fn pass_at_k(n: u32, c: u32, k: u32) -> Option<f64> {
    if k == 0 || k > n || c > n {
        return None;
    }
    if n - c < k {
        return Some(1.0);
    }
    // C(n−c, k) / C(n, k) = Π_{i=0}^{k−1} (n−c−i) / (n−i)
    let miss = (0..k).fold(1.0, |acc, i| acc * f64::from(n - c - i) / f64::from(n - i));
    Some(1.0 - miss)
}

/// One case in a report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseReport {
    /// The case's name.
    pub name: String,
    /// The input, as text.
    pub input: String,
    /// The case's tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The expected output, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_output: Option<Value>,
    /// Every attempt, in order.
    pub attempts: Vec<Attempt>,
    /// Statistics over the attempts.
    pub stats: CaseStats,
}

impl CaseReport {
    /// Whether the case passed.
    pub fn passed(&self) -> bool {
        self.stats.passed
    }

    /// Why the case failed, in short (from its first failed attempt).
    pub fn first_problem(&self) -> Option<String> {
        self.attempts
            .iter()
            .find(|a| !a.passed)
            .and_then(Attempt::first_problem)
    }
}

/// The whole run of a dataset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The dataset's name.
    pub name: String,
    /// Attempts per case.
    pub repeats: u32,
    /// The rule cases passed by.
    pub rule: PassRule,
    /// Every case, in dataset order.
    pub cases: Vec<CaseReport>,
    /// Wall-clock time of the whole run, in milliseconds.
    pub duration_ms: u64,
}

/// A report's totals.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Cases.
    pub cases: usize,
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// The mean of the cases' mean scores.
    pub mean_score: f64,
    /// Tokens over every attempt.
    pub tokens: u64,
}

impl Report {
    /// Whether every case passed.
    pub fn passed(&self) -> bool {
        self.cases.iter().all(CaseReport::passed)
    }

    /// The cases that failed.
    pub fn failures(&self) -> impl Iterator<Item = &CaseReport> {
        self.cases.iter().filter(|c| !c.passed())
    }

    /// The case named `name`.
    pub fn case(&self, name: &str) -> Option<&CaseReport> {
        self.cases.iter().find(|c| c.name == name)
    }

    /// The totals.
    pub fn totals(&self) -> Totals {
        let passed = self.cases.iter().filter(|c| c.passed()).count();
        let mean_score = if self.cases.is_empty() {
            0.0
        } else {
            self.cases.iter().map(|c| c.stats.mean_score).sum::<f64>() / self.cases.len() as f64
        };
        let tokens = self
            .cases
            .iter()
            .flat_map(|c| &c.attempts)
            .map(|a| a.run.total_tokens())
            .sum();
        Totals {
            cases: self.cases.len(),
            passed,
            failed: self.cases.len() - passed,
            mean_score,
            tokens,
        }
    }

    /// The report as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self)
            .unwrap_or_else(|err| format!("{{\"error\": {:?}}}", err.to_string()))
    }

    /// Writes the report as JSON.
    pub fn save_json(&self, path: impl AsRef<Path>) -> Result<(), EvalError> {
        let path = path.as_ref();
        std::fs::write(path, self.to_json()).map_err(|source| EvalError::Io {
            operation: "writing the report",
            path: path.to_owned(),
            source,
        })
    }

    /// Reads a report written by [`save_json`](Self::save_json).
    pub fn load_json(path: impl AsRef<Path>) -> Result<Self, EvalError> {
        let path = path.as_ref();
        let text = crate::dataset::read_bounded(path, "reading the report")?;
        serde_json::from_str(&text).map_err(|err| EvalError::Parse {
            path: path.to_owned(),
            message: err.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_at_k_matches_the_closed_form() {
        assert_eq!(pass_at_k(5, 0, 1), Some(0.0));
        assert_eq!(pass_at_k(5, 5, 3), Some(1.0));
        assert!(pass_at_k(4, 1, 1).is_some_and(|p| (p - 0.25).abs() < 1e-12));
        // 1 − C(3,2)/C(4,2) = 1 − 3/6
        assert!(pass_at_k(4, 1, 2).is_some_and(|p| (p - 0.5).abs() < 1e-12));
        assert_eq!(pass_at_k(3, 1, 4), None);
        assert_eq!(pass_at_k(3, 1, 0), None);
    }
}
