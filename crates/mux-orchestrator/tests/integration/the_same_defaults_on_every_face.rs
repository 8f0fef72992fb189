//! One default wherever an agent runs with no permission policy: read-only tools run (a fetch
//! too), any other call asks a face that can ask, and without one is denied and listed in
//! `RunSummary::unapproved`. The editor face's half is in mux-acp's tests.

use std::sync::atomic::Ordering;

use crate::common::*;
use mux_orchestrator::{Agent, Answer, LoopEvent, LoopInput, Run};
use serde_json::json;

/// A model that fetches, then runs a command, then answers.
fn model() -> mux_llm::testing::ScriptedClient {
    scripted()
        .reply(tool_calls(&[
            ("c1", "web_fetch", json!({"url": "https://example.com/"})),
            ("c2", "Bash", json!({"command": "ls"})),
        ]))
        .reply(text("done"))
}

fn agent(fetch: &Fetch, shell: &Shell) -> Agent {
    Agent::builder(model(), "m")
        .tool(fetch.clone())
        .tool(shell.clone())
        .build()
        .unwrap()
}

#[tokio::test]
async fn without_a_face_the_fetch_runs_and_the_command_is_denied_and_listed() {
    let (fetch, shell) = (Fetch::default(), Shell::default());
    let summary = agent(&fetch, &shell).run("go").await.unwrap();
    assert_eq!(fetch.calls.load(Ordering::SeqCst), 1);
    assert_eq!(shell.calls.load(Ordering::SeqCst), 0);
    let unapproved: Vec<_> = summary.unapproved.iter().map(|u| u.tool.as_str()).collect();
    assert_eq!(unapproved, ["Bash"]);
    assert!(
        summary.unapproved[0].reason.contains("not read-only"),
        "{:?}",
        summary.unapproved
    );
}

#[tokio::test]
async fn a_face_that_can_ask_is_asked_about_the_command_only() {
    let (fetch, shell) = (Fetch::default(), Shell::default());
    let Run {
        mut events,
        input,
        handle,
    } = agent(&fetch, &shell).stream("go").unwrap();
    let mut asked = Vec::new();
    while let Some(event) = events.recv().await {
        if let LoopEvent::ApprovalRequired { call_id, name, .. } = event {
            asked.push(name);
            input
                .send(LoopInput::ToolApproval {
                    call_id,
                    answer: Answer::AllowOnce,
                })
                .await;
        }
    }
    let summary = handle.wait().await.unwrap();
    assert_eq!(asked, ["Bash"]);
    assert_eq!(fetch.calls.load(Ordering::SeqCst), 1);
    assert_eq!(shell.calls.load(Ordering::SeqCst), 1);
    assert!(summary.unapproved.is_empty());
}

#[tokio::test]
async fn every_conversation_of_an_agent_without_a_policy_gets_the_unset_policy_at_its_root() {
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::builder(scripted(), "m").build().unwrap();
    assert!(agent.permissions().is_none(), "no policy was set");
    let conversation = agent.conversation_at(dir.path()).unwrap().build();
    let policy = conversation.permissions().unwrap();
    assert!(policy.is_unset());
    assert_eq!(policy.context().root(), dir.path());
}
