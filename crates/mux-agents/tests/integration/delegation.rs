//! The `task` tool: delegation to a subagent, approvals reaching the parent's face, forwarded
//! events, hooks, resume by id, and the depth limit.

use crate::common;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{Shell, tool_call};
use mux_agents::{AgentDefinition, AgentEvent, AgentRuntime, AgentSession};
use mux_llm::testing::ScriptedClient;
use mux_orchestrator::hooks::SubagentEvent;
use mux_orchestrator::{Agent, Answer, Hook, HookError, Hooks, LoopEvent, LoopInput};
use mux_tool::{BoxFuture, Registry};
use serde_json::json;

const LONG: Duration = Duration::from_secs(10);

/// Records the subagent hook points.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Hook for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn subagent_start<'a>(
        &'a self,
        event: &'a SubagentEvent,
    ) -> BoxFuture<'a, Result<(), HookError>> {
        self.0
            .lock()
            .unwrap()
            .push(format!("start {}", event.agent));
        Box::pin(async { Ok(()) })
    }
    fn subagent_stop<'a>(
        &'a self,
        event: &'a SubagentEvent,
    ) -> BoxFuture<'a, Result<(), HookError>> {
        self.0
            .lock()
            .unwrap()
            .push(format!("stop {} {:?}", event.agent, event.result));
        Box::pin(async { Ok(()) })
    }
}

#[tokio::test]
async fn a_subagent_runs_its_task_with_approvals_answered_by_the_parents_face() {
    // One scripted model serves both agents, in the order they call it.
    let client = ScriptedClient::new()
        .reply(tool_call(
            "t1",
            "task",
            json!({"agent": "worker", "prompt": "list files"}),
        ))
        .reply(tool_call("s1", "shell", json!({"command": "ls"})))
        .reply_text("two files")
        .reply_text("The worker found two files.")
        .reply(tool_call(
            "t2",
            "task",
            json!({"agent": "worker", "prompt": "and now?", "resume": "agent-2"}),
        ))
        .reply_text("still two")
        .reply_text("Still two.");
    let shell = Shell::default();
    let tools = Registry::new();
    tools.register_typed(shell.clone()).unwrap();
    let recorder = Recorder::default();
    let hooks = Hooks::new();
    hooks.add(recorder.clone());
    let runtime = AgentRuntime::builder(
        Agent::builder(client.clone(), "m")
            .tools(tools.list())
            .hooks(hooks)
            .build()
            .unwrap(),
    )
    .definition(
        AgentDefinition::new("worker")
            .description("Runs commands")
            .system_prompt("You run commands.")
            .tools(mux_tool::ToolFilter::names(["shell"]))
            .can_delegate(false),
    )
    .build();
    let lead = runtime
        .spawn(AgentDefinition::new("lead"), AgentSession::New)
        .await
        .unwrap();
    assert!(lead.orchestrator().tools().contains("task"));

    // The face: answer approvals of any agent, tagged with its id, and keep what it saw.
    let mut events = lead.subscribe();
    let face_runtime = runtime.clone();
    let face = tokio::spawn(async move {
        let mut seen = Vec::new();
        while let Some(event) = events.recv().await {
            if let AgentEvent::Subagent {
                id,
                event: LoopEvent::ApprovalRequired { call_id, .. },
                ..
            } = &event
            {
                let answered = face_runtime
                    .send(
                        id.as_str(),
                        LoopInput::ToolApproval {
                            call_id: call_id.clone(),
                            answer: Answer::AllowOnce,
                        },
                    )
                    .await;
                assert!(answered);
            }
            let done = matches!(&event, AgentEvent::Loop(LoopEvent::Finished { .. }));
            seen.push(event);
            if done {
                break;
            }
        }
        seen
    });

    let summary = lead
        .prompt("what is here?")
        .unwrap()
        .wait_timeout(LONG)
        .await
        .unwrap();
    assert_eq!(summary.text, "The worker found two files.");
    assert_eq!(
        shell.calls.load(Ordering::SeqCst),
        1,
        "the approved call ran"
    );
    let task = &summary.tool_calls[0];
    assert_eq!(task.name, "task");
    assert_eq!(task.output.to_text(), "two files");

    let seen = face.await.unwrap();
    let child = runtime
        .list()
        .into_iter()
        .find(|a| a.name() == "worker")
        .unwrap();
    assert_eq!(child.id().as_str(), "agent-2");
    assert_eq!(child.parent(), Some(lead.id()));
    let spawned = seen
        .iter()
        .position(|e| matches!(e, AgentEvent::SubagentSpawned { agent, depth: 1, .. } if agent == "worker"))
        .expect("spawned event");
    let approval = seen
        .iter()
        .position(|e| matches!(e, AgentEvent::Subagent { id, event: LoopEvent::ApprovalRequired { name, .. }, .. } if id == child.id() && name == "shell"))
        .expect("the approval request reached the parent's face, tagged");
    let output = seen
        .iter()
        .position(|e| matches!(e, AgentEvent::Subagent { event: LoopEvent::TextDelta { text }, .. } if text.contains("two")))
        .expect("subagent output forwarded");
    let complete = seen
        .iter()
        .position(|e| matches!(e, AgentEvent::SubagentComplete { result: Ok(text), .. } if text == "two files"))
        .expect("complete event");
    assert!(spawned < approval && approval < output && output < complete);

    // The child sees only its filtered tools and its own prompt.
    let child_request = &client.requests()[1];
    let names: Vec<_> = child_request
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert!(
        names.contains(&"shell") && !names.contains(&"task"),
        "{names:?}"
    );
    assert_eq!(child_request.messages[0].text(), "list files");

    // Resume by id: the same subagent continues its conversation.
    let summary = lead
        .prompt("again")
        .unwrap()
        .wait_timeout(LONG)
        .await
        .unwrap();
    assert_eq!(summary.text, "Still two.");
    assert_eq!(summary.tool_calls[0].output.to_text(), "still two");
    assert_eq!(child.orchestrator().messages().len(), 6);
    assert_eq!(runtime.count(), 2, "resuming spawned no new agent");

    assert_eq!(
        *recorder.0.lock().unwrap(),
        vec![
            "start worker",
            "stop worker Some(\"two files\")",
            "start worker",
            "stop worker Some(\"still two\")",
        ]
    );
    runtime.shutdown_all();
    runtime.wait_all(LONG).await.unwrap();
}

#[tokio::test]
async fn bad_delegations_come_back_as_tool_errors_naming_the_problem() {
    let client = ScriptedClient::new()
        .reply(tool_call(
            "t1",
            "task",
            json!({"agent": "nobody", "prompt": "x"}),
        ))
        .reply(tool_call(
            "t2",
            "task",
            json!({"agent": "w", "prompt": "x", "resume": "agent-99"}),
        ))
        .reply_text("ok");
    let runtime = AgentRuntime::builder(Agent::builder(client, "m").build().unwrap())
        .definition(AgentDefinition::new("w"))
        .build();
    let lead = runtime
        .spawn(AgentDefinition::new("lead"), AgentSession::New)
        .await
        .unwrap();
    let summary = lead.prompt("go").unwrap().wait_timeout(LONG).await.unwrap();
    let unknown = &summary.tool_calls[0].output;
    assert!(unknown.is_error);
    assert!(
        unknown
            .to_text()
            .contains("no agent definition named `nobody` (known: w)"),
        "{}",
        unknown.to_text()
    );
    let missing = &summary.tool_calls[1].output;
    assert!(missing.is_error && missing.to_text().contains("no running agent agent-99"));
    assert_eq!(runtime.count(), 1);
}

#[tokio::test]
async fn the_task_tool_stops_at_the_depth_limit() {
    // Every agent delegates to "deep" until the limit; the deepest has no task tool.
    let client = ScriptedClient::new()
        .reply(tool_call(
            "t1",
            "task",
            json!({"agent": "deep", "prompt": "1"}),
        ))
        .reply(tool_call(
            "t2",
            "task",
            json!({"agent": "deep", "prompt": "2"}),
        ))
        .reply(tool_call(
            "t3",
            "task",
            json!({"agent": "deep", "prompt": "3"}),
        ))
        .reply_text("bottom")
        .reply_text("middle")
        .reply_text("top");
    let runtime = AgentRuntime::builder(Agent::builder(client.clone(), "m").build().unwrap())
        .max_depth(2)
        .definition(AgentDefinition::new("deep"))
        .build();
    let lead = runtime
        .spawn(AgentDefinition::new("lead"), AgentSession::New)
        .await
        .unwrap();
    let summary = lead.prompt("go").unwrap().wait_timeout(LONG).await.unwrap();
    assert_eq!(summary.text, "top");
    let requests = client.requests();
    let has_task = |i: usize| requests[i].tools.iter().any(|t| t.name.as_str() == "task");
    assert!(has_task(0) && has_task(1), "depths 0 and 1 may delegate");
    assert!(!has_task(2), "depth 2 is the limit");
    // The depth-2 agent called a tool it does not have: the loop told it so.
    let refused = requests[3].messages.last().unwrap();
    assert!(format!("{refused:?}").contains("t3"), "{refused:?}");
    assert_eq!(runtime.count(), 3);
    assert!(runtime.list().iter().all(|a| a.depth() <= 2));
}

/// Stalls for model `slow`; plays the scripted client otherwise.
struct SlowChild(ScriptedClient);

impl mux_llm::LlmClient for SlowChild {
    fn provider(&self) -> &str {
        "slow-child"
    }
    fn stream(
        &self,
        request: mux_llm::Request,
    ) -> mux_llm::BoxFuture<'_, Result<mux_llm::EventStream, mux_llm::LlmError>> {
        if request.model == "slow" {
            common::Stalls.stream(request)
        } else {
            self.0.stream(request)
        }
    }
}

#[tokio::test]
async fn cancelling_the_delegating_run_cancels_the_subagents_run() {
    let client = ScriptedClient::new().reply(tool_call(
        "t1",
        "task",
        json!({"agent": "slowpoke", "prompt": "think"}),
    ));
    let runtime = AgentRuntime::builder(Agent::builder(SlowChild(client), "m").build().unwrap())
        .definition(AgentDefinition::new("slowpoke").model("slow"))
        .build();
    let lead = runtime
        .spawn(AgentDefinition::new("lead"), AgentSession::New)
        .await
        .unwrap();
    let mut events = lead.subscribe();
    let mut run = lead.prompt("go").unwrap();
    // Wait until the subagent streams.
    loop {
        if let Some(AgentEvent::Subagent {
            event: LoopEvent::TextDelta { .. },
            ..
        }) = events.recv().await
        {
            break;
        }
    }
    let child = runtime
        .list()
        .into_iter()
        .find(|a| a.name() == "slowpoke")
        .unwrap();
    assert_eq!(child.state(), mux_agents::AgentState::Running);
    run.cancel();
    assert!(matches!(
        run.wait_timeout(LONG).await,
        Err(mux_agents::AgentError::Cancelled)
    ));
    // The child's run ended too; the child stays, idle, for a later resume.
    let mut complete = None;
    while let Some(event) = events.try_recv() {
        if let AgentEvent::SubagentComplete { result, .. } = event {
            complete = Some(result);
        }
    }
    assert_eq!(complete, Some(Err("the run was cancelled".to_string())));
    assert_eq!(child.state(), mux_agents::AgentState::Idle);
    assert_eq!(runtime.count(), 2);
}

/// Panics at both subagent hook points: before returning its future, and inside it.
struct Panicking;

impl Hook for Panicking {
    fn name(&self) -> &str {
        "panicking"
    }
    fn subagent_start<'a>(
        &'a self,
        _event: &'a SubagentEvent,
    ) -> BoxFuture<'a, Result<(), HookError>> {
        panic!("hook bug before the future")
    }
    fn subagent_stop<'a>(
        &'a self,
        _event: &'a SubagentEvent,
    ) -> BoxFuture<'a, Result<(), HookError>> {
        Box::pin(async { panic!("hook bug inside the future") })
    }
}

#[tokio::test]
async fn a_panicking_subagent_hook_is_reported_and_the_delegation_goes_on() {
    let client = ScriptedClient::new()
        .reply(tool_call(
            "t1",
            "task",
            json!({"agent": "worker", "prompt": "say hi"}),
        ))
        .reply_text("hi")
        .reply_text("The worker said hi.");
    let hooks = Hooks::new();
    hooks.add(Panicking);
    let runtime = AgentRuntime::builder(
        Agent::builder(client, "m")
            .tools(Registry::new().list())
            .hooks(hooks)
            .build()
            .unwrap(),
    )
    .definition(AgentDefinition::new("worker").can_delegate(false))
    .build();
    let lead = runtime
        .spawn(AgentDefinition::new("lead"), AgentSession::New)
        .await
        .unwrap();
    let mut events = lead.subscribe();
    let summary = lead
        .prompt("delegate")
        .unwrap()
        .wait_timeout(LONG)
        .await
        .unwrap();
    assert_eq!(summary.text, "The worker said hi.");
    assert_eq!(summary.tool_calls[0].output.to_text(), "hi");
    let mut failed = Vec::new();
    while let Some(event) = events.try_recv() {
        if let AgentEvent::Loop(LoopEvent::HookFailed { hook, point, .. }) = event {
            failed.push(format!("{hook} {point}"));
        }
    }
    assert_eq!(
        failed,
        ["panicking subagent_start", "panicking subagent_stop"]
    );
}

#[tokio::test]
async fn a_subagent_draws_from_its_parents_budget() {
    // Every agent may make 3 model calls, and the delegated run's calls count for the lead.
    let client = ScriptedClient::new()
        .reply(tool_call(
            "t1",
            "task",
            json!({"agent": "w", "prompt": "x"}),
        ))
        .reply(tool_call("c1", "nothing", json!({})))
        .reply(tool_call("c2", "nothing", json!({})))
        .reply_text("never asked")
        .reply_text("never asked");
    let runtime = AgentRuntime::builder(Agent::builder(client.clone(), "m").build().unwrap())
        .definition(AgentDefinition::new("w"))
        .configure(|config| config.limits(mux_orchestrator::RunLimits::new().model_calls(3)))
        .build();
    let lead = runtime
        .spawn(AgentDefinition::new("lead"), AgentSession::New)
        .await
        .unwrap();
    let summary = lead.prompt("go").unwrap().wait_timeout(LONG).await.unwrap();
    assert_eq!(
        summary.limit,
        Some(mux_orchestrator::LimitReached::ModelCalls { max: 3 })
    );
    // One call of the lead's and two of the subagent's: the lead's budget is spent, so
    // neither makes a fourth.
    assert_eq!(client.requests().len(), 3);
    assert!(
        !summary.tool_calls[0].output.is_error,
        "the delegation returned"
    );
}

#[tokio::test]
async fn a_subagents_tool_calls_reach_the_parents_run_as_updates_of_the_task_call() {
    let client = ScriptedClient::new()
        .reply(tool_call(
            "t1",
            "task",
            json!({"agent": "w", "prompt": "x"}),
        ))
        .reply(tool_call("c1", "nothing", json!({"a": 1})))
        .reply_text("worker done")
        .reply_text("lead done");
    let runtime = AgentRuntime::builder(Agent::builder(client, "m").build().unwrap())
        .definition(AgentDefinition::new("w"))
        .build();
    let lead = runtime
        .spawn(AgentDefinition::new("lead"), AgentSession::New)
        .await
        .unwrap();
    let mut events = lead.subscribe();
    let summary = lead.prompt("go").unwrap().wait_timeout(LONG).await.unwrap();
    assert_eq!(summary.text, "lead done");
    let mut nested = Vec::new();
    while let Ok(Some(event)) =
        tokio::time::timeout(Duration::from_millis(200), events.recv()).await
    {
        if let AgentEvent::Loop(LoopEvent::ToolOutputDelta {
            call_id,
            update: mux_tool::ToolUpdate::Subagent { agent, event },
        }) = event
        {
            nested.push(format!(
                "{call_id} {agent} {}",
                event["type"].as_str().unwrap()
            ));
        }
    }
    assert_eq!(
        nested,
        [
            "t1 w tool_call_arguments",
            "t1 w tool_result",
            "t1 w finished"
        ]
    );
}
