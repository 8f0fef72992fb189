//! The comparison of two reports, case by case: regressions (passed, now fails),
//! improvements (failed, now passes), score moves beyond a tolerance, cases added or removed.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::report::{CaseReport, Report};
use crate::table::clean;

/// How a case changed between two reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// It passed and now fails.
    Regression,
    /// It failed and now passes.
    Improvement,
    /// Same verdict, a lower mean score (beyond the tolerance).
    ScoreDown,
    /// Same verdict, a higher mean score (beyond the tolerance).
    ScoreUp,
    /// Same verdict and score.
    Unchanged,
    /// Only in the candidate.
    Added,
    /// Only in the baseline.
    Removed,
}

/// One case's side of a comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Side {
    /// Whether it passed.
    pub passed: bool,
    /// Its mean score.
    pub score: f64,
}

/// One case in a comparison.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CaseChange {
    /// The case's name.
    pub name: String,
    /// How it changed.
    pub change: Change,
    /// In the baseline.
    pub before: Option<Side>,
    /// In the candidate.
    pub after: Option<Side>,
    /// Why it fails now, for a regression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// Two reports compared case by case (by case name).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline's name.
    pub baseline: String,
    /// The candidate's name.
    pub candidate: String,
    /// Every case: the candidate's in its order, then those only in the baseline.
    pub cases: Vec<CaseChange>,
}

fn side(case: &CaseReport) -> Side {
    Side {
        passed: case.passed(),
        score: case.stats.mean_score,
    }
}

impl Comparison {
    /// Compares `candidate` with `baseline`; score moves of `tolerance` or less are
    /// unchanged.
    pub fn of(baseline: &Report, candidate: &Report, tolerance: f64) -> Self {
        let mut cases = Vec::new();
        for after in &candidate.cases {
            let Some(before) = baseline.case(&after.name) else {
                cases.push(CaseChange {
                    name: after.name.clone(),
                    change: Change::Added,
                    before: None,
                    after: Some(side(after)),
                    why: None,
                });
                continue;
            };
            let delta = after.stats.mean_score - before.stats.mean_score;
            let change = match (before.passed(), after.passed()) {
                (true, false) => Change::Regression,
                (false, true) => Change::Improvement,
                _ if delta < -tolerance => Change::ScoreDown,
                _ if delta > tolerance => Change::ScoreUp,
                _ => Change::Unchanged,
            };
            cases.push(CaseChange {
                name: after.name.clone(),
                change,
                before: Some(side(before)),
                after: Some(side(after)),
                why: (change == Change::Regression)
                    .then(|| after.first_problem())
                    .flatten(),
            });
        }
        for before in &baseline.cases {
            if candidate.case(&before.name).is_none() {
                cases.push(CaseChange {
                    name: before.name.clone(),
                    change: Change::Removed,
                    before: Some(side(before)),
                    after: None,
                    why: None,
                });
            }
        }
        Self {
            baseline: baseline.name.clone(),
            candidate: candidate.name.clone(),
            cases,
        }
    }

    /// The cases with this change.
    pub fn with(&self, change: Change) -> impl Iterator<Item = &CaseChange> {
        self.cases.iter().filter(move |c| c.change == change)
    }

    /// Whether any case regressed.
    pub fn has_regressions(&self) -> bool {
        self.with(Change::Regression).next().is_some()
    }

    /// The comparison as text: regressions, then improvements, then score moves and the
    /// cases added or removed; unchanged cases are counted.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "compare {} → {}",
            clean(&self.baseline, 60),
            clean(&self.candidate, 60)
        );
        let groups = [
            (Change::Regression, "regressions"),
            (Change::Improvement, "improvements"),
            (Change::ScoreDown, "scores down"),
            (Change::ScoreUp, "scores up"),
            (Change::Added, "added"),
            (Change::Removed, "removed"),
        ];
        for (change, title) in groups {
            let cases: Vec<&CaseChange> = self.with(change).collect();
            if cases.is_empty() {
                continue;
            }
            let _ = writeln!(out, "{title} ({}):", cases.len());
            for case in cases {
                let score = |s: &Option<Side>| {
                    s.as_ref()
                        .map_or("-".to_owned(), |s| format!("{:.2}", s.score))
                };
                let _ = write!(
                    out,
                    "  {:<28}  {} → {}",
                    clean(&case.name, 28),
                    score(&case.before),
                    score(&case.after)
                );
                if let Some(why) = &case.why {
                    let _ = write!(out, "  {}", clean(why, 80));
                }
                out.push('\n');
            }
        }
        let unchanged = self.with(Change::Unchanged).count();
        let _ = writeln!(out, "unchanged: {unchanged}");
        out
    }
}
