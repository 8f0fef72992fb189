//! Budgets through the web face: a served AG-UI run that reaches a `RunLimits` limit ends with
//! `CUSTOM mux.limit_reached` (which limit, the figures) and then `RUN_FINISHED`, driven over
//! HTTP and SSE on loopback.

use std::time::Duration;

use mux_orchestrator::{Agent, ModelPrice, PriceTable, RunLimits};
use mux_web::{AguiRouter, WebConfig};
use serde_json::{Value, json};

use crate::common::{Tick, calling_until, events_within};

/// A server whose runs have `limits`; aborted on drop.
struct Server {
    url: String,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(limits: RunLimits) -> Server {
    // The model calls `tick` until it has 5 results, then answers; every reply costs 10 input
    // and 5 output tokens.
    let agent = Agent::builder(calling_until("tick", "call_", 5, "Ticked."), "scripted")
        .limits(limits)
        .build()
        .unwrap();
    let router = AguiRouter::new(move |tools: mux_tool::Registry| {
        tools
            .register(Tick::new(Duration::from_millis(100)))
            .unwrap();
        agent.conversation_with(tools)
    })
    .config(WebConfig::default())
    .build();
    let listener = mux_web::bind(0).await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(mux_web::serve(listener, router));
    Server { url, task }
}

/// Posts one run and returns its SSE events.
async fn run(server: &Server, thread: &str) -> Vec<Value> {
    let input = json!({
        "threadId": thread,
        "runId": format!("{thread}-run"),
        "messages": [{"id": "u1", "role": "user", "content": "tick five times"}],
    });
    let response = reqwest::Client::new()
        .post(format!("{}/agui", server.url))
        .json(&input)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    events_within(response, Duration::from_secs(30)).await
}

/// How a run's tool calls went: how many `tick`s ran, and how many the budget refused (they
/// still get a result, "not run: …", so no call is left without one).
#[derive(Debug, PartialEq)]
struct Calls {
    ran: usize,
    refused: usize,
}

/// The run's end: the limit named in `CUSTOM mux.limit_reached`, then `RUN_FINISHED`, last;
/// and how its tool calls went.
fn ending(events: &[Value]) -> (Value, Calls) {
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let n = events.len();
    assert!(n >= 2, "{types:?}");
    assert_eq!(types[n - 1], "RUN_FINISHED", "{types:?}");
    assert_eq!(types[n - 2], "CUSTOM", "{types:?}");
    assert_eq!(
        events[n - 2]["name"],
        "mux.limit_reached",
        "{:?}",
        events[n - 2]
    );
    assert_eq!(
        types.iter().filter(|t| **t == "RUN_FINISHED").count(),
        1,
        "{types:?}"
    );
    assert!(!types.contains(&"RUN_ERROR"), "{types:?}");
    let results: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "TOOL_CALL_RESULT")
        .map(|e| e["content"].as_str().unwrap_or_default())
        .collect();
    let calls = Calls {
        ran: results.iter().filter(|r| r.starts_with("tick")).count(),
        refused: results
            .iter()
            .filter(|r| r.starts_with("not run: "))
            .count(),
    };
    assert_eq!(calls.ran + calls.refused, results.len(), "{results:?}");
    (events[n - 2]["value"].clone(), calls)
}

#[tokio::test]
async fn a_tool_call_limit_ends_the_run_after_the_allowed_calls() {
    let server = serve(RunLimits::new().tool_calls(2)).await;
    let (limit, calls) = ending(&run(&server, "tools").await);
    assert_eq!(limit["kind"], "max_tool_calls", "{limit}");
    assert_eq!(limit["max"], 2, "{limit}");
    assert_eq!(calls, Calls { ran: 2, refused: 1 });
}

#[tokio::test]
async fn a_model_call_limit_ends_the_run_before_the_next_call() {
    let server = serve(RunLimits::new().model_calls(3)).await;
    let (limit, calls) = ending(&run(&server, "calls").await);
    assert_eq!(limit["kind"], "max_model_calls", "{limit}");
    assert_eq!(limit["max"], 3, "{limit}");
    // The third call's tick would need a fourth model call to be read: it is not run.
    assert_eq!(calls, Calls { ran: 2, refused: 1 });
}

#[tokio::test]
async fn an_input_token_limit_ends_the_run_once_spent() {
    // 10 input tokens per call: the second call reaches 20 > 15.
    let server = serve(RunLimits::new().input_tokens(15)).await;
    let (limit, calls) = ending(&run(&server, "input").await);
    assert_eq!(limit["kind"], "max_input_tokens", "{limit}");
    assert_eq!(limit["max"], 15, "{limit}");
    assert_eq!(limit["used"], 20, "{limit}");
    assert_eq!(calls, Calls { ran: 1, refused: 1 });
}

#[tokio::test]
async fn a_cost_limit_ends_the_run_once_spent() {
    // $1 per million input and output tokens: 15 tokens a call is $0.000015, so the second
    // call brings the run to $0.00003, past $0.00002.
    let prices = PriceTable::new().price("scripted", ModelPrice::per_million(1.0, 1.0));
    let server = serve(RunLimits::new().cost_usd(0.00002, prices)).await;
    let (limit, calls) = ending(&run(&server, "cost").await);
    assert_eq!(limit["kind"], "max_cost", "{limit}");
    let spent = limit["spent_usd"].as_f64().unwrap();
    assert!((spent - 0.00003).abs() < 1e-12, "{limit}");
    assert_eq!(calls, Calls { ran: 1, refused: 1 });
}

#[tokio::test]
async fn a_wall_time_limit_ends_a_run_that_runs_long() {
    // Five ticks take 500 ms; the run may take 250.
    let server = serve(RunLimits::new().wall_time(Duration::from_millis(250))).await;
    let (limit, calls) = ending(&run(&server, "time").await);
    assert_eq!(limit["kind"], "max_wall_time", "{limit}");
    assert_eq!(limit["max_ms"], 250, "{limit}");
    assert!(calls.ran < 5, "the run stopped early: {calls:?}");
}
