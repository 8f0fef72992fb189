//! What a delegated run inherits from the run that started it.

use mux_tool::ToolContext;

use crate::limits::Budget;

/// The run a delegated run belongs to: its budget, which the delegated run charges too, and
/// the span of the tool call that delegated, under which the delegated run's `invoke_agent`
/// span is recorded.
#[derive(Clone, Debug)]
pub struct ParentRun {
    /// The parent's budget.
    pub budget: Budget,
    /// The span the delegated run's trace hangs under.
    pub span: tracing::Span,
}

impl ParentRun {
    /// The run of the tool call `ctx` belongs to, seen from inside the call: its budget (a run
    /// puts it in its tools' resources) and the current span (the call's `execute_tool`).
    /// `None` outside a run.
    pub fn of_call(ctx: &ToolContext) -> Option<Self> {
        let budget = ctx.resources().get::<Budget>()?;
        Some(Self {
            budget: Budget::clone(&budget),
            span: tracing::Span::current(),
        })
    }
}
