//! The runtime's registry, handles, run handles, subagent links and cascading cancellation.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::Stalls;
use mux_agents::{
    AgentDefinition, AgentError, AgentRuntime, AgentSession, AgentState, PARENT_KEY, RunStatus,
    SUBAGENTS_KEY,
};
use mux_llm::Response;
use mux_llm::testing::ScriptedClient;
use mux_orchestrator::Agent;
use mux_orchestrator::session::{MemorySessionStore, SessionStore};
use serde_json::json;

const LONG: Duration = Duration::from_secs(10);

fn echo_client() -> ScriptedClient {
    ScriptedClient::new().respond_with(|request| {
        Ok(Response::from_text(format!(
            "echo: {}",
            request
                .messages
                .last()
                .map(|m| m.text())
                .unwrap_or_default()
        )))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hundred_agents_spawn_and_run_concurrently() {
    let runtime =
        AgentRuntime::builder(Agent::builder(echo_client(), "m").build().unwrap()).build();
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let runtime = runtime.clone();
            tokio::spawn(async move {
                let agent = runtime
                    .spawn(AgentDefinition::new(format!("a{i}")), AgentSession::New)
                    .await
                    .unwrap();
                let summary = agent
                    .prompt(format!("n{i}"))
                    .unwrap()
                    .wait_timeout(LONG)
                    .await
                    .unwrap();
                (agent, i, summary.text)
            })
        })
        .collect();
    let mut agents = Vec::new();
    for task in tasks {
        let (agent, i, text) = task.await.unwrap();
        assert_eq!(text, format!("echo: n{i}"));
        agents.push(agent);
    }
    assert_eq!(runtime.count(), 100);
    let mut ids: Vec<_> = agents.iter().map(|a| a.id().clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 100, "ids are unique");
    assert!(runtime.list().iter().all(|a| a.state() == AgentState::Idle));
    let first = agents[0].id().to_string();
    assert_eq!(runtime.get(&first).unwrap().name(), "a0");

    runtime.shutdown_all();
    runtime.wait_all(LONG).await.unwrap();
    assert_eq!(runtime.count(), 0, "exited agents leave the registry");
    assert!(runtime.get(&first).is_none());
    assert!(agents.iter().all(|a| a.state() == AgentState::Done));
    assert!(matches!(
        agents[0].prompt("again"),
        Err(AgentError::Exited(_))
    ));
}

#[tokio::test]
async fn a_run_handle_polls_times_out_and_really_cancels() {
    let runtime = AgentRuntime::builder(Agent::builder(Stalls, "m").build().unwrap()).build();
    let agent = runtime
        .spawn(AgentDefinition::new("slow"), AgentSession::New)
        .await
        .unwrap();
    let mut events = agent.subscribe();
    let mut run = agent.prompt("go").unwrap();
    let mut queued = agent.prompt("later").unwrap();
    assert_eq!(queued.status(), RunStatus::Queued);
    // Wait until the model has streamed something.
    loop {
        if let Some(mux_agents::AgentEvent::Loop(mux_orchestrator::LoopEvent::TextDelta {
            ..
        })) = events.recv().await
        {
            break;
        }
    }
    assert_eq!(run.status(), RunStatus::Running);
    assert_eq!(agent.state(), AgentState::Running);
    assert!(matches!(
        run.wait_timeout(Duration::from_millis(20)).await,
        Err(AgentError::Timeout(_))
    ));
    assert_eq!(
        run.status(),
        RunStatus::Running,
        "a timed-out wait leaves the run going"
    );

    queued.cancel();
    run.cancel();
    assert!(matches!(
        run.wait_timeout(LONG).await,
        Err(AgentError::Cancelled)
    ));
    assert_eq!(run.status(), RunStatus::Cancelled);
    assert!(matches!(run.wait().await, Err(AgentError::ResultTaken)));
    assert!(matches!(
        queued.wait_timeout(LONG).await,
        Err(AgentError::Cancelled)
    ));
    assert_eq!(queued.status(), RunStatus::Cancelled);

    // The agent survives a cancelled run, and interrupt cancels the one in progress.
    let mut next = agent.prompt("next").unwrap();
    while next.status() != RunStatus::Running {
        tokio::task::yield_now().await;
    }
    assert!(agent.interrupt());
    assert!(matches!(
        next.wait_timeout(LONG).await,
        Err(AgentError::Cancelled)
    ));
    assert_eq!(agent.state(), AgentState::Idle);
    assert!(!agent.interrupt(), "nothing to interrupt");

    agent.shutdown();
    runtime.wait_for(agent.id().as_str(), LONG).await.unwrap();
    assert_eq!(agent.state(), AgentState::Done);
    assert_eq!(runtime.count(), 0);
}

#[tokio::test]
async fn the_parent_child_link_is_persisted_in_both_sessions() {
    let store = Arc::new(MemorySessionStore::new());
    let runtime = AgentRuntime::builder(
        Agent::builder(echo_client(), "m")
            .session_store(store.clone())
            .build()
            .unwrap(),
    )
    .build();
    let parent = runtime
        .spawn(AgentDefinition::new("lead"), AgentSession::New)
        .await
        .unwrap();
    let first = runtime
        .spawn_subagent(&parent, AgentDefinition::new("explorer"), AgentSession::New)
        .await
        .unwrap();
    let second = runtime
        .spawn_subagent(&parent, AgentDefinition::new("coder"), AgentSession::New)
        .await
        .unwrap();
    assert_eq!(first.parent(), Some(parent.id()));
    assert_eq!(first.depth(), 1);

    let stored_parent = store.load(&parent.session_id()).await.unwrap();
    assert_eq!(
        stored_parent.meta.extra[SUBAGENTS_KEY],
        json!([
            {"agent_id": first.id(), "agent": "explorer", "session_id": first.session_id()},
            {"agent_id": second.id(), "agent": "coder", "session_id": second.session_id()},
        ])
    );
    let stored_child = store.load(&second.session_id()).await.unwrap();
    assert_eq!(
        stored_child.meta.extra[PARENT_KEY],
        json!({"agent_id": parent.id(), "agent": "lead", "session_id": parent.session_id()})
    );

    // A resumed child keeps the link and its conversation.
    first
        .prompt("hello")
        .unwrap()
        .wait_timeout(LONG)
        .await
        .unwrap();
    let session = first.session_id();
    first.shutdown();
    first.wait_timeout(LONG).await.unwrap();
    let resumed = runtime
        .spawn(
            AgentDefinition::new("explorer"),
            AgentSession::Resume(session.clone()),
        )
        .await
        .unwrap();
    assert_eq!(resumed.session_id(), session);
    assert_eq!(resumed.orchestrator().messages().len(), 2);
    assert_eq!(
        resumed.orchestrator().session().extra[PARENT_KEY]["agent_id"],
        json!(parent.id())
    );
    runtime.shutdown_all();
    runtime.wait_all(LONG).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_parent_cancels_every_descendant_within_the_bound() {
    let runtime = AgentRuntime::builder(Agent::builder(Stalls, "m").build().unwrap()).build();
    let root = runtime
        .spawn(AgentDefinition::new("root"), AgentSession::New)
        .await
        .unwrap();
    let child = runtime
        .spawn_subagent(&root, AgentDefinition::new("child"), AgentSession::New)
        .await
        .unwrap();
    let grandchild = runtime
        .spawn_subagent(
            &child,
            AgentDefinition::new("grandchild"),
            AgentSession::New,
        )
        .await
        .unwrap();
    let other = runtime
        .spawn(AgentDefinition::new("other"), AgentSession::New)
        .await
        .unwrap();
    let mut runs: Vec<_> = [&root, &child, &grandchild]
        .iter()
        .map(|agent| agent.prompt("go").unwrap())
        .collect();
    for run in &runs {
        while run.status() != RunStatus::Running {
            tokio::task::yield_now().await;
        }
    }

    root.shutdown();
    assert!(child.cancellation().is_cancelled());
    assert!(grandchild.cancellation().is_cancelled());
    assert!(!other.cancellation().is_cancelled());
    // Paused time only advances when every task is idle, so this bound is reached only if
    // some run would hang without the cascade.
    let bound = Duration::from_millis(50);
    for run in &mut runs {
        assert!(matches!(
            run.wait_timeout(bound).await,
            Err(AgentError::Cancelled)
        ));
    }
    for agent in [&root, &child, &grandchild] {
        agent.wait_timeout(bound).await.unwrap();
    }
    assert_eq!(runtime.count(), 1);
    assert_eq!(runtime.list()[0].id(), other.id());
    assert_eq!(other.state(), AgentState::Idle);
}

#[tokio::test]
async fn subagents_nest_no_deeper_than_the_limit() {
    let runtime = AgentRuntime::builder(Agent::builder(echo_client(), "m").build().unwrap())
        .max_depth(2)
        .build();
    let mut agent = runtime
        .spawn(AgentDefinition::new("d0"), AgentSession::New)
        .await
        .unwrap();
    for depth in 1..=2 {
        agent = runtime
            .spawn_subagent(
                &agent,
                AgentDefinition::new(format!("d{depth}")),
                AgentSession::New,
            )
            .await
            .unwrap();
        assert_eq!(agent.depth(), depth);
    }
    assert!(
        !agent.orchestrator().tools().contains("task"),
        "an agent at the limit cannot delegate"
    );
    let err = runtime
        .spawn_subagent(&agent, AgentDefinition::new("d3"), AgentSession::New)
        .await
        .unwrap_err();
    assert!(matches!(err, AgentError::DepthLimit { depth: 3, max: 2 }));
    assert_eq!(err.to_string(), "subagent depth limit reached: 3 > 2");
    assert_eq!(runtime.count(), 3);
    assert_eq!(
        AgentRuntime::builder(Agent::builder(Stalls, "m").build().unwrap())
            .build()
            .max_depth(),
        3
    );
}

#[tokio::test]
async fn every_agent_shares_the_global_permission_rules() {
    use mux_permission::{PathContext, Permissions, Rule, RuleKind, RuleSet, Scope, ScopeRules};

    let global = ScopeRules::new(RuleSet::default());
    let permissions = Permissions::builder(PathContext::new(std::env::temp_dir()))
        .scope(Scope::Global, global.clone())
        .build();
    let client = ScriptedClient::new()
        .reply(common::tool_call("c1", "shell", json!({"command": "ls"})))
        .reply_text("one")
        .reply(common::tool_call("c2", "shell", json!({"command": "ls"})))
        .reply_text("two");
    let shell = common::Shell::default();
    let tools = mux_tool::Registry::new();
    tools.register_typed(shell.clone()).unwrap();
    let runtime = AgentRuntime::builder(
        Agent::builder(client, "m")
            .tools(tools.list())
            .permissions(permissions)
            .build()
            .unwrap(),
    )
    .configure(|config| config.approval_timeout(Duration::from_secs(5)))
    .build();
    let first = runtime
        .spawn(AgentDefinition::new("a"), AgentSession::New)
        .await
        .unwrap();
    let second = runtime
        .spawn(AgentDefinition::new("b"), AgentSession::New)
        .await
        .unwrap();
    // Added after both agents exist: it applies to both, no approval asked.
    assert!(global.add(RuleKind::Allow, Rule::parse("shell").unwrap()));
    for (agent, text) in [(&first, "one"), (&second, "two")] {
        let summary = agent
            .prompt("go")
            .unwrap()
            .wait_timeout(LONG)
            .await
            .unwrap();
        assert_eq!(summary.text, text);
        assert!(
            !summary.tool_calls[0].output.is_error,
            "{:?}",
            summary.tool_calls[0]
        );
    }
    assert_eq!(shell.calls.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[tokio::test]
async fn dropping_the_runtime_shuts_its_agents_down() {
    let runtime = AgentRuntime::builder(Agent::builder(Stalls, "m").build().unwrap()).build();
    let agent = runtime
        .spawn(AgentDefinition::new("orphan"), AgentSession::New)
        .await
        .unwrap();
    let mut run = agent.prompt("go").unwrap();
    drop(runtime);
    assert!(matches!(
        run.wait_timeout(LONG).await,
        Err(AgentError::Cancelled)
    ));
    agent.wait_timeout(LONG).await.unwrap();
    assert_eq!(agent.state(), AgentState::Done);
}
