//! One self-contained HTML file per report: the totals, then every case (failures first,
//! opened), each with its input, expected output, and per attempt the verdicts and the
//! transcript with its tool calls.
//!
//! Case text and model output are hostile input: every piece of text goes through
//! [`escape`], the page carries no script at all, and its Content-Security-Policy forbids
//! scripts, so a `<script>` in a model's reply is shown as text and never runs.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::error::EvalError;
use crate::record::Entry;
use crate::report::{Attempt, CaseReport, Report};
use crate::table::ordered;

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#222}\
h1{font-size:1.4em}table{border-collapse:collapse}td,th{padding:2px 8px;text-align:left;\
vertical-align:top}details{border:1px solid #ccc;border-radius:4px;margin:.4em 0;padding:.3em .6em}\
details.fail{border-color:#c33;background:#fff6f6}summary{cursor:pointer}\
.badge{font-weight:bold;display:inline-block;min-width:3em}.fail .badge{color:#c33}\
.pass .badge{color:#2a7}pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f6;\
padding:.4em;margin:.2em 0}.entry{margin:.2em 0}.who{font-weight:bold;color:#555}\
.no{color:#c33}.yes{color:#2a7}";

/// Escapes `text` for HTML text and double- or single-quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\0' => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// The HTML page of `report`.
pub fn render(report: &Report) -> String {
    let totals = report.totals();
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
<title>eval {name}</title><style>{STYLE}</style></head><body>\
<h1>eval {name}</h1><p id=\"totals\">{passed}/{cases} cases passed · {failed} failed · \
mean score {mean:.2} · {repeats} attempt(s) per case · {tokens} tokens · {ms} ms</p>",
        name = escape(&report.name),
        passed = totals.passed,
        cases = totals.cases,
        failed = totals.failed,
        mean = totals.mean_score,
        repeats = report.repeats,
        tokens = totals.tokens,
        ms = report.duration_ms,
    );
    out.push_str("<main id=\"cases\">");
    for (index, case) in ordered(report).into_iter().enumerate() {
        case_html(&mut out, index, case);
    }
    out.push_str("</main></body></html>\n");
    out
}

/// Writes the HTML page of `report` to `path`.
pub fn save(report: &Report, path: impl AsRef<Path>) -> Result<(), EvalError> {
    let path = path.as_ref();
    std::fs::write(path, render(report)).map_err(|source| EvalError::Io {
        operation: "writing the HTML report",
        path: path.to_owned(),
        source,
    })
}

fn case_html(out: &mut String, index: usize, case: &CaseReport) {
    let (class, badge, open) = if case.passed() {
        ("pass", "PASS", "")
    } else {
        ("fail", "FAIL", " open")
    };
    let problem = case
        .first_problem()
        .map(|p| format!(" — {}", escape(&p)))
        .unwrap_or_default();
    let _ = write!(
        out,
        "<details class=\"case {class}\" id=\"case-{index}\" data-status=\"{class}\"{open}>\
<summary><span class=\"badge\">{badge}</span> <span class=\"name\">{name}</span> · score {score:.2} \
· {passes}/{attempts} passed{problem}</summary>",
        name = escape(&case.name),
        score = case.stats.mean_score,
        passes = case.stats.passes,
        attempts = case.stats.attempts,
    );
    if !case.tags.is_empty() {
        let _ = write!(out, "<p>tags: {}</p>", escape(&case.tags.join(", ")));
    }
    let _ = write!(
        out,
        "<p class=\"who\">input</p><pre>{}</pre>",
        escape(&case.input)
    );
    if let Some(expected) = &case.expected_output {
        let _ = write!(
            out,
            "<p class=\"who\">expected</p><pre>{}</pre>",
            escape(&show(expected))
        );
    }
    for (number, attempt) in case.attempts.iter().enumerate() {
        attempt_html(out, number + 1, attempt);
    }
    out.push_str("</details>");
}

fn attempt_html(out: &mut String, number: usize, attempt: &Attempt) {
    let status = if attempt.passed { "yes" } else { "no" };
    let run = &attempt.run;
    let _ = write!(
        out,
        "<h3>attempt {number}: <span class=\"{status}\">{verdict}</span>, score {score:.2}, \
{calls} model call(s), {tools} tool call(s), {tokens} tokens, {ms} ms</h3>",
        verdict = if attempt.passed { "passed" } else { "failed" },
        score = attempt.score,
        calls = run.model_calls,
        tools = run.tool_calls.len(),
        tokens = run.total_tokens(),
        ms = run.duration_ms,
    );
    if let Some(failure) = &run.failure {
        let _ = write!(
            out,
            "<p class=\"no\">the run failed ({})</p><pre>{}</pre>",
            escape(&failure.kind),
            escape(&failure.message)
        );
    }
    out.push_str(
        "<table><tr><th>evaluator</th><th>score</th><th>verdict</th><th>reasons</th></tr>",
    );
    for verdict in &attempt.verdicts {
        let mut reasons = verdict.score.reasons.join("; ");
        if let Some(error) = &verdict.error {
            reasons = format!("error: {error}");
        }
        let (class, word) = if verdict.score.passed {
            ("yes", "pass")
        } else {
            ("no", "fail")
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{:.2}</td><td class=\"{class}\">{word}</td><td>{}</td></tr>",
            escape(&verdict.evaluator),
            verdict.score.value,
            escape(&reasons)
        );
    }
    out.push_str("</table><div class=\"transcript\">");
    for entry in &run.transcript {
        entry_html(out, entry);
    }
    let _ = write!(
        out,
        "</div><p class=\"who\">output</p><pre class=\"output\">{}</pre>",
        escape(&run.output)
    );
}

fn entry_html(out: &mut String, entry: &Entry) {
    let (who, body) = match entry {
        Entry::User { text } => ("user".to_owned(), text.clone()),
        Entry::Assistant { text } => ("assistant".to_owned(), text.clone()),
        Entry::ToolCall { name, input } => (format!("call {name}"), show(input)),
        Entry::ToolResult {
            name,
            output,
            is_error,
        } => {
            let what = if *is_error { "error from" } else { "result of" };
            (format!("{what} {name}"), output.clone())
        }
        Entry::Approval { tool, allowed } => {
            let answer = if *allowed { "allowed" } else { "denied" };
            (format!("approval for {tool}: {answer}"), String::new())
        }
        Entry::Error { kind, message } => (format!("error ({kind})"), message.clone()),
    };
    let _ = write!(
        out,
        "<div class=\"entry\"><span class=\"who\">{}</span>",
        escape(&who)
    );
    if !body.is_empty() {
        let _ = write!(out, "<pre>{}</pre>", escape(&body));
    }
    out.push_str("</div>");
}

fn show(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_text_and_both_quotes() {
        assert_eq!(
            escape("<script>alert('x')</script>&\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;"
        );
    }
}
