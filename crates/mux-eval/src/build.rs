//! Turns evaluator specs into running evaluators, and gathers a case's evaluators: the
//! dataset's, the case's own, and those its expectations imply.

use std::sync::Arc;

use crate::case::Case;
use crate::error::EvalError;
use crate::evaluator::SharedEvaluator;
use crate::evaluators::bounds::Bounds;
use crate::evaluators::events::{ApprovalAsked, NoError, ToolFailed, ToolNotCalled};
use crate::evaluators::judge::{Judge, JudgeModel};
use crate::evaluators::output::{Contains, Equals, JsonSchema, Matches, Numeric};
use crate::evaluators::trajectory::TrajectoryMatch;
use crate::spec::EvaluatorSpec;

/// Builds one evaluator from its spec; `case` names the case in errors (`*` for the
/// dataset's).
pub fn build(
    spec: &EvaluatorSpec,
    case: &str,
    judge: Option<&JudgeModel>,
) -> Result<SharedEvaluator, EvalError> {
    let invalid = |evaluator: &str, message: String| EvalError::InvalidEvaluator {
        case: case.to_owned(),
        evaluator: evaluator.to_owned(),
        message,
    };
    Ok(match spec {
        EvaluatorSpec::Equals { value } => Arc::new(Equals::new(value.clone())),
        EvaluatorSpec::Contains { text, ignore_case } => {
            let contains = Contains::new(text.clone());
            Arc::new(if *ignore_case {
                contains.ignore_case()
            } else {
                contains
            })
        }
        EvaluatorSpec::Regex { pattern } => {
            Arc::new(Matches::new(pattern).map_err(|m| invalid("regex", m))?)
        }
        EvaluatorSpec::JsonSchema { schema } => {
            Arc::new(JsonSchema::new(schema).map_err(|m| invalid("json_schema", m))?)
        }
        EvaluatorSpec::Numeric {
            expected,
            tolerance,
            pointer,
        } => {
            if !expected.is_finite() || !tolerance.is_finite() {
                return Err(invalid(
                    "numeric",
                    "expected and tolerance must be finite".into(),
                ));
            }
            let numeric = Numeric::new(*expected, *tolerance);
            Arc::new(match pointer {
                Some(pointer) => numeric.at(pointer.clone()),
                None => numeric,
            })
        }
        EvaluatorSpec::Trajectory(trajectory) => Arc::new(TrajectoryMatch::new(trajectory.clone())),
        EvaluatorSpec::Bounds(bounds) => {
            if bounds.max_cost_usd.is_some() && bounds.price.is_none() {
                return Err(invalid("bounds", "max_cost_usd needs a price".into()));
            }
            Arc::new(Bounds::clone(bounds))
        }
        EvaluatorSpec::ToolNotCalled { tool } => Arc::new(ToolNotCalled::new(tool.clone())),
        EvaluatorSpec::ApprovalAsked { tool, asked } => {
            let check = ApprovalAsked::new(tool.clone());
            Arc::new(if *asked { check } else { check.never() })
        }
        EvaluatorSpec::ToolFailed { tool, failed } => {
            let check = ToolFailed::new(tool.clone());
            Arc::new(if *failed { check } else { check.never() })
        }
        EvaluatorSpec::NoError => Arc::new(NoError),
        EvaluatorSpec::Judge { rubric, threshold } => {
            let Some(model) = judge else {
                return Err(EvalError::NoJudge {
                    case: case.to_owned(),
                });
            };
            if !(0.0..=1.0).contains(threshold) {
                return Err(invalid("judge", "threshold must be in 0..=1".into()));
            }
            Arc::new(Judge::new(model.clone(), rubric.clone()).threshold(*threshold))
        }
    })
}

/// Every evaluator of `case`: `shared` (the dataset's, already built), then the case's own,
/// then `equals` for its expected output and `trajectory` for its expected tools.
pub fn for_case(
    case: &Case,
    shared: &[SharedEvaluator],
    judge: Option<&JudgeModel>,
) -> Result<Vec<SharedEvaluator>, EvalError> {
    let mut evaluators = shared.to_vec();
    for spec in &case.evaluators {
        evaluators.push(build(spec, &case.name, judge)?);
    }
    if let Some(expected) = &case.expected_output {
        evaluators.push(Arc::new(Equals::new(expected.clone())));
    }
    if let Some(trajectory) = &case.expected_tools {
        evaluators.push(Arc::new(TrajectoryMatch::new(trajectory.clone())));
    }
    Ok(evaluators)
}
