//! A tool call, what can go wrong with it, and what comes back.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::validation::{ArgumentProblem, describe};
use crate::{ToolError, ToolOutput};

/// A model's request to run a tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call id the model chose (`toolu_…`, `call_…`); the result is paired with it.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments object.
    pub input: Value,
}

impl ToolCall {
    /// A call.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        Self {
            id: id.into(),
            name: name.into(),
            input,
        }
    }
}

/// Why the executor could not produce a tool's own output.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// No visible tool has this name.
    #[error("unknown tool `{name}`{}", did_you_mean(.suggestions))]
    UnknownTool {
        /// The requested name.
        name: String,
        /// Close registered names, best first.
        suggestions: Vec<String>,
    },
    /// The arguments do not match the input schema.
    #[error("invalid arguments for tool `{tool}`: {}", describe(.problems))]
    InvalidArguments {
        /// The tool.
        tool: String,
        /// Each problem, with the path of the offending field.
        problems: Vec<ArgumentProblem>,
    },
    /// A pre-hook rewrote the arguments into ones the schema rejects.
    #[error("hook `{hook}` rewrote the arguments of tool `{tool}` into invalid ones: {}", describe(.problems))]
    InvalidRewrite {
        /// The tool.
        tool: String,
        /// The hook.
        hook: String,
        /// Each problem.
        problems: Vec<ArgumentProblem>,
    },
    /// A pre-hook refused the call.
    #[error("tool `{tool}` was blocked by hook `{hook}`: {reason}")]
    Blocked {
        /// The tool.
        tool: String,
        /// The hook.
        hook: String,
        /// The hook's reason.
        reason: String,
    },
    /// A pre-hook failed or panicked, so the call was not run.
    #[error("hook `{hook}` failed before tool `{tool}` could run, so it did not run: {message}")]
    HookFailed {
        /// The tool.
        tool: String,
        /// The hook.
        hook: String,
        /// What went wrong.
        message: String,
    },
    /// The approval gate denied the call.
    #[error("permission to run tool `{tool}` was denied: {reason}")]
    Denied {
        /// The tool.
        tool: String,
        /// The gate's reason.
        reason: String,
    },
    /// The call needs approval and no gate is configured.
    #[error("tool `{tool}` needs approval, and no approval gate is configured")]
    ApprovalRequired {
        /// The tool.
        tool: String,
    },
    /// The approval gate panicked; the call counts as denied.
    #[error(
        "the approval gate failed while reviewing tool `{tool}`, so the call was denied: {message}"
    )]
    GateFailed {
        /// The tool.
        tool: String,
        /// What went wrong.
        message: String,
    },
    /// The call ran past its timeout and was stopped.
    #[error("tool `{tool}` timed out after {after:?} and was stopped")]
    TimedOut {
        /// The tool.
        tool: String,
        /// The timeout.
        after: Duration,
    },
    /// The call was cancelled.
    #[error("tool `{tool}` was cancelled")]
    Cancelled {
        /// The tool.
        tool: String,
    },
    /// The tool panicked.
    #[error("tool `{tool}` panicked: {message}")]
    Panicked {
        /// The tool.
        tool: String,
        /// The panic message.
        message: String,
    },
    /// The tool returned an error.
    #[error("tool `{tool}` failed: {source}")]
    Tool {
        /// The tool.
        tool: String,
        /// The tool's error.
        #[source]
        source: ToolError,
    },
}

fn did_you_mean(suggestions: &[String]) -> String {
    match suggestions {
        [] => String::new(),
        [one] => format!("; did you mean `{one}`?"),
        many => {
            let quoted: Vec<String> = many.iter().map(|s| format!("`{s}`")).collect();
            format!("; did you mean one of {}?", quoted.join(", "))
        }
    }
}

impl ExecError {
    /// A stable, machine-readable name of the variant (`"unknown_tool"`, `"denied"`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UnknownTool { .. } => "unknown_tool",
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::InvalidRewrite { .. } => "invalid_rewrite",
            Self::Blocked { .. } => "blocked",
            Self::HookFailed { .. } => "hook_failed",
            Self::Denied { .. } => "denied",
            Self::ApprovalRequired { .. } => "approval_required",
            Self::GateFailed { .. } => "gate_failed",
            Self::TimedOut { .. } => "timed_out",
            Self::Cancelled { .. } => "cancelled",
            Self::Panicked { .. } => "panicked",
            Self::Tool { .. } => "tool_error",
        }
    }

    /// The error as an output the model reads: the message, `is_error` set, and the kind in
    /// the metadata key `mux.error`.
    pub fn to_output(&self) -> ToolOutput {
        ToolOutput::error(self.to_string()).with_metadata("mux.error", json!(self.kind()))
    }
}

/// The result of one call through the executor.
pub type CallResult = Result<ToolOutput, ExecError>;

/// A post-hook that failed; the call's result stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HookFailure {
    /// The hook.
    pub hook: String,
    /// What went wrong (an error or a panic message).
    pub message: String,
}

/// Everything the executor knows about a finished call.
#[derive(Debug)]
pub struct CallOutcome {
    /// The call as it ran: its arguments are the ones after any rewrite.
    pub call: ToolCall,
    /// The tool's output, or why there is none.
    pub result: CallResult,
    /// Post-hooks that failed or panicked.
    pub hook_failures: Vec<HookFailure>,
    /// Wall time from the start of validation to the end of the post-hooks.
    pub duration: Duration,
}

impl CallOutcome {
    /// Whether the model will see an error.
    pub fn is_error(&self) -> bool {
        self.result.as_ref().map_or(true, |output| output.is_error)
    }

    /// The output the model reads: the tool's output, or the error as an output.
    pub fn output(&self) -> ToolOutput {
        match &self.result {
            Ok(output) => output.clone(),
            Err(err) => err.to_output(),
        }
    }

    /// Like [`output`](Self::output), without cloning.
    pub fn into_output(self) -> ToolOutput {
        match self.result {
            Ok(output) => output,
            Err(err) => err.to_output(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_tool_message_lists_suggestions() {
        let none = ExecError::UnknownTool {
            name: "x".into(),
            suggestions: vec![],
        };
        assert_eq!(none.to_string(), "unknown tool `x`");
        let one = ExecError::UnknownTool {
            name: "raed".into(),
            suggestions: vec!["read".into()],
        };
        assert_eq!(one.to_string(), "unknown tool `raed`; did you mean `read`?");
        let two = ExecError::UnknownTool {
            name: "rd".into(),
            suggestions: vec!["read".into(), "rm".into()],
        };
        assert_eq!(
            two.to_string(),
            "unknown tool `rd`; did you mean one of `read`, `rm`?"
        );
    }

    #[test]
    fn errors_become_error_outputs_with_their_kind() {
        let out = ExecError::Denied {
            tool: "bash".into(),
            reason: "no network".into(),
        }
        .to_output();
        assert!(out.is_error);
        assert_eq!(
            out.to_text(),
            "permission to run tool `bash` was denied: no network"
        );
        assert_eq!(out.metadata["mux.error"], "denied");
    }
}
