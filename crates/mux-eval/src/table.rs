//! The terminal table of a report: one line per case, failures first, then the totals.
//! Text from cases and models is hostile: control characters (terminal escapes among them)
//! are shown as `\u{..}`, never written raw.

use std::fmt::Write as _;

use crate::report::{CaseReport, Report};

const NAME: usize = 28;
const PROBLEM: usize = 60;

/// The table of `report`.
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let totals = report.totals();
    let _ = writeln!(
        out,
        "eval {}: {}/{} passed, mean score {:.2}, {} attempt(s) per case, {} ms",
        clean(&report.name, 60),
        totals.passed,
        totals.cases,
        totals.mean_score,
        report.repeats,
        report.duration_ms
    );
    let _ = writeln!(
        out,
        "{:<4}  {:<NAME$}  {:>5}  {:>5}  {:>5}  {:>5}  {:>7}  {:>7}  why",
        "", "case", "score", "pass", "sd", "calls", "tokens", "ms"
    );
    for case in ordered(report) {
        let _ = writeln!(out, "{}", row(case));
    }
    if totals.failed > 0 {
        let _ = writeln!(out, "{} case(s) failed", totals.failed);
    }
    out
}

/// The cases, failures first, each group in dataset order.
pub fn ordered(report: &Report) -> Vec<&CaseReport> {
    let mut cases: Vec<&CaseReport> = report.failures().collect();
    cases.extend(report.cases.iter().filter(|c| c.passed()));
    cases
}

fn row(case: &CaseReport) -> String {
    let status = if case.passed() { "ok" } else { "FAIL" };
    let attempts = case.attempts.len().max(1) as u64;
    let calls: usize = case.attempts.iter().map(|a| a.run.tool_calls.len()).sum();
    let tokens: u64 = case.attempts.iter().map(|a| a.run.total_tokens()).sum();
    let ms: u64 = case.attempts.iter().map(|a| a.run.duration_ms).sum();
    let why = case
        .first_problem()
        .map(|p| clean(&p, PROBLEM))
        .unwrap_or_default();
    format!(
        "{status:<4}  {:<NAME$}  {:>5.2}  {:>5}  {:>5.2}  {:>5}  {:>7}  {:>7}  {why}",
        clean(&case.name, NAME),
        case.stats.mean_score,
        format!("{}/{}", case.stats.passes, case.stats.attempts),
        case.stats.spread,
        calls as u64 / attempts,
        tokens / attempts,
        ms / attempts,
    )
}

/// `text` on one line, at most `max` characters, with every control character escaped.
pub fn clean(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut count = 0;
    for c in text.chars() {
        let piece = if c == '\n' || c == '\r' || c == '\t' {
            " ".to_owned()
        } else if c.is_control() || is_bidi(c) {
            c.escape_unicode().to_string()
        } else {
            c.to_string()
        };
        count += piece.chars().count();
        if count > max {
            out.push('…');
            break;
        }
        out.push_str(&piece);
    }
    out
}

/// Bidirectional overrides and isolates, which reorder what a terminal shows.
fn is_bidi(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_bidi_controls_never_reach_the_terminal() {
        let hostile = "ok\u{1b}[2J\u{1b}]0;pwned\u{7}\u{202E}txt.exe\r\nnext";
        let shown = clean(hostile, 200);
        assert!(
            !shown.chars().any(|c| c.is_control() || is_bidi(c)),
            "{shown:?}"
        );
        assert!(shown.contains("\\u{1b}[2J"));
        assert_eq!(clean("abcdef", 3), "abc…");
    }
}
