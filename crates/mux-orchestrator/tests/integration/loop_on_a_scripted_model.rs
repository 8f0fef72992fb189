//! The whole loop on a scripted model: turns, tool calls, event order, limits, continuation.

use crate::common;

use common::*;
use mux_llm::{ContentBlock, Role};
use mux_orchestrator::{LoopError, LoopEvent, OrchestratorConfig};
use serde_json::json;

#[tokio::test]
async fn a_tool_turn_then_an_answer_pairs_every_call_with_its_result() {
    let model = scripted()
        .reply(tool_calls(&[
            ("c1", "echo", json!({"text": "one"})),
            ("c2", "echo", json!({"text": "two"})),
        ]))
        .reply(text("done"));
    let agent = orchestrator(model.clone());
    let (events, outcome) = drain(agent.run("go").unwrap()).await;
    let summary = outcome.unwrap();

    assert_eq!(summary.text, "done");
    assert_eq!(summary.iterations, 2);
    assert_eq!(
        summary
            .tool_calls
            .iter()
            .map(|c| c.output.to_text())
            .collect::<Vec<_>>(),
        ["one", "two"]
    );
    assert_eq!(summary.usage.input_tokens, 30);
    insta::assert_json_snapshot!("tool_turn_then_answer", labels(&events));

    // The second request carries the tool results, in call order, paired by id.
    let requests = model.requests();
    let last = requests[1].messages.last().unwrap();
    assert_eq!(last.role, Role::User);
    let ids: Vec<&str> = last
        .content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ids, ["c1", "c2"]);
    // The tools go out sorted by name, ask_user included.
    let names: Vec<String> = requests[0]
        .tools
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(names, ["Bash", "ask_user", "broken", "echo", "sleep"]);
}

#[tokio::test]
async fn the_conversation_continues_across_runs() {
    let model = scripted()
        .reply(text("first answer"))
        .reply(text("second answer"));
    let agent = orchestrator(model.clone());
    assert_eq!(
        agent.run_to_completion("first").await.unwrap().text,
        "first answer"
    );
    assert_eq!(
        agent.run_to_completion("second").await.unwrap().text,
        "second answer"
    );
    let texts: Vec<String> = model.requests()[1]
        .messages
        .iter()
        .map(|m| m.text())
        .collect();
    assert_eq!(texts, ["first", "first answer", "second"]);
    assert_eq!(agent.messages().len(), 4);
    assert_eq!(agent.usage().input_tokens, 40);
}

#[tokio::test]
async fn exceeding_max_iterations_is_a_typed_error() {
    let model =
        scripted().respond_with(|_| Ok(tool_calls(&[("c", "echo", json!({"text": "again"}))])));
    let agent = loop_agent(model, OrchestratorConfig::new("m").max_iterations(3))
        .tools(registry().list())
        .conversation();
    let (events, outcome) = drain(agent.run("loop forever").unwrap()).await;
    assert!(matches!(outcome, Err(LoopError::MaxIterations(3))));
    assert_eq!(labels(&events).last().unwrap(), "error max_iterations");
    // The conversation stays consistent: the last tool_use has its result.
    let messages = agent.messages();
    assert!(matches!(
        messages.last().unwrap().content[0],
        ContentBlock::ToolResult { .. }
    ));
}

#[tokio::test]
async fn the_same_failure_repeated_stops_the_run() {
    let model =
        scripted().respond_with(|_| Ok(tool_calls(&[("c", "broken", json!({"text": "x"}))])));
    let agent = orchestrator(model);
    let (_, outcome) = drain(agent.run("try").unwrap()).await;
    let err = outcome.unwrap_err();
    assert!(
        matches!(&err, LoopError::FailureLoop { tool, count: 3, .. } if tool == "broken"),
        "{err}"
    );
    assert!(err.to_string().contains("disk full"));
}

#[tokio::test]
async fn a_second_run_while_one_is_going_is_refused() {
    let model = scripted()
        .reply(tool_calls(&[("c", "sleep", json!({"ms": 200}))]))
        .reply(text("ok"));
    let agent = orchestrator(model);
    let run = agent.run("a").unwrap();
    assert!(matches!(agent.run("b"), Err(LoopError::AlreadyRunning)));
    drain(run).await.1.unwrap();
    assert!(!agent.is_running());
}

#[tokio::test]
async fn subscribers_see_the_same_events() {
    let model = scripted().reply(text("hi"));
    let agent = orchestrator(model);
    let mut subscription = agent.subscribe();
    let (events, _) = drain(agent.run("x").unwrap()).await;
    let mut seen = Vec::new();
    while seen.len() < events.len() {
        seen.push(subscription.recv().await.unwrap());
    }
    assert_eq!(seen, events);
}

#[tokio::test]
async fn a_slow_subscriber_is_told_how_many_events_it_missed() {
    let model = scripted()
        .reply(tool_calls(&[("c", "echo", json!({"text": "x"}))]))
        .reply(text("hi"));
    let mut config = OrchestratorConfig::new("m");
    config.broadcast_capacity = 2;
    let agent = loop_agent(model, config)
        .tools(registry().list())
        .conversation();
    let mut subscription = agent.subscribe();
    let (events, _) = drain(agent.run("x").unwrap()).await;
    let first = subscription.recv().await.unwrap();
    let LoopEvent::Lagged { missed } = first else {
        panic!("expected a lag report, got {first:?}")
    };
    // Nothing is lost without being counted: missed + what is still buffered = all events.
    let mut rest = 0;
    while let Ok(Some(_)) =
        tokio::time::timeout(std::time::Duration::from_millis(50), subscription.recv()).await
    {
        rest += 1;
    }
    assert_eq!(missed as usize + rest, events.len());
}

#[tokio::test]
async fn invalid_tool_arguments_reach_the_model_as_an_error_result() {
    let model = scripted()
        .reply(tool_calls(&[("c1", "echo", json!({"txt": "typo"}))]))
        .reply(text("fixed"));
    let agent = orchestrator(model);
    let summary = agent.run_to_completion("go").await.unwrap();
    let output = &summary.tool_calls[0].output;
    assert!(output.is_error);
    assert!(output.to_text().contains("\"text\" is a required property"));
}

#[tokio::test]
async fn a_queued_user_message_joins_the_next_turn() {
    let model = scripted()
        .reply(tool_calls(&[("c", "sleep", json!({"ms": 50}))]))
        .reply(text("saw it"));
    let agent = orchestrator(model.clone());
    let run = agent.run("start").unwrap();
    run.input
        .send(mux_orchestrator::LoopInput::UserMessage {
            text: "also this".into(),
        })
        .await;
    drain(run).await.1.unwrap();
    let last = model.requests()[1].messages.last().unwrap().clone();
    assert_eq!(last.content.last().unwrap().as_text(), Some("also this"));
}
