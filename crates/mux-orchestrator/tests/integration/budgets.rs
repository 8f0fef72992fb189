//! Budgets: each limit stops a scripted run at the right point, with the right reason, and
//! leaves no tool call without a result.

use crate::common;

use std::time::Duration;

use common::*;
use mux_llm::testing::ScriptedClient;
use mux_llm::{ContentBlock, Message};
use mux_orchestrator::{
    LimitReached, LoopError, LoopEvent, ModelPrice, Orchestrator, OrchestratorConfig, PriceTable,
    RunLimits,
};
use serde_json::json;

fn limited(model: ScriptedClient, limits: RunLimits) -> Orchestrator {
    loop_agent(model, OrchestratorConfig::new("test-model").limits(limits))
        .tools(registry().list())
        .conversation()
}

fn echo(id: &str, text: &str) -> (String, String, serde_json::Value) {
    (id.to_owned(), "echo".to_owned(), json!({"text": text}))
}

fn calls(list: &[(String, String, serde_json::Value)]) -> mux_llm::Response {
    let borrowed: Vec<(&str, &str, serde_json::Value)> = list
        .iter()
        .map(|(id, name, input)| (id.as_str(), name.as_str(), input.clone()))
        .collect();
    tool_calls(&borrowed)
}

/// Every tool_use in the conversation has a tool_result.
fn every_call_answered(messages: &[Message]) -> bool {
    let uses: Vec<&str> = messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|b| match b {
            ContentBlock::ToolUse { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    uses.iter().all(|id| {
        messages
            .iter()
            .flat_map(|m| &m.content)
            .any(|b| matches!(b, ContentBlock::ToolResult { tool_use_id, .. } if tool_use_id == id))
    })
}

#[tokio::test]
async fn the_tool_call_limit_runs_what_it_allows_and_refuses_the_rest_with_results() {
    let model = scripted()
        .reply(calls(&[echo("c1", "one"), echo("c2", "two")]))
        .reply(text("never asked"));
    let agent = limited(model.clone(), RunLimits::new().tool_calls(1));
    let (events, outcome) = drain(agent.run("go").unwrap()).await;
    let summary = outcome.unwrap();

    assert_eq!(summary.limit, Some(LimitReached::ToolCalls { max: 1 }));
    assert_eq!(model.requests().len(), 1, "no model call after the limit");
    let outputs: Vec<(bool, String)> = summary
        .tool_calls
        .iter()
        .map(|c| (c.output.is_error, c.output.to_text()))
        .collect();
    assert_eq!(outputs[0], (false, "one".to_owned()));
    assert!(outputs[1].0);
    assert!(
        outputs[1].1.contains("tool call limit (1)"),
        "{:?}",
        outputs[1]
    );
    assert!(every_call_answered(&agent.messages()));
    let last = labels(&events).last().cloned().unwrap();
    assert_eq!(last, "finished 1 \"\" limit=max_tool_calls");
}

#[tokio::test]
async fn the_model_call_limit_stops_before_the_next_call_and_answers_the_pending_calls() {
    let model = scripted()
        .reply(calls(&[echo("c1", "one")]))
        .reply(calls(&[echo("c2", "two")]))
        .reply(text("never asked"));
    let agent = limited(model.clone(), RunLimits::new().model_calls(2));
    let summary = agent.run_to_completion("go").await.unwrap();

    assert_eq!(summary.limit, Some(LimitReached::ModelCalls { max: 2 }));
    assert_eq!(summary.iterations, 2);
    assert_eq!(model.requests().len(), 2);
    // c1 ran; c2 was asked for by the last allowed call and is refused, with a result.
    assert!(!summary.tool_calls[0].output.is_error);
    assert!(summary.tool_calls[1].output.is_error);
    assert!(every_call_answered(&agent.messages()));
}

#[tokio::test]
async fn token_limits_stop_the_run_and_lower_each_calls_max_tokens() {
    // Each tool turn spends 10 input and 5 output tokens.
    let model = scripted()
        .reply(calls(&[echo("c1", "one")]))
        .reply(calls(&[echo("c2", "two")]))
        .reply(text("never asked"));
    let agent = limited(model.clone(), RunLimits::new().output_tokens(8));
    let summary = agent.run_to_completion("go").await.unwrap();
    assert_eq!(
        summary.limit,
        Some(LimitReached::OutputTokens { max: 8, used: 10 })
    );
    let max_tokens: Vec<u32> = model.requests().iter().map(|r| r.max_tokens).collect();
    assert_eq!(max_tokens, [8, 3], "each call may spend only what is left");
    assert!(every_call_answered(&agent.messages()));

    let model = scripted()
        .reply(calls(&[echo("c1", "one")]))
        .reply(text("never asked"));
    let agent = limited(model.clone(), RunLimits::new().input_tokens(10));
    let summary = agent.run_to_completion("go").await.unwrap();
    assert_eq!(
        summary.limit,
        Some(LimitReached::InputTokens { max: 10, used: 10 })
    );
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn the_cost_limit_prices_each_call_and_an_unpriced_model_fails_closed() {
    // 10 input tokens at $100/M and 5 output tokens at $200/M: $0.002 per tool turn.
    let prices = PriceTable::new().price("test-model", ModelPrice::per_million(100.0, 200.0));
    let model = scripted()
        .reply(calls(&[echo("c1", "one")]))
        .reply(calls(&[echo("c2", "two")]))
        .reply(text("never asked"));
    let agent = limited(model.clone(), RunLimits::new().cost_usd(0.003, prices));
    let summary = agent.run_to_completion("go").await.unwrap();
    match summary.limit {
        Some(LimitReached::Cost { max_usd, spent_usd }) => {
            assert!((max_usd - 0.003).abs() < 1e-12);
            assert!((spent_usd - 0.004).abs() < 1e-12, "{spent_usd}");
        }
        other => panic!("expected the cost limit, got {other:?}"),
    }
    assert_eq!(model.requests().len(), 2);

    let model = scripted().reply(text("never asked"));
    let agent = limited(
        model.clone(),
        RunLimits::new().cost_usd(1.0, PriceTable::new()),
    );
    let outcome = agent.run_to_completion("go").await;
    assert!(
        matches!(&outcome, Err(LoopError::Unpriced { model }) if model == "test-model"),
        "{outcome:?}"
    );
    assert!(model.requests().is_empty(), "no call is made unpriced");
}

#[tokio::test]
async fn the_wall_time_limit_stops_a_streaming_call_and_keeps_nothing_of_it() {
    let model = scripted()
        .reply(text("one two three four five six seven eight nine ten"))
        .stream_words(Duration::from_millis(200));
    let agent = limited(
        model.clone(),
        RunLimits::new().wall_time(Duration::from_millis(50)),
    );
    let (events, outcome) = drain(agent.run("go").unwrap()).await;
    let summary = outcome.unwrap();
    assert_eq!(summary.limit, Some(LimitReached::WallTime { max_ms: 50 }));
    // Only the prompt is kept: no partial assistant message.
    assert_eq!(agent.messages().len(), 1);
    assert!(matches!(
        events.last(),
        Some(LoopEvent::Finished {
            limit: Some(LimitReached::WallTime { .. }),
            ..
        })
    ));
}

#[tokio::test]
async fn a_run_without_limits_is_unchanged() {
    let model = scripted()
        .reply(calls(&[echo("c1", "one")]))
        .reply(text("done"));
    let agent = limited(model, RunLimits::new());
    let summary = agent.run_to_completion("go").await.unwrap();
    assert_eq!(summary.limit, None);
    assert_eq!(summary.text, "done");
}
