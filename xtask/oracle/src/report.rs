//! Counting and printing: corpus size, verdicts, runs, and disagreements grouped by the
//! generator's family and the finding's kind, with examples.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use mux_permission::Verdict;

use crate::compare::{Finding, Kind, primary};
use crate::generate::Family;

/// One executed command and what it did that was not predicted.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// The generator family.
    pub(crate) family: Family,
    /// The command.
    pub(crate) command: String,
    /// Its findings; empty when it agreed with the prediction.
    pub(crate) findings: Vec<Finding>,
    /// The time limit ended it.
    pub(crate) timed_out: bool,
}

#[derive(Debug, Default)]
struct Counts {
    corpus: usize,
    allowed: usize,
    asked: usize,
    denied: usize,
    executed: usize,
    timed_out: usize,
    disagreeing: usize,
}

/// The oracle's tallies.
#[derive(Debug)]
pub(crate) struct Report {
    seed: u64,
    corpus: usize,
    counts: BTreeMap<Family, Counts>,
    disagreements: Vec<Outcome>,
    timed_out: Vec<String>,
}

/// The rendered report: a summary for the terminal, and the full list for a file.
pub(crate) struct Rendered {
    /// Counts, and up to three examples per group.
    pub(crate) summary: String,
    /// The summary plus every disagreeing command with all its findings.
    pub(crate) full: String,
}

impl Report {
    /// An empty report over a corpus of `corpus` commands.
    pub(crate) fn new(seed: u64, corpus: usize) -> Self {
        Self {
            seed,
            corpus,
            counts: BTreeMap::new(),
            disagreements: Vec::new(),
            timed_out: Vec::new(),
        }
    }

    /// Counts a verdict.
    pub(crate) fn decided(&mut self, family: Family, verdict: Verdict) {
        let counts = self.counts.entry(family).or_default();
        counts.corpus += 1;
        match verdict {
            Verdict::Allow => counts.allowed += 1,
            Verdict::Ask => counts.asked += 1,
            _ => counts.denied += 1,
        }
    }

    /// Counts a run.
    pub(crate) fn executed(&mut self, outcome: Outcome) {
        let counts = self.counts.entry(outcome.family).or_default();
        counts.executed += 1;
        counts.timed_out += usize::from(outcome.timed_out);
        if outcome.timed_out {
            self.timed_out.push(outcome.command.clone());
        }
        if !outcome.findings.is_empty() {
            counts.disagreeing += 1;
            self.disagreements.push(outcome);
        }
    }

    /// How many executed commands disagreed with the prediction.
    pub(crate) fn disagreements(&self) -> usize {
        self.disagreements.len()
    }

    /// Renders the report.
    pub(crate) fn render(&self, slice: bool, elapsed: Duration, errors: &[String]) -> Rendered {
        let total = |f: fn(&Counts) -> usize| self.counts.values().map(f).sum::<usize>();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "\noracle ({}, seed {}): corpus {} distinct commands; allowed {}, asked {}, denied {}; \
             executed {} ({} timed out); disagreements {} ({:.1?})",
            if slice { "slice" } else { "full corpus" },
            self.seed,
            self.corpus,
            total(|c| c.allowed),
            total(|c| c.asked),
            total(|c| c.denied),
            total(|c| c.executed),
            total(|c| c.timed_out),
            self.disagreements.len(),
            elapsed,
        );
        let _ = writeln!(
            s,
            "\n{:<44} {:>7} {:>7} {:>8} {:>9}",
            "family", "corpus", "allowed", "executed", "disagree"
        );
        for family in Family::ALL {
            let Some(c) = self.counts.get(&family) else {
                continue;
            };
            let _ = writeln!(
                s,
                "{:<44} {:>7} {:>7} {:>8} {:>9}",
                family.label(),
                c.corpus,
                c.allowed,
                c.executed,
                c.disagreeing
            );
        }
        let mut full = s.clone();
        if !self.disagreements.is_empty() {
            let _ = writeln!(s, "\ndisagreements by family and kind (first 3 of each):");
            let _ = writeln!(full, "\nevery disagreement:");
        }
        for family in Family::ALL {
            for kind in Kind::ALL {
                let group: Vec<&Outcome> = self
                    .disagreements
                    .iter()
                    .filter(|o| o.family == family && primary(&o.findings) == Some(kind))
                    .collect();
                if group.is_empty() {
                    continue;
                }
                let heading = format!("\n[{}] {}: {}", family.label(), kind.label(), group.len());
                let _ = writeln!(s, "{heading}");
                let _ = writeln!(full, "{heading}");
                for (i, outcome) in group.iter().enumerate() {
                    let first = outcome
                        .findings
                        .iter()
                        .find(|f| f.kind == kind)
                        .map(ToString::to_string)
                        .unwrap_or_default();
                    if i < 3 {
                        let _ = writeln!(s, "  {:?}\n      {first}", outcome.command);
                    }
                    let _ = writeln!(full, "  {:?}", outcome.command);
                    for finding in &outcome.findings {
                        let _ = writeln!(full, "      {finding}");
                    }
                }
            }
        }
        if !self.timed_out.is_empty() {
            let _ = writeln!(full, "\ntimed out (killed; not a disagreement by itself):");
            for command in &self.timed_out {
                let _ = writeln!(full, "  {command:?}");
            }
        }
        if !errors.is_empty() {
            let _ = writeln!(s, "\n{} runs failed to start or be read:", errors.len());
            for error in errors.iter().take(5) {
                let _ = writeln!(s, "  {error}");
            }
            for error in errors {
                let _ = writeln!(full, "run error: {error}");
            }
        }
        Rendered { summary: s, full }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disagreements_are_counted_and_grouped_by_family_and_kind() {
        let mut report = Report::new(23, 3);
        report.decided(Family::Sed, Verdict::Allow);
        report.decided(Family::Sed, Verdict::Allow);
        report.decided(Family::Runner, Verdict::Ask);
        report.executed(Outcome {
            family: Family::Sed,
            command: "sed ':a e ./canary' README.md".into(),
            findings: vec![Finding {
                kind: Kind::Canary,
                detail: "marker: ran: ./canary".into(),
            }],
            timed_out: false,
        });
        report.executed(Outcome {
            family: Family::Sed,
            command: "sed p README.md".into(),
            findings: vec![],
            timed_out: true,
        });
        assert_eq!(report.disagreements(), 1);
        let text = report.render(true, Duration::from_secs(1), &[]);
        assert!(text.summary.contains("corpus 3 distinct commands; allowed 2, asked 1, denied 0; executed 2 (1 timed out); disagreements 1"), "{}", text.summary);
        assert!(
            text.summary
                .contains("[sed scripts (class 3)] canary ran: 1"),
            "{}",
            text.summary
        );
        assert!(text.full.contains("\"sed p README.md\""), "{}", text.full);
    }
}
