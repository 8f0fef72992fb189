//! A `tracing` span per attempt, `eval_case`, so an OpenTelemetry backend (through
//! `mux::otel`) shows each case's attempts with their verdicts.

use tracing::Span;
use tracing::field::Empty;

use crate::report::Attempt;

/// The span of one attempt of `case` in `dataset`.
pub(crate) fn case_span(dataset: &str, case: &str, attempt: u32) -> Span {
    tracing::info_span!(
        "eval_case",
        otel.name = %format!("eval_case {case}"),
        eval.dataset = %dataset,
        eval.case = %case,
        eval.attempt = attempt,
        eval.passed = Empty,
        eval.score = Empty,
        error.type = Empty,
    )
}

/// Records how the attempt went on its span.
pub(crate) fn record(span: &Span, attempt: &Attempt) {
    span.record("eval.passed", attempt.passed);
    span.record("eval.score", attempt.score);
    if let Some(failure) = &attempt.run.failure {
        span.record("error.type", failure.kind.as_str());
    }
}
