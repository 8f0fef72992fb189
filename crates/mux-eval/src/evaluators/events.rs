//! Evaluators over what happened during the run: a tool never called, an approval asked (or
//! not), a run that ended without an error.

use crate::evaluator::{Check, EvalContext};
use crate::score::Score;

/// The tool was never called (not even a refused call).
#[derive(Clone, Debug)]
pub struct ToolNotCalled {
    tool: String,
}

impl ToolNotCalled {
    /// Expects no call of `tool`.
    pub fn new(tool: impl Into<String>) -> Self {
        Self { tool: tool.into() }
    }
}

impl Check for ToolNotCalled {
    fn name(&self) -> String {
        format!("never calls {}", self.tool)
    }

    fn check(&self, cx: &EvalContext<'_>) -> Score {
        let calls = cx
            .run
            .tool_calls
            .iter()
            .filter(|c| c.name == self.tool)
            .count();
        let asked = cx
            .run
            .approvals
            .iter()
            .filter(|a| a.tool == self.tool)
            .count();
        let seen = calls.max(asked);
        Score::check(seen == 0, format!("{} called {seen} time(s)", self.tool))
    }
}

/// An approval was asked for `tool` (or any call), or, negated, was not.
#[derive(Clone, Debug)]
pub struct ApprovalAsked {
    tool: Option<String>,
    asked: bool,
}

impl ApprovalAsked {
    /// Expects an approval question for `tool` (any tool when `None`).
    pub fn new(tool: Option<String>) -> Self {
        Self { tool, asked: true }
    }

    /// Expects no such question instead.
    pub fn never(mut self) -> Self {
        self.asked = false;
        self
    }
}

impl Check for ApprovalAsked {
    fn name(&self) -> String {
        let what = self.tool.as_deref().unwrap_or("any call");
        if self.asked {
            format!("asks approval for {what}")
        } else {
            format!("asks no approval for {what}")
        }
    }

    fn check(&self, cx: &EvalContext<'_>) -> Score {
        let count = cx
            .run
            .approvals
            .iter()
            .filter(|a| self.tool.as_ref().is_none_or(|t| *t == a.tool))
            .count();
        let what = self.tool.as_deref().unwrap_or("any call");
        Score::check(
            (count > 0) == self.asked,
            format!("{count} approval question(s) for {what}"),
        )
    }
}

/// Some tool call failed (an error result, a refusal, a denial), or, negated, none did.
#[derive(Clone, Debug)]
pub struct ToolFailed {
    tool: Option<String>,
    failed: bool,
}

impl ToolFailed {
    /// Expects a failed call of `tool` (any tool when `None`).
    pub fn new(tool: Option<String>) -> Self {
        Self { tool, failed: true }
    }

    /// Expects every such call to succeed instead (and at least one to be made).
    pub fn never(mut self) -> Self {
        self.failed = false;
        self
    }
}

impl Check for ToolFailed {
    fn name(&self) -> String {
        let what = self.tool.as_deref().unwrap_or("a tool call");
        if self.failed {
            format!("{what} fails")
        } else {
            format!("{what} succeeds")
        }
    }

    fn check(&self, cx: &EvalContext<'_>) -> Score {
        let calls: Vec<_> = cx
            .run
            .tool_calls
            .iter()
            .filter(|c| self.tool.as_ref().is_none_or(|t| *t == c.name))
            .collect();
        let failed: Vec<&str> = calls
            .iter()
            .filter(|c| c.is_error)
            .map(|c| c.name.as_str())
            .collect();
        let what = self.tool.as_deref().unwrap_or("tool");
        if calls.is_empty() {
            return Score::fail(format!("no {what} call was made"));
        }
        let reason = format!("{} of {} {what} call(s) failed", failed.len(), calls.len());
        if self.failed {
            Score::check(!failed.is_empty(), reason)
        } else {
            Score::check(failed.is_empty(), reason)
        }
    }
}

/// The attempt finished without a failure (limit, budget, timeout, cassette miss, error).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoError;

impl Check for NoError {
    fn name(&self) -> String {
        "no error".into()
    }

    fn check(&self, cx: &EvalContext<'_>) -> Score {
        match &cx.run.failure {
            None => Score::pass().reason("the run finished"),
            Some(failure) => Score::fail(format!("{}: {}", failure.kind, failure.message)),
        }
    }
}
