//! The console face: rendering a scripted event sequence (snapshot), approval prompts answered
//! from the input, Ctrl+C, exit/quit in any case, end of input.

use crate::common;

use std::sync::atomic::Ordering;

use common::{Shell, Stalls, tool_call};
use mux_agents::{
    AgentDefinition, AgentEvent, AgentId, AgentRuntime, AgentSession, Console, ConsoleExit,
    ConsoleRenderer, Keys, ScriptedInput,
};
use mux_llm::Usage;
use mux_llm::testing::ScriptedClient;
use mux_orchestrator::Agent;
use mux_orchestrator::LoopEvent;
use mux_tool::{Registry, Subject, ToolOutput};
use serde_json::json;

fn id(text: &str) -> AgentId {
    serde_json::from_value(json!(text)).unwrap()
}

#[test]
fn a_scripted_event_sequence_renders_as_expected() {
    let events = vec![
        AgentEvent::Loop(LoopEvent::ThinkingDelta {
            thinking: "The user wants files.".into(),
        }),
        AgentEvent::Loop(LoopEvent::TextDelta {
            text: "Let me ".into(),
        }),
        AgentEvent::Loop(LoopEvent::TextDelta {
            text: "look.".into(),
        }),
        AgentEvent::Loop(LoopEvent::ToolCallStarted {
            call_id: "c1".into(),
            name: "shell".into(),
        }),
        AgentEvent::Loop(LoopEvent::ToolCallArguments {
            call_id: "c1".into(),
            name: "shell".into(),
            input: json!({"command": "ls -la"}),
        }),
        AgentEvent::Loop(LoopEvent::ApprovalRequired {
            call_id: "c1".into(),
            name: "shell".into(),
            input: json!({"command": "ls -la"}),
            subject: Subject::command("ls -la"),
            reason: "no rule allows it".into(),
            preview: None,
        }),
        AgentEvent::Loop(LoopEvent::ToolApproved {
            call_id: "c1".into(),
            always: false,
        }),
        AgentEvent::Loop(LoopEvent::ToolResult {
            call_id: "c1".into(),
            name: "shell".into(),
            output: ToolOutput::text(
                (1..=12)
                    .map(|i| format!("file{i}"))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
        }),
        AgentEvent::SubagentSpawned {
            id: id("agent-2"),
            agent: "explorer".into(),
            depth: 1,
        },
        AgentEvent::Subagent {
            id: id("agent-2"),
            agent: "explorer".into(),
            event: LoopEvent::TextDelta {
                text: "hidden: summed up below".into(),
            },
        },
        AgentEvent::Subagent {
            id: id("agent-2"),
            agent: "explorer".into(),
            event: LoopEvent::ToolResult {
                call_id: "e1".into(),
                name: "read".into(),
                output: ToolOutput::error("no such file: a.txt"),
            },
        },
        AgentEvent::SubagentComplete {
            id: id("agent-2"),
            agent: "explorer".into(),
            result: Ok("Found 12 files.\nDetails follow.".into()),
        },
        AgentEvent::Loop(LoopEvent::ToolDenied {
            call_id: "c2".into(),
            reason: "denied by the user".into(),
        }),
        AgentEvent::Loop(LoopEvent::TextDelta {
            text: "There are 12 files.".into(),
        }),
        AgentEvent::Loop(LoopEvent::Usage {
            turn: Usage::default(),
            total: Usage::default(),
        }),
        AgentEvent::Loop(LoopEvent::Finished {
            text: "There are 12 files.".into(),
            iterations: 2,
            usage: Usage::default(),
            limit: None,
        }),
        AgentEvent::Lagged { missed: 3 },
    ];
    let render = |thinking: bool| {
        let mut renderer = ConsoleRenderer::new(Vec::new()).show_thinking(thinking);
        for event in &events {
            renderer.render(event).unwrap();
        }
        String::from_utf8(renderer.into_inner()).unwrap()
    };
    insta::assert_snapshot!("scripted_events", render(true));
    let hidden = render(false);
    assert!(!hidden.contains("The user wants files"));
    assert!(hidden.starts_with("Let me look.\n* shell"));
}

#[tokio::test]
async fn the_console_asks_for_approval_and_leaves_on_exit_in_any_case() {
    let client = ScriptedClient::new()
        .reply(tool_call("c1", "shell", json!({"command": "ls"})))
        .reply_text("Two files.")
        .reply(tool_call("c2", "shell", json!({"command": "rm -rf /"})))
        .reply_text("Not removed.");
    let shell = Shell::default();
    let tools = Registry::new();
    tools.register_typed(shell.clone()).unwrap();
    let runtime = AgentRuntime::builder(
        Agent::builder(client, "m")
            .tools(tools.list())
            .build()
            .unwrap(),
    )
    .build();
    let agent = runtime
        .spawn(AgentDefinition::new("console"), AgentSession::New)
        .await
        .unwrap();
    let input = ScriptedInput::lines([
        "what is here?",
        "maybe",
        "o",
        "",
        "remove it",
        "d",
        "ExIt",
        "never read",
    ]);
    let mut console = Console::new(input, ConsoleRenderer::new(Vec::new())).echo(true);
    let exit = console.run(&runtime, &agent).await.unwrap();
    assert_eq!(exit, ConsoleExit::Quit);
    assert_eq!(
        shell.calls.load(Ordering::SeqCst),
        1,
        "only the approved call ran"
    );
    let output = String::from_utf8(console.into_renderer().into_inner()).unwrap();
    insta::assert_snapshot!("approval_session", output);
}

#[tokio::test]
async fn ctrl_c_cancels_the_run_and_end_of_input_ends_gracefully() {
    let runtime = AgentRuntime::builder(Agent::builder(Stalls, "m").build().unwrap()).build();
    let agent = runtime
        .spawn(AgentDefinition::new("console"), AgentSession::New)
        .await
        .unwrap();
    let input = ScriptedInput::new([Keys::CtrlC, Keys::Line("go".into()), Keys::CtrlC]);
    let mut console = Console::new(input, ConsoleRenderer::new(Vec::new())).echo(true);
    let exit = console.run(&runtime, &agent).await.unwrap();
    assert_eq!(exit, ConsoleExit::EndOfInput);
    let output = String::from_utf8(console.into_renderer().into_inner()).unwrap();
    assert!(
        output.contains("^C (type exit or quit to leave)"),
        "{output}"
    );
    assert!(output.contains("> go\n^C\n(cancelled)\n"), "{output}");
    assert_eq!(
        agent.state(),
        mux_agents::AgentState::Idle,
        "the agent survives"
    );

    let input = ScriptedInput::lines(["QUIT"]);
    let mut console = Console::new(input, ConsoleRenderer::new(Vec::new())).echo(true);
    assert_eq!(
        console.run(&runtime, &agent).await.unwrap(),
        ConsoleExit::Quit
    );
}
