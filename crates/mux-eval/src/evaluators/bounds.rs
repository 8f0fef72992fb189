//! Bounds on what an attempt spent: model calls, tool calls, tokens, time and cost.

use serde::{Deserialize, Serialize};

use crate::evaluator::{Check, EvalContext};
use crate::score::Score;

/// Upper bounds on an attempt's spending; each unset bound is not checked. The score is the
/// share of bounds kept.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bounds {
    /// Model calls (turns).
    #[serde(default)]
    pub max_model_calls: Option<u32>,
    /// Tool calls.
    #[serde(default)]
    pub max_tool_calls: Option<u32>,
    /// Input tokens (cached ones included).
    #[serde(default)]
    pub max_input_tokens: Option<u64>,
    /// Output tokens.
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    /// Input plus output tokens.
    #[serde(default)]
    pub max_total_tokens: Option<u64>,
    /// Wall-clock time, in milliseconds.
    #[serde(default)]
    pub max_latency_ms: Option<u64>,
    /// Cost in US dollars, priced by `price`.
    #[serde(default)]
    pub max_cost_usd: Option<f64>,
    /// The model's price, US dollars per million tokens (`input`, `output`).
    #[serde(default)]
    pub price: Option<Price>,
}

/// A price per million tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million input tokens (cached ones included).
    pub input: f64,
    /// Per million output tokens.
    pub output: f64,
}

impl Bounds {
    /// No bounds yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bounds the model calls.
    pub fn model_calls(mut self, max: u32) -> Self {
        self.max_model_calls = Some(max);
        self
    }

    /// Bounds the tool calls.
    pub fn tool_calls(mut self, max: u32) -> Self {
        self.max_tool_calls = Some(max);
        self
    }

    /// Bounds input plus output tokens.
    pub fn total_tokens(mut self, max: u64) -> Self {
        self.max_total_tokens = Some(max);
        self
    }

    /// Bounds the wall-clock time.
    pub fn latency_ms(mut self, max: u64) -> Self {
        self.max_latency_ms = Some(max);
        self
    }

    /// Bounds the cost at `price`.
    pub fn cost_usd(mut self, max: f64, price: Price) -> Self {
        self.max_cost_usd = Some(max);
        self.price = Some(price);
        self
    }
}

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
        bound("model calls", f64::from(run.model_calls), self.max_model_calls.map(f64::from));
        bound("tool calls", run.tool_calls.len() as f64, self.max_tool_calls.map(f64::from));
        bound("input tokens", input as f64, self.max_input_tokens.map(|m| m as f64));
        bound("output tokens", u.output_tokens as f64, self.max_output_tokens.map(|m| m as f64));
        bound("tokens", run.total_tokens() as f64, self.max_total_tokens.map(|m| m as f64));
        bound("milliseconds", run.duration_ms as f64, self.max_latency_ms.map(|m| m as f64));
        if let Some(max) = self.max_cost_usd {
            match self.price {
                Some(price) => {
                    let cost = (input as f64 * price.input + u.output_tokens as f64 * price.output) / 1e6;
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
