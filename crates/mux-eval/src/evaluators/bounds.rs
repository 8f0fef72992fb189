//! The `bounds` evaluator: what an attempt spent (model calls, tool calls, tokens, time and
//! cost) against upper bounds.

pub use crate::bounds::{Bounds, Price};

use crate::evaluator::{Check, EvalContext};
use crate::score::Score;

impl Check for Bounds {
    fn name(&self) -> String {
        "bounds".into()
    }

    fn check(&self, cx: &EvalContext<'_>) -> Score {
        let run = cx.run;
        let u = &run.usage;
        let input = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens;
        let mut kept = 0usize;
        let mut checked = 0usize;
        let mut reasons = Vec::new();
        let mut bound = |what: &str, actual: f64, max: Option<f64>| {
            if let Some(max) = max {
                checked += 1;
                if actual <= max {
                    kept += 1;
                } else {
                    reasons.push(format!("{what} {actual} over {max}"));
                }
            }
        };
        bound(
            "model calls",
            f64::from(run.model_calls),
            self.max_model_calls.map(f64::from),
        );
        bound(
            "tool calls",
            run.tool_calls.len() as f64,
            self.max_tool_calls.map(f64::from),
        );
        bound(
            "input tokens",
            input as f64,
            self.max_input_tokens.map(|m| m as f64),
        );
        bound(
            "output tokens",
            u.output_tokens as f64,
            self.max_output_tokens.map(|m| m as f64),
        );
        bound(
            "tokens",
            run.total_tokens() as f64,
            self.max_total_tokens.map(|m| m as f64),
        );
        bound(
            "milliseconds",
            run.duration_ms as f64,
            self.max_latency_ms.map(|m| m as f64),
        );
        if let Some(max) = self.max_cost_usd {
            match self.price {
                Some(price) => {
                    let cost =
                        (input as f64 * price.input + u.output_tokens as f64 * price.output) / 1e6;
                    bound("cost (USD)", cost, Some(max));
                }
                None => {
                    checked += 1;
                    reasons.push("a cost bound without a price cannot be checked".into());
                }
            }
        }
        if checked == 0 {
            return Score::pass().reason("no bound set");
        }
        let passed = kept == checked;
        if passed {
            reasons.push(format!("within {checked} bound(s)"));
        }
        let mut score = Score::new(kept as f64 / checked as f64, passed);
        score.reasons = reasons;
        score
    }
}
