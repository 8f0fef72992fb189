//! Executor overhead per call for a no-op typed tool (validation, a pre-hook, a post-hook and
//! an approval gate included) against calling the same tool directly.

use mux_tool::approval::gate_fn;
use mux_tool::hooks::{post_hook_fn, pre_hook_fn};
use mux_tool::{
    CallScope, Executor, GateVerdict, PostHookAction, PreHookAction, Registry, Tool, ToolCall,
    ToolContext, ToolError, ToolOutput, Typed, TypedTool,
};
use std::future::Future;
use std::sync::Arc;

use serde_json::json;
use tokio::runtime::{Builder, Runtime};

use crate::harness::{Row, per_iter};

const SAMPLES: usize = 15;
const ITERS: u32 = 20_000;

struct Noop;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoopArgs {
    #[allow(dead_code)]
    text: String,
    #[allow(dead_code)]
    count: u32,
}

impl TypedTool for Noop {
    type Args = NoopArgs;
    const NAME: &'static str = "noop";
    fn description(&self) -> String {
        "Does nothing".into()
    }
    async fn call(&self, _args: NoopArgs, _cx: ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(ToolOutput::default())
    }
}

fn executor() -> Result<Executor, String> {
    let registry = Registry::new();
    registry
        .register_typed(Noop)
        .map_err(|err| format!("registering the no-op tool: {err}"))?;
    Ok(Executor::builder(registry)
        .pre_hook(pre_hook_fn("noop-pre", |_, _| PreHookAction::Continue))
        .post_hook(post_hook_fn("noop-post", |_, _| PostHookAction::Keep))
        .gate(gate_fn(|_| async { GateVerdict::allow() }))
        .build())
}

fn measure(runtime: &Runtime, flavour: &str) -> Result<Row, String> {
    let executor = Arc::new(executor()?);
    let direct =
        Arc::new(Typed::new(Noop).map_err(|err| format!("building the no-op tool: {err}"))?);

    let through_executor = per_iter(SAMPLES, ITERS, |iters| {
        let executor = Arc::clone(&executor);
        on_worker(runtime, async move {
            let input = json!({"text": "hello", "count": 3});
            let scope = CallScope::default();
            for i in 0..iters {
                let call = ToolCall::new(i.to_string(), "noop", input.clone());
                let outcome = executor.execute(call, &scope).await;
                assert!(outcome.result.is_ok());
            }
        });
    });
    let baseline = per_iter(SAMPLES, ITERS, |iters| {
        let direct = Arc::clone(&direct);
        on_worker(runtime, async move {
            let input = json!({"text": "hello", "count": 3});
            for i in 0..iters {
                let output = direct
                    .call(input.clone(), ToolContext::new(i.to_string()))
                    .await;
                assert!(output.is_ok());
            }
        });
    });
    Ok(Row {
        name: format!("executor.execute no-op tool ({flavour})"),
        value: through_executor.as_nanos() as f64,
        unit: "ns",
        baseline: "direct Tool::call, same tool".to_owned(),
        baseline_value: baseline.as_nanos() as f64,
    })
}

/// Runs `work` as a task on the runtime's workers, as an agent loop would, rather than on the
/// thread that calls `block_on`.
fn on_worker(runtime: &Runtime, work: impl Future<Output = ()> + Send + 'static) {
    let joined = runtime.block_on(runtime.spawn(work));
    assert!(joined.is_ok(), "the benchmark task panicked");
}

/// Runs on a current-thread runtime and on a two-worker runtime (where each call's task may
/// wake on the other core).
pub(crate) fn run() -> Result<Vec<Row>, String> {
    let current = Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let multi = Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    Ok(vec![
        measure(&current, "current-thread runtime")?,
        measure(&multi, "multi-thread runtime")?,
    ])
}
