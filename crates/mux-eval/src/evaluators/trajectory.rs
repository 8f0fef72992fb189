//! The tool-trajectory evaluator: the calls the agent made against the calls a case expects,
//! in exact order, as an in-order subset, or in any order, with argument matchers.

use crate::evaluator::{Check, EvalContext};
use crate::expect::{Order, Trajectory};
use crate::record::ToolCall;
use crate::score::Score;

/// Checks the tool calls against a [`Trajectory`]. The score is the share of expected calls
/// found (for `exact`, of positions that agree, over the longer of the two lists).
#[derive(Clone, Debug)]
pub struct TrajectoryMatch {
    trajectory: Trajectory,
}

impl TrajectoryMatch {
    /// Expects `trajectory`.
    pub fn new(trajectory: Trajectory) -> Self {
        Self { trajectory }
    }
}

impl Check for TrajectoryMatch {
    fn name(&self) -> String {
        let order = match self.trajectory.order {
            Order::Exact => "exact",
            Order::InOrder => "in order",
            Order::AnyOrder => "any order",
        };
        format!("trajectory ({order})")
    }

    fn check(&self, cx: &EvalContext<'_>) -> Score {
        let calls = &cx.run.tool_calls;
        let expected = &self.trajectory.calls;
        let made: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
        let (found, total, mut reasons) = match self.trajectory.order {
            Order::Exact => exact(expected, calls),
            Order::InOrder => in_order(expected, calls),
            Order::AnyOrder => any_order(expected, calls),
        };
        let passed = found == total
            && (self.trajectory.order != Order::Exact || calls.len() == expected.len());
        reasons.push(format!("calls made: [{}]", made.join(", ")));
        let value = if total == 0 {
            1.0
        } else {
            found as f64 / total as f64
        };
        let mut score = Score::new(if passed { 1.0 } else { value.min(0.999) }, passed);
        score.reasons = reasons;
        score
    }
}

type Outcome = (usize, usize, Vec<String>);

fn exact(expected: &[crate::expect::ExpectedCall], calls: &[ToolCall]) -> Outcome {
    let total = expected.len().max(calls.len());
    let mut reasons = Vec::new();
    let mut found = 0;
    for i in 0..total {
        match (expected.get(i), calls.get(i)) {
            (Some(want), Some(got)) => match want.check(&got.name, &got.input) {
                Ok(()) => found += 1,
                Err(why) => reasons.push(format!("call {}: {why}", i + 1)),
            },
            (Some(want), None) => {
                reasons.push(format!("call {}: {} was not made", i + 1, want.tool))
            }
            (None, Some(got)) => {
                reasons.push(format!("call {}: {} was not expected", i + 1, got.name))
            }
            (None, None) => {}
        }
    }
    (found, total, reasons)
}

fn in_order(expected: &[crate::expect::ExpectedCall], calls: &[ToolCall]) -> Outcome {
    // Matching each expected call to the earliest call after the previous match is optimal.
    let mut next = 0;
    let mut found = 0;
    let mut reasons = Vec::new();
    for want in expected {
        let hit = calls[next.min(calls.len())..]
            .iter()
            .position(|got| want.check(&got.name, &got.input).is_ok());
        match hit {
            Some(offset) => {
                found += 1;
                next += offset + 1;
            }
            None => {
                let near = calls
                    .iter()
                    .filter_map(|got| want.check(&got.name, &got.input).err())
                    .find(|why| !why.starts_with("tool "));
                reasons.push(match near {
                    Some(why) => format!("no call in order matches: {why}"),
                    None => format!("{} was not called (in order)", want.tool),
                });
            }
        }
    }
    (found, expected.len(), reasons)
}

fn any_order(expected: &[crate::expect::ExpectedCall], calls: &[ToolCall]) -> Outcome {
    // A maximum bipartite matching (Kuhn's augmenting paths): each call serves one
    // expectation, whichever order the matchers overlap in.
    let fits: Vec<Vec<usize>> = expected
        .iter()
        .map(|want| {
            (0..calls.len())
                .filter(|&j| want.check(&calls[j].name, &calls[j].input).is_ok())
                .collect()
        })
        .collect();
    let mut owner: Vec<Option<usize>> = vec![None; calls.len()];
    for i in 0..expected.len() {
        let mut seen = vec![false; calls.len()];
        augment(i, &fits, &mut owner, &mut seen);
    }
    let mut matched = vec![false; expected.len()];
    for i in owner.iter().flatten() {
        matched[*i] = true;
    }
    let reasons = expected
        .iter()
        .zip(&matched)
        .filter(|(_, m)| !**m)
        .map(|(want, _)| format!("no call matches {} {}", want.tool, args_of(want)))
        .collect();
    (
        matched.iter().filter(|m| **m).count(),
        expected.len(),
        reasons,
    )
}

fn augment(i: usize, fits: &[Vec<usize>], owner: &mut [Option<usize>], seen: &mut [bool]) -> bool {
    for &j in &fits[i] {
        if seen[j] {
            continue;
        }
        seen[j] = true;
        let free = match owner[j] {
            None => true,
            Some(other) => augment(other, fits, owner, seen),
        };
        if free {
            owner[j] = Some(i);
            return true;
        }
    }
    false
}

fn args_of(want: &crate::expect::ExpectedCall) -> String {
    if want.args.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = want
        .args
        .iter()
        .map(|(name, m)| format!("{name}={}", m.describe()))
        .collect();
    format!("({})", parts.join(", "))
}
