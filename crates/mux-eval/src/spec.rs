//! Evaluators as data: what a dataset file names under `evaluators:`, turned into running
//! evaluators by [`crate::build`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::expect::Trajectory;

/// An evaluator described in a dataset (a file's `evaluators:` list, or in code).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum EvaluatorSpec {
    /// The output equals `value`: a string is compared with the text (trimmed), anything
    /// else with the output read as JSON.
    Equals {
        /// The expected output.
        value: Value,
    },
    /// The text contains `text`.
    Contains {
        /// The text to find.
        text: String,
        /// Compare without regard to case.
        #[serde(default)]
        ignore_case: bool,
    },
    /// The text matches `pattern` (searched, not anchored).
    Regex {
        /// The regular expression (Rust `regex` syntax).
        pattern: String,
    },
    /// The output, read as JSON, validates against `schema`.
    JsonSchema {
        /// The JSON Schema.
        schema: Value,
    },
    /// A number in the output is within `tolerance` of `expected`: the output read as JSON
    /// at `pointer` (a JSON pointer, `""` for the whole output), or the text as a number.
    Numeric {
        /// The expected number.
        expected: f64,
        /// The largest accepted difference.
        #[serde(default)]
        tolerance: f64,
        /// Where the number is in the JSON output.
        #[serde(default)]
        pointer: Option<String>,
    },
    /// The tool calls follow a trajectory.
    Trajectory(Trajectory),
    /// Spending stays within bounds.
    Bounds(crate::bounds::Bounds),
    /// The tool was never called.
    ToolNotCalled {
        /// The tool's name.
        tool: String,
    },
    /// An approval was asked (for `tool`, or for any call), or was not (`asked: false`).
    ApprovalAsked {
        /// The tool; any when absent.
        #[serde(default)]
        tool: Option<String>,
        /// Whether it must have been asked (default) or must not.
        #[serde(default = "yes")]
        asked: bool,
    },
    /// A tool call failed (`failed: true`, the default: an error result, a refusal, a denial),
    /// or none did (`failed: false`); only calls of `tool` when it is set.
    ToolFailed {
        /// The tool; any when absent.
        #[serde(default)]
        tool: Option<String>,
        /// Whether a failed call is expected (default) or none.
        #[serde(default = "yes")]
        failed: bool,
    },
    /// The run ended without an error (no limit, no cancellation, no failed model call).
    NoError,
    /// An LLM judge scores the output against `rubric` (the runner's judge model).
    Judge {
        /// What a good answer is.
        rubric: String,
        /// The score from which the judge's verdict passes when it gives no `pass`.
        #[serde(default = "half")]
        threshold: f64,
    },
}

fn yes() -> bool {
    true
}

fn half() -> f64 {
    0.5
}
