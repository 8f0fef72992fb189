//! What can go wrong while loading, preparing or running an eval.

use std::path::PathBuf;

/// A failure of the eval machinery itself (a case that fails its evaluators is not an error:
/// it is a result in the report).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// A dataset or report file could not be read or written.
    #[error("{operation} {path}: {source}")]
    Io {
        /// What was being done (`reading the dataset`, ...).
        operation: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A dataset or report file does not parse.
    #[error("parsing {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// A dataset breaks a rule (duplicate case names, an empty name, no cases...).
    #[error("dataset {dataset}: {message}")]
    InvalidDataset {
        /// The dataset.
        dataset: String,
        /// What is wrong.
        message: String,
    },
    /// An evaluator's settings are wrong (a regex or a schema that does not compile...).
    #[error("evaluator {evaluator} of case {case}: {message}")]
    InvalidEvaluator {
        /// The case (`*` for the dataset's evaluators).
        case: String,
        /// The evaluator.
        evaluator: String,
        /// What is wrong.
        message: String,
    },
    /// A case asks for an LLM judge and the runner has none ([`crate::Runner::judge`]).
    #[error("case {case} asks for an LLM judge, and the runner has none (Runner::judge)")]
    NoJudge {
        /// The case.
        case: String,
    },
    /// The judge's reply is not a verdict this crate can read.
    #[error("the judge's reply is not a verdict ({problem}): {reply:?}")]
    JudgeReply {
        /// What is wrong with it.
        problem: String,
        /// The reply, cut to 500 characters.
        reply: String,
    },
    /// The judge's model call failed or timed out.
    #[error("the judge's model call failed: {0}")]
    JudgeCall(String),
    /// The target could not make an agent for a case.
    #[error("making the agent for case {case}: {message}")]
    Target {
        /// The case.
        case: String,
        /// Why.
        message: String,
    },
    /// A cassette could not be started.
    #[error("cassette for case {case}: {message}")]
    Cassette {
        /// The case.
        case: String,
        /// Why.
        message: String,
    },
    /// The runner's settings are wrong.
    #[error("eval settings: {0}")]
    Settings(String),
    /// An evaluator failed for a reason of its own (a custom evaluator's error).
    #[error("{0}")]
    Evaluator(String),
}
