//! The front door: `Agent::builder(..).model(..).tool(..).build()`, then `prompt`.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use common::*;
use mux_orchestrator::{Agent, AgentBuildError};
use mux_tool::ApprovalPolicy;
use serde_json::json;

#[tokio::test]
async fn an_agent_runs_its_tool_and_answers_and_the_conversation_goes_on() {
    let model = scripted()
        .reply_tool_call("c1", "Bash", json!({"command": "ls"}))
        .reply(text("listed"))
        .reply(text("second answer"));
    let shell = Shell::default();
    let agent = Agent::builder(model.clone())
        .model("m")
        .instructions("Be brief.")
        .tool(shell.clone())
        .approval(ApprovalPolicy::Never)
        .build()
        .unwrap();
    assert_eq!(agent.prompt("list").await.unwrap(), "listed");
    assert_eq!(shell.calls.load(Ordering::SeqCst), 1);
    let summary = agent.run("again").await.unwrap();
    assert_eq!(summary.text, "second answer");
    let requests = model.requests();
    assert_eq!(requests[0].system.as_deref(), Some("Be brief."));
    assert_eq!(
        requests[2].messages.len(),
        5,
        "the second prompt sees the first"
    );
}

#[tokio::test]
async fn without_approval_a_tool_that_is_not_read_only_is_denied_and_named() {
    let model = scripted()
        .reply_tool_call("c1", "Bash", json!({"command": "ls"}))
        .reply(text("could not"));
    let shell = Shell::default();
    let agent = Agent::builder(model)
        .model("m")
        .tool(shell.clone())
        .build()
        .unwrap();
    let summary = agent.run("list").await.unwrap();
    assert_eq!(shell.calls.load(Ordering::SeqCst), 0);
    assert_eq!(summary.unapproved.len(), 1);
    assert_eq!(summary.unapproved[0].tool, "Bash");
}

#[tokio::test]
async fn a_builder_without_a_model_or_with_a_tool_named_twice_says_why() {
    let err = Agent::builder(scripted()).build().unwrap_err();
    assert!(matches!(err, AgentBuildError::NoModel), "{err}");
    let err = Agent::builder(scripted())
        .model("m")
        .tool(Echo)
        .tool(Echo)
        .build()
        .unwrap_err();
    assert!(matches!(err, AgentBuildError::Tool(_)), "{err}");
    assert!(err.to_string().contains("echo"), "{err}");
    let tools: Vec<Arc<dyn mux_tool::Tool>> = Vec::new();
    assert!(
        Agent::builder(scripted())
            .model("m")
            .tools(tools)
            .build()
            .is_ok()
    );
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema, PartialEq)]
struct Sum {
    /// The sum.
    #[schemars(range(min = 0))]
    total: i64,
}

#[tokio::test]
async fn a_typed_answer_that_does_not_fit_goes_back_once_with_the_problem() {
    let model = scripted()
        .reply(text(r#"{"total": -4}"#))
        .reply(text(r#"{"total": 4}"#));
    let agent = Agent::builder(model.clone()).model("m").build().unwrap();
    let sum: Sum = agent.prompt_typed("2 + 2?").await.unwrap();
    assert_eq!(sum, Sum { total: 4 });
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let output = requests[0]
        .output
        .as_ref()
        .expect("the schema was asked for");
    assert_eq!(output.name, "Sum");
    let correction = requests[1].messages.last().unwrap().text();
    assert!(correction.contains("/total"), "{correction}");
    assert!(correction.contains("Sum"), "{correction}");
}

#[tokio::test]
async fn a_second_miss_is_a_typed_error_with_the_reply() {
    let model = scripted().reply(text("four")).reply(text(r#"{"sum": 4}"#));
    let agent = Agent::builder(model).model("m").build().unwrap();
    let err = agent.prompt_typed::<Sum>("2 + 2?").await.unwrap_err();
    let mux_orchestrator::LoopError::InvalidOutput {
        schema,
        problem,
        reply,
    } = &err
    else {
        panic!("expected InvalidOutput, got {err:?}");
    };
    assert_eq!(schema, "Sum");
    assert!(problem.contains("total"), "{problem}");
    assert_eq!(reply, r#"{"sum": 4}"#);
    assert_eq!(err.kind(), "invalid_output");
}

#[tokio::test]
async fn needs_approval_decides_per_call_from_the_input() {
    let model = scripted()
        .reply_tool_call("c1", "Bash", json!({"command": "ls"}))
        .reply_tool_call("c2", "Bash", json!({"command": "rm -rf build"}))
        .reply(text("done"));
    let shell = Shell::default();
    let agent = Agent::builder(model)
        .model("m")
        .tool(shell.clone())
        .needs_approval("Bash", |input| {
            input["command"]
                .as_str()
                .is_some_and(|c| c.starts_with("rm"))
        })
        .build()
        .unwrap();
    let summary = agent.run("clean").await.unwrap();
    assert_eq!(shell.calls.load(Ordering::SeqCst), 1, "only `ls` ran");
    assert_eq!(summary.unapproved.len(), 1);
    assert_eq!(summary.unapproved[0].call_id, "c2");
}
