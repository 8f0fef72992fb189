//! The executor keeps calls apart from each other and from itself: timeouts, cancellation,
//! panics, output limits, progress, and batches.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mux_tool::{
    CallScope, ExecError, Executor, ProgressSender, Registry, ToolAnnotations, ToolCall,
    ToolContext, ToolError, ToolOutput, ToolUpdate, TypedTool, truncate::TRUNCATED_METADATA_KEY,
};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn sleep_call(id: &str, ms: u64) -> ToolCall {
    ToolCall::new(id, "sleep", json!({"ms": ms, "tag": id}))
}

fn sleep_registry() -> (Registry, common::Sleep) {
    let sleep = common::Sleep::default();
    let registry = Registry::new();
    registry.register_typed(sleep.clone()).unwrap();
    (registry, sleep)
}

#[tokio::test(start_paused = true)]
async fn a_call_past_its_timeout_is_stopped_and_told_to_cancel() {
    let (registry, sleep) = sleep_registry();
    let executor = Executor::builder(registry)
        .timeout(Duration::from_millis(50))
        .build();
    let outcome = executor
        .execute(sleep_call("t", 10_000), &CallScope::default())
        .await;
    assert!(
        matches!(outcome.result, Err(ExecError::TimedOut { after, .. }) if after == Duration::from_millis(50))
    );
    assert_eq!(
        outcome.output().to_text(),
        "tool `sleep` timed out after 50ms and was stopped"
    );
    assert_eq!(
        sleep.saw_cancel.load(Ordering::SeqCst),
        1,
        "the tool saw its token cancelled"
    );
}

#[tokio::test(start_paused = true)]
async fn a_per_tool_timeout_overrides_the_default() {
    let (registry, _) = sleep_registry();
    let executor = Executor::builder(registry)
        .timeout(Duration::from_millis(10))
        .tool_timeout("sleep", Duration::from_secs(5))
        .build();
    let outcome = executor
        .execute(sleep_call("slow-but-allowed", 1_000), &CallScope::default())
        .await;
    assert_eq!(outcome.output().to_text(), "slow-but-allowed");
}

#[tokio::test]
async fn cancelling_the_scope_stops_a_running_call() {
    let (registry, sleep) = sleep_registry();
    let executor = Executor::new(registry);
    let cancel = CancellationToken::new();
    let scope = CallScope::with_cancel(cancel.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        cancel.cancel();
    });
    let outcome = executor.execute(sleep_call("c", 60_000), &scope).await;
    canceller.await.unwrap();
    assert!(matches!(outcome.result, Err(ExecError::Cancelled { .. })));
    assert_eq!(sleep.saw_cancel.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_call_in_an_already_cancelled_scope_never_starts() {
    let executor = Executor::new(common::registry());
    let scope = CallScope::with_cancel(CancellationToken::new());
    scope.cancel.cancel();
    let outcome = executor
        .execute(ToolCall::new("1", "echo", json!({"text": "x"})), &scope)
        .await;
    assert!(matches!(outcome.result, Err(ExecError::Cancelled { .. })));
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_output_naming_it() {
    let executor = Executor::new(common::registry());
    let outcome = executor
        .execute(
            ToolCall::new("1", "explode", json!({})),
            &CallScope::default(),
        )
        .await;
    let output = outcome.output();
    assert!(output.is_error);
    assert_eq!(
        output.to_text(),
        "tool `explode` panicked: boom in the tool"
    );
    // The executor is unharmed.
    let next = executor
        .execute(
            ToolCall::new("2", "echo", json!({"text": "still here"})),
            &CallScope::default(),
        )
        .await;
    assert_eq!(next.output().to_text(), "still here");
}

#[tokio::test]
async fn multibyte_output_is_cut_on_a_char_boundary_with_a_marker() {
    let executor = Executor::builder(common::registry())
        .max_output_bytes(10)
        .build();
    // "日" is 3 bytes: 10 bytes hold three of them and a third of a fourth.
    let outcome = executor
        .execute(
            ToolCall::new("1", "big", json!({"unit": "日", "times": 100})),
            &CallScope::default(),
        )
        .await;
    let output = outcome.result.unwrap();
    assert_eq!(output.content[0].as_text(), Some("日日日"));
    assert_eq!(
        output.content[1].as_text(),
        Some("\n[output truncated: 291 bytes omitted; the limit is 10 bytes]")
    );
    assert_eq!(
        output.metadata[TRUNCATED_METADATA_KEY]["omitted_bytes"],
        291
    );
}

#[tokio::test]
async fn progress_and_partial_output_reach_the_scope_tagged_with_the_call() {
    let executor = Executor::new(common::registry());
    let (tx, mut rx) = mpsc::channel(8);
    let scope = CallScope {
        cancel: CancellationToken::new(),
        progress: ProgressSender::new(tx),
        effects: None,
    };
    let outcome = executor
        .execute(
            ToolCall::new("p1", "big", json!({"unit": "a", "times": 2})),
            &scope,
        )
        .await;
    assert_eq!(outcome.output().to_text(), "aa");
    drop(scope);
    let mut updates = Vec::new();
    while let Some(event) = rx.recv().await {
        assert_eq!((event.call_id.as_str(), event.tool.as_str()), ("p1", "big"));
        updates.push(event.update);
    }
    assert_eq!(
        updates,
        [
            ToolUpdate::Output {
                text: "starting".into()
            },
            ToolUpdate::Progress {
                progress: 1.0,
                total: Some(2.0),
                message: Some("halfway".into())
            },
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn batch_results_come_back_in_call_order() {
    let (registry, _) = sleep_registry();
    let executor = Executor::new(registry);
    // Later calls finish first.
    let calls = (0..8)
        .map(|i| sleep_call(&format!("c{i}"), 80 - i * 10))
        .collect();
    let outcomes = executor.execute_batch(calls, &CallScope::default()).await;
    let tags: Vec<String> = outcomes.iter().map(|o| o.output().to_text()).collect();
    assert_eq!(tags, ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"]);
}

#[tokio::test(start_paused = true)]
async fn fifty_sleeping_calls_run_concurrently() {
    let (registry, _) = sleep_registry();
    let executor = Executor::builder(registry).concurrency(50).build();
    let calls = (0..50).map(|i| sleep_call(&format!("c{i}"), 100)).collect();
    let started = tokio::time::Instant::now();
    let outcomes = executor.execute_batch(calls, &CallScope::default()).await;
    // Tokio's clock is paused and advances only as timers fire, so this measures scheduling,
    // not machine speed: run one after another the calls would take 5 s.
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "took {:?}",
        started.elapsed()
    );
    assert!(outcomes.iter().all(|o| !o.is_error()));
}

#[tokio::test(start_paused = true)]
async fn the_concurrency_limit_bounds_a_batch() {
    let (registry, _) = sleep_registry();
    let executor = Executor::builder(registry).concurrency(2).build();
    let calls = (0..6).map(|i| sleep_call(&format!("c{i}"), 100)).collect();
    let started = tokio::time::Instant::now();
    executor.execute_batch(calls, &CallScope::default()).await;
    // Six calls two at a time take three rounds of 100 ms on the paused clock.
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn one_failing_call_in_a_batch_does_not_affect_the_others() {
    let executor = Executor::new(common::registry());
    let calls = vec![
        ToolCall::new("1", "echo", json!({"text": "a"})),
        ToolCall::new("2", "explode", json!({})),
        ToolCall::new("3", "missing", json!({})),
        ToolCall::new("4", "echo", json!({"text": "b"})),
    ];
    let outcomes = executor.execute_batch(calls, &CallScope::default()).await;
    let kinds: Vec<&str> = outcomes
        .iter()
        .map(|o| o.result.as_ref().err().map_or("ok", ExecError::kind))
        .collect();
    assert_eq!(kinds, ["ok", "panicked", "unknown_tool", "ok"]);
    assert_eq!(outcomes[3].output().to_text(), "b");
}

/// Sleeps for a minute; sets its flag when its future is dropped.
struct Dropped(Arc<AtomicBool>);

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl TypedTool for Dropped {
    type Args = common::NoArgs;
    const NAME: &'static str = "dropped";
    fn description(&self) -> String {
        "Sleeps until dropped".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn call(&self, _: common::NoArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        let _guard = SetOnDrop(Arc::clone(&self.0));
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok(ToolOutput::default())
    }
}

#[tokio::test]
async fn dropping_an_execute_future_aborts_the_tool() {
    let dropped = Arc::new(AtomicBool::new(false));
    let registry = Registry::new();
    registry
        .register_typed(Dropped(Arc::clone(&dropped)))
        .unwrap();
    let executor = Executor::new(registry);
    let scope = CallScope::default();
    let running = executor.execute(ToolCall::new("1", "dropped", json!({})), &scope);
    // Poll long enough for the tool to start, then give up on it.
    assert!(
        tokio::time::timeout(Duration::from_millis(50), running)
            .await
            .is_err()
    );
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(
        dropped.load(Ordering::SeqCst),
        "the tool's task was aborted, not left running"
    );
}

/// A tool whose call panics where the executor starts it (`Tool::call_shared`), or in its
/// first poll, depending on `when`.
struct Explodes {
    spec: mux_tool::ToolSpec,
    when: &'static str,
}

impl Explodes {
    fn new(name: &str, when: &'static str) -> Self {
        let spec = mux_tool::ToolSpec::new(name, "Panics", json!({"type": "object"}))
            .unwrap()
            .with_annotations(ToolAnnotations::read_only());
        Self { spec, when }
    }
}

impl mux_tool::Tool for Explodes {
    fn spec(&self) -> &mux_tool::ToolSpec {
        &self.spec
    }

    fn call(
        &self,
        _input: serde_json::Value,
        _cx: ToolContext,
    ) -> mux_tool::BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async { panic!("exploded while running") })
    }

    fn call_shared(
        self: Arc<Self>,
        input: &serde_json::Value,
        cx: ToolContext,
    ) -> mux_tool::BoxFuture<'static, Result<ToolOutput, ToolError>> {
        assert!(self.when != "start", "exploded while starting");
        let input = input.clone();
        Box::pin(async move { self.call(input, cx).await })
    }
}

#[tokio::test]
async fn a_tool_that_panics_as_its_call_starts_or_runs_is_a_panicked_error() {
    let registry = Registry::new();
    registry
        .register(Explodes::new("explodes_at_start", "start"))
        .unwrap();
    registry
        .register(Explodes::new("explodes_running", "run"))
        .unwrap();
    registry.register_typed(common::Echo).unwrap();
    let executor = Executor::new(registry);
    for (tool, message) in [
        ("explodes_at_start", "exploded while starting"),
        ("explodes_running", "exploded while running"),
    ] {
        let outcome = executor
            .execute(ToolCall::new("p", tool, json!({})), &CallScope::default())
            .await;
        match outcome.result {
            Err(ExecError::Panicked {
                tool: named,
                message: said,
            }) => {
                assert_eq!((named.as_str(), said.as_str()), (tool, message));
            }
            other => panic!("{tool}: expected a panic error, got {other:?}"),
        }
    }
    // The executor is unharmed, and a typed tool's call keeps its arguments whole.
    let input = json!({"text": "still here"});
    let outcome = executor
        .execute(
            ToolCall::new("e", "echo", input.clone()),
            &CallScope::default(),
        )
        .await;
    assert_eq!(outcome.output().to_text(), "still here");
    assert_eq!(outcome.call.input, input);
}
