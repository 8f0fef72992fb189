//! Trace spans for the compositions, in the OpenTelemetry GenAI conventions: a vote or a
//! decomposition is one `invoke_workflow {name}` span, its agents' `invoke_agent` runs hang
//! under it, and a decomposition's planner runs inside a `plan {planner}` span.

use mux_orchestrator::{Budget, ParentRun, RunLimits};
use tracing::Span;
use tracing::field::Empty;

/// The `invoke_workflow {name}` span of one composition, under the caller's current span.
/// `kind` (`voting`, `decomposition`) goes in `mux.workflow.kind`; `name` is the application's
/// low-cardinality workflow name (`gen_ai.workflow.name`).
pub(crate) fn workflow_span(kind: &'static str, name: &str) -> Span {
    tracing::info_span!(
        "invoke_workflow",
        otel.name = %format!("invoke_workflow {name}"),
        gen_ai.operation.name = "invoke_workflow",
        gen_ai.workflow.name = %name,
        mux.workflow.kind = kind,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// The `plan {planner}` span around a planner's run, under `parent`.
pub(crate) fn plan_span(parent: &Span, planner: &str) -> Span {
    tracing::info_span!(
        parent: parent,
        "plan",
        otel.name = %format!("plan {planner}"),
        gen_ai.operation.name = "plan",
        gen_ai.agent.name = %planner,
        error.type = Empty,
        otel.status_code = Empty,
    )
}

/// Records a failure on `span` as `error.type` (a short, low-cardinality kind).
pub(crate) fn record_error(span: &Span, kind: &'static str) {
    span.record("error.type", kind);
    span.record("otel.status_code", "ERROR");
}

/// What an agent of the composition runs under: the composition's span, and a budget with no
/// limits of its own (each agent keeps its definition's limits).
pub(crate) fn under(span: &Span) -> ParentRun {
    ParentRun {
        budget: Budget::new(RunLimits::new()),
        span: span.clone(),
    }
}
