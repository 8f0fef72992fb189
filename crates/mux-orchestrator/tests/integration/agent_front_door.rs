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
