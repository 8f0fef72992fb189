//! Budgets for a run: tokens, model calls, tool calls, cost and wall time.
//!
//! A [`RunLimits`] in the [`OrchestratorConfig`](crate::OrchestratorConfig) bounds every run.
//! When a run reaches one, it stops cleanly: the calls the model asked for get error results
//! (a conversation never keeps a tool call without a result), the run finishes with
//! [`RunSummary::limit`](crate::RunSummary::limit) set, and faces report the reason.
//! A subagent's run draws from its parent's budget as well as its own.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use mux_llm::Usage;
use serde::{Deserialize, Serialize};

/// What a run may spend. Every limit is off by default.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct RunLimits {
    /// Input tokens over the run's model calls (cached and cache-written ones included).
    pub max_input_tokens: Option<u64>,
    /// Output tokens over the run's model calls (reasoning included).
    pub max_output_tokens: Option<u64>,
    /// Model calls.
    pub max_model_calls: Option<u32>,
    /// Tool calls.
    pub max_tool_calls: Option<u32>,
    /// Cost in US dollars, priced by [`prices`](Self::prices).
    pub max_cost_usd: Option<f64>,
    /// What each model costs; a run with a cost limit on a model it has no price for fails
    /// before its first call ([`LoopError::Unpriced`](crate::LoopError::Unpriced)).
    pub prices: PriceTable,
    /// Time from the start of the run.
    pub max_wall_time: Option<Duration>,
}

impl RunLimits {
    /// No limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// Limits the input tokens.
    pub fn input_tokens(mut self, max: u64) -> Self {
        self.max_input_tokens = Some(max);
        self
    }

    /// Limits the output tokens. Each model call's `max_tokens` is also lowered to what is
    /// left.
    pub fn output_tokens(mut self, max: u64) -> Self {
        self.max_output_tokens = Some(max);
        self
    }

    /// Limits the model calls.
    pub fn model_calls(mut self, max: u32) -> Self {
        self.max_model_calls = Some(max);
        self
    }

    /// Limits the tool calls.
    pub fn tool_calls(mut self, max: u32) -> Self {
        self.max_tool_calls = Some(max);
        self
    }

    /// Limits the cost, priced by `prices`.
    pub fn cost_usd(mut self, max: f64, prices: PriceTable) -> Self {
        self.max_cost_usd = Some(max);
        self.prices = prices;
        self
    }

    /// Limits the wall time. It is checked before every model call and while the model
    /// streams; a batch of tool calls in progress finishes first (each call is bounded by the
    /// tool timeout).
    pub fn wall_time(mut self, max: Duration) -> Self {
        self.max_wall_time = Some(max);
        self
    }

    fn is_unlimited(&self) -> bool {
        self.max_input_tokens.is_none()
            && self.max_output_tokens.is_none()
            && self.max_model_calls.is_none()
            && self.max_tool_calls.is_none()
            && self.max_cost_usd.is_none()
            && self.max_wall_time.is_none()
    }
}

/// Prices per model, in US dollars per million tokens.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PriceTable(BTreeMap<String, ModelPrice>);

impl PriceTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces the price of `model` (the name sent in requests).
    pub fn price(mut self, model: impl Into<String>, price: ModelPrice) -> Self {
        self.0.insert(model.into(), price);
        self
    }

    /// The price of `model`.
    pub fn get(&self, model: &str) -> Option<&ModelPrice> {
        self.0.get(model)
    }
}

/// One model's price, in US dollars per million tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ModelPrice {
    /// Uncached input tokens.
    pub input: f64,
    /// Output tokens.
    pub output: f64,
    /// Input tokens read from the cache.
    pub cache_read: f64,
    /// Input tokens written to the cache.
    pub cache_write: f64,
}

impl ModelPrice {
    /// Input and output prices; cached input costs the same as input until
    /// [`cache`](Self::cache) says otherwise.
    pub fn per_million(input: f64, output: f64) -> Self {
        Self {
            input,
            output,
            cache_read: input,
            cache_write: input,
        }
    }

    /// Sets the prices of cache reads and writes.
    pub fn cache(mut self, read: f64, write: f64) -> Self {
        self.cache_read = read;
        self.cache_write = write;
        self
    }

    /// What `usage` costs, in US dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        // Token counts stay far below 2^53, where f64 is exact.
        #[allow(clippy::cast_precision_loss)]
        let dollars = usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_read_tokens as f64 * self.cache_read
            + usage.cache_write_tokens as f64 * self.cache_write;
        dollars / 1_000_000.0
    }
}

/// The limit a run reached.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "limit", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LimitReached {
    /// [`RunLimits::max_input_tokens`].
    InputTokens {
        /// The limit.
        max: u64,
        /// Spent so far.
        used: u64,
    },
    /// [`RunLimits::max_output_tokens`].
    OutputTokens {
        /// The limit.
        max: u64,
        /// Spent so far.
        used: u64,
    },
    /// [`RunLimits::max_model_calls`].
    ModelCalls {
        /// The limit.
        max: u32,
    },
    /// [`RunLimits::max_tool_calls`].
    ToolCalls {
        /// The limit.
        max: u32,
    },
    /// [`RunLimits::max_cost_usd`].
    Cost {
        /// The limit in US dollars.
        max_usd: f64,
        /// Spent so far.
        spent_usd: f64,
    },
    /// [`RunLimits::max_wall_time`].
    WallTime {
        /// The limit in milliseconds.
        max_ms: u64,
    },
}

impl LimitReached {
    /// A stable machine-readable name: `max_input_tokens`, `max_output_tokens`,
    /// `max_model_calls`, `max_tool_calls`, `max_cost`, `max_wall_time`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InputTokens { .. } => "max_input_tokens",
            Self::OutputTokens { .. } => "max_output_tokens",
            Self::ModelCalls { .. } => "max_model_calls",
            Self::ToolCalls { .. } => "max_tool_calls",
            Self::Cost { .. } => "max_cost",
            Self::WallTime { .. } => "max_wall_time",
        }
    }

    /// Whether the limit is one on tokens (faces with a `max_tokens` stop reason use it).
    pub fn is_tokens(&self) -> bool {
        matches!(self, Self::InputTokens { .. } | Self::OutputTokens { .. })
    }
}

impl std::fmt::Display for LimitReached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::InputTokens { max, used } => {
                write!(
                    f,
                    "the run's input token limit ({max}) was reached ({used} used)"
                )
            }
            Self::OutputTokens { max, used } => {
                write!(
                    f,
                    "the run's output token limit ({max}) was reached ({used} used)"
                )
            }
            Self::ModelCalls { max } => write!(f, "the run's model call limit ({max}) was reached"),
            Self::ToolCalls { max } => write!(f, "the run's tool call limit ({max}) was reached"),
            Self::Cost { max_usd, spent_usd } => write!(
                f,
                "the run's cost limit (${max_usd:.4}) was reached (${spent_usd:.4} spent)"
            ),
            Self::WallTime { max_ms } => {
                write!(f, "the run's wall time limit ({max_ms} ms) was reached")
            }
        }
    }
}

/// What a budget has spent.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spent {
    /// Input tokens, cached ones included.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Model calls.
    pub model_calls: u32,
    /// Tool calls.
    pub tool_calls: u32,
    /// Cost in US dollars (0 without prices).
    pub cost_usd: f64,
}

/// A run's budget: its limits and what it has spent, shared with the budgets of the
/// subagents it delegates to, which charge it as well as themselves.
///
/// A run puts its budget in its tools' [`Resources`](mux_tool::Resources), so a tool that
/// starts another run (the `task` tool) can pass it on.
#[derive(Clone, Debug)]
pub struct Budget {
    inner: Arc<BudgetInner>,
}

#[derive(Debug)]
struct BudgetInner {
    limits: RunLimits,
    deadline: Option<Instant>,
    parent: Option<Budget>,
    spent: Mutex<Spent>,
}

impl Budget {
    /// A budget that starts now.
    pub fn new(limits: RunLimits) -> Self {
        Self::under(limits, None)
    }

    /// A budget that also charges `parent` (and its ancestors), and stops when any of them is
    /// spent.
    pub fn under(limits: RunLimits, parent: Option<Budget>) -> Self {
        let deadline = limits.max_wall_time.map(|d| Instant::now() + d);
        Self {
            inner: Arc::new(BudgetInner {
                limits,
                deadline,
                parent,
                spent: Mutex::new(Spent::default()),
            }),
        }
    }

    /// What this budget has spent (its subagents included).
    pub fn spent(&self) -> Spent {
        *self.lock()
    }

    /// Its limits.
    pub fn limits(&self) -> &RunLimits {
        &self.inner.limits
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Spent> {
        self.inner
            .spent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// This budget and its ancestors, nearest first.
    fn chain(&self) -> impl Iterator<Item = &Budget> {
        std::iter::successors(Some(self), |b| b.inner.parent.as_ref())
    }

    /// The first model in the chain's cost limits without a price.
    pub(crate) fn unpriced(&self, model: &str) -> bool {
        self.chain().any(|b| {
            b.inner.limits.max_cost_usd.is_some() && b.inner.limits.prices.get(model).is_none()
        })
    }

    /// Whether another model call may be made.
    pub(crate) fn before_model_call(&self) -> Result<(), LimitReached> {
        for budget in self.chain() {
            budget.check_one()?;
        }
        Ok(())
    }

    fn check_one(&self) -> Result<(), LimitReached> {
        let limits = &self.inner.limits;
        if limits.is_unlimited() {
            return Ok(());
        }
        let spent = self.spent();
        if let Some(max) = limits.max_model_calls
            && spent.model_calls >= max
        {
            return Err(LimitReached::ModelCalls { max });
        }
        if let Some(max) = limits.max_input_tokens
            && spent.input_tokens >= max
        {
            return Err(LimitReached::InputTokens {
                max,
                used: spent.input_tokens,
            });
        }
        if let Some(max) = limits.max_output_tokens
            && spent.output_tokens >= max
        {
            return Err(LimitReached::OutputTokens {
                max,
                used: spent.output_tokens,
            });
        }
        if let Some(max) = limits.max_cost_usd
            && spent.cost_usd >= max
        {
            return Err(LimitReached::Cost {
                max_usd: max,
                spent_usd: spent.cost_usd,
            });
        }
        if let (Some(deadline), Some(max)) = (self.inner.deadline, limits.max_wall_time)
            && Instant::now() >= deadline
        {
            return Err(LimitReached::WallTime {
                max_ms: u64::try_from(max.as_millis()).unwrap_or(u64::MAX),
            });
        }
        Ok(())
    }

    /// Charges one model call of `model` that used `usage`, here and in every ancestor.
    pub(crate) fn charge_model_call(&self, model: &str, usage: &Usage) {
        let input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens;
        for budget in self.chain() {
            let cost = budget
                .inner
                .limits
                .prices
                .get(model)
                .map_or(0.0, |p| p.cost(usage));
            let mut spent = budget.lock();
            spent.model_calls = spent.model_calls.saturating_add(1);
            spent.input_tokens = spent.input_tokens.saturating_add(input);
            spent.output_tokens = spent.output_tokens.saturating_add(usage.output_tokens);
            spent.cost_usd += cost;
        }
    }

    /// Takes up to `wanted` tool calls from the chain: returns how many may run, and the limit
    /// that stopped the rest.
    pub(crate) fn take_tool_calls(&self, wanted: usize) -> (usize, Option<LimitReached>) {
        let mut allowed = wanted;
        let mut reached = None;
        for budget in self.chain() {
            if let Some(max) = budget.inner.limits.max_tool_calls {
                let left = max.saturating_sub(budget.lock().tool_calls) as usize;
                if left < allowed {
                    allowed = left;
                    reached = Some(LimitReached::ToolCalls { max });
                }
            }
        }
        let taken = u32::try_from(allowed).unwrap_or(u32::MAX);
        for budget in self.chain() {
            let mut spent = budget.lock();
            spent.tool_calls = spent.tool_calls.saturating_add(taken);
        }
        (allowed, reached)
    }

    /// The output tokens the chain still allows, when any budget limits them.
    pub(crate) fn output_room(&self) -> Option<u64> {
        self.chain()
            .filter_map(|b| {
                let max = b.inner.limits.max_output_tokens?;
                Some(max.saturating_sub(b.lock().output_tokens))
            })
            .min()
    }

    /// The earliest deadline in the chain, with its limit.
    pub(crate) fn deadline(&self) -> Option<(Instant, LimitReached)> {
        self.chain()
            .filter_map(|b| {
                let deadline = b.inner.deadline?;
                let max = b.inner.limits.max_wall_time?;
                Some((
                    deadline,
                    LimitReached::WallTime {
                        max_ms: u64::try_from(max.as_millis()).unwrap_or(u64::MAX),
                    },
                ))
            })
            .min_by_key(|(deadline, _)| *deadline)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            ..Usage::default()
        }
    }

    #[test]
    fn a_child_charges_its_parent_and_stops_on_the_parents_limit() {
        let parent = Budget::new(RunLimits::new().output_tokens(100));
        let child = Budget::under(RunLimits::new(), Some(parent.clone()));
        child.charge_model_call("m", &usage(10, 60));
        assert_eq!(parent.spent().output_tokens, 60);
        assert!(child.before_model_call().is_ok());
        child.charge_model_call("m", &usage(10, 60));
        assert_eq!(
            child.before_model_call(),
            Err(LimitReached::OutputTokens {
                max: 100,
                used: 120
            })
        );
        assert_eq!(child.output_room(), Some(0));
    }

    #[test]
    fn tool_calls_are_taken_up_to_the_smallest_limit_in_the_chain() {
        let parent = Budget::new(RunLimits::new().tool_calls(3));
        let child = Budget::under(RunLimits::new().tool_calls(10), Some(parent.clone()));
        assert_eq!(child.take_tool_calls(2), (2, None));
        assert_eq!(
            child.take_tool_calls(2),
            (1, Some(LimitReached::ToolCalls { max: 3 }))
        );
        assert_eq!(parent.spent().tool_calls, 3);
    }

    #[test]
    fn cost_is_priced_per_model_and_cache_reads_have_their_own_price() {
        let prices =
            PriceTable::new().price("m", ModelPrice::per_million(2.0, 10.0).cache(0.5, 2.5));
        let budget = Budget::new(RunLimits::new().cost_usd(0.01, prices));
        assert!(!budget.unpriced("m"));
        assert!(budget.unpriced("other"));
        let used = Usage {
            input_tokens: 1_000,
            output_tokens: 500,
            cache_read_tokens: 2_000,
            ..Usage::default()
        };
        budget.charge_model_call("m", &used);
        let spent = budget.spent().cost_usd;
        assert!((spent - (0.002 + 0.005 + 0.001)).abs() < 1e-12, "{spent}");
        assert!(budget.before_model_call().is_ok());
        budget.charge_model_call("m", &used);
        assert!(matches!(
            budget.before_model_call(),
            Err(LimitReached::Cost { .. })
        ));
    }

    #[test]
    fn a_zero_wall_time_is_reached_at_once() {
        let budget = Budget::new(RunLimits::new().wall_time(Duration::ZERO));
        assert_eq!(
            budget.before_model_call(),
            Err(LimitReached::WallTime { max_ms: 0 })
        );
    }

    #[test]
    fn the_reason_serializes_with_its_kind() {
        let json = serde_json::to_value(LimitReached::ToolCalls { max: 2 }).unwrap_or_default();
        assert_eq!(json, serde_json::json!({"limit": "tool_calls", "max": 2}));
    }
}
