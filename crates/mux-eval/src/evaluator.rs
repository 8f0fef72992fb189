//! The evaluator contract: given a case and what an attempt produced, a [`Score`].

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::case::Case;
use crate::error::EvalError;
use crate::record::RunRecord;
use crate::score::Score;

/// What an evaluator looks at.
#[derive(Clone, Copy, Debug)]
pub struct EvalContext<'a> {
    /// The case.
    pub case: &'a Case,
    /// What the attempt produced.
    pub run: &'a RunRecord,
}

/// Scores an attempt. An `Err` is reported as a failed score whose reason is the error: an
/// evaluator that cannot decide never passes.
///
/// A custom evaluator in Rust:
///
/// ```
/// use mux_eval::{EvalContext, Score, evaluator};
///
/// let short = evaluator::from_fn("short", |cx: &EvalContext<'_>| {
///     Score::check(cx.run.output.len() <= 80, format!("{} characters", cx.run.output.len()))
/// });
/// # let _ = short;
/// ```
pub trait Evaluator: Send + Sync {
    /// The evaluator's name in reports.
    fn name(&self) -> String;

    /// Scores the attempt.
    fn evaluate<'a>(&'a self, cx: EvalContext<'a>) -> BoxFuture<'a, Result<Score, EvalError>>;
}

/// A shared evaluator.
pub type SharedEvaluator = Arc<dyn Evaluator>;

/// An evaluator from a name and a function.
pub fn from_fn<F>(name: impl Into<String>, score: F) -> SharedEvaluator
where
    F: Fn(&EvalContext<'_>) -> Score + Send + Sync + 'static,
{
    Arc::new(FnEvaluator {
        name: name.into(),
        score,
    })
}

struct FnEvaluator<F> {
    name: String,
    score: F,
}

impl<F> Evaluator for FnEvaluator<F>
where
    F: Fn(&EvalContext<'_>) -> Score + Send + Sync + 'static,
{
    fn name(&self) -> String {
        self.name.clone()
    }

    fn evaluate<'a>(&'a self, cx: EvalContext<'a>) -> BoxFuture<'a, Result<Score, EvalError>> {
        Box::pin(std::future::ready(Ok((self.score)(&cx))))
    }
}

/// A synchronous evaluator: implement this and get [`Evaluator`].
pub trait Check: Send + Sync {
    /// The evaluator's name in reports.
    fn name(&self) -> String;

    /// Scores the attempt.
    fn check(&self, cx: &EvalContext<'_>) -> Score;
}

impl<T: Check> Evaluator for T {
    fn name(&self) -> String {
        Check::name(self)
    }

    fn evaluate<'a>(&'a self, cx: EvalContext<'a>) -> BoxFuture<'a, Result<Score, EvalError>> {
        Box::pin(std::future::ready(Ok(self.check(&cx))))
    }
}
