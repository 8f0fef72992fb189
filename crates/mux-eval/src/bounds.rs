//! Bounds on what an attempt spent, as data (the `bounds` evaluator checks them).

use serde::{Deserialize, Serialize};

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
