//! The loop with real MCP servers (`@modelcontextprotocol/server-everything` over stdio,
//! installed by `cargo xtask peers`): calls, permission rules, cancellation mid-call, tools
//! that come and go between turns, start failures and shutdown.
#![cfg(feature = "mcp")]

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::{Conversation, loop_agent, text, tool_calls};
use mux_llm::testing::ScriptedClient;
use mux_llm::{ContentBlock, Request, Role};
use mux_mcp::{
    ConnectionOptions, Coordinator, CoordinatorConfig, McpEvent, McpFilter, Received,
    ReconnectPolicy, ServerSpec,
};
use mux_orchestrator::{
    LoopError, LoopEvent, LoopInput, McpServers, Orchestrator, OrchestratorConfig, Run,
};
use mux_permission::{PathContext, Permissions, RuleSet, Scope, ScopeRules};
use mux_testkit::process::alive;
use mux_tool::{Registry, ToolContext, ToolError, ToolOutput, TypedTool};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

fn peer_script(package: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/peers/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        path.exists(),
        "{} is missing: run `cargo xtask peers` (cargo xtask ci does it) to install the MCP test servers",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

/// server-everything over stdio.
fn everything(name: &str) -> ServerSpec {
    ServerSpec::stdio(
        name,
        "node",
        [peer_script("server-everything"), "stdio".into()],
    )
}

fn coordinator_config() -> CoordinatorConfig {
    CoordinatorConfig {
        connection: ConnectionOptions {
            connect_timeout: Duration::from_secs(20),
            shutdown_grace: Duration::from_secs(1),
            ..ConnectionOptions::default()
        },
        reconnect: ReconnectPolicy::None,
        health_interval: None,
        ..CoordinatorConfig::default()
    }
}

/// A coordinator that has started `servers` and waited for them.
async fn started(servers: Vec<ServerSpec>) -> Coordinator {
    let coordinator = Coordinator::new(coordinator_config());
    coordinator.start_all_and_wait(servers).await.unwrap();
    coordinator
}

/// The process id of server `name`.
fn pid_of(servers: &McpServers, name: &str) -> u32 {
    servers
        .coordinator()
        .connection(name)
        .unwrap()
        .pid()
        .unwrap()
}

/// The servers of an `mcp.json` in `dir` naming server-everything as `ev` and a command that
/// does not exist as `broken`.
async fn everything_and_a_broken_one(dir: &std::path::Path) -> McpServers {
    let config = dir.join("mcp.json");
    let config_json = json!({"mcpServers": {
        "ev": {"command": "node", "args": [peer_script("server-everything"), "stdio"]},
        "broken": {"command": dir.join("no-such-server").to_string_lossy()},
    }});
    std::fs::write(&config, config_json.to_string()).unwrap();
    McpServers::load(&config, coordinator_config())
        .await
        .unwrap()
}

/// An agent on `model` with the caller's `coordinator` and the project rules `rules`.
fn with_mcp(
    model: ScriptedClient,
    rules: RuleSet,
    coordinator: &Coordinator,
) -> mux_orchestrator::AgentBuilder {
    loop_agent(model, OrchestratorConfig::new("m"))
        .permissions(allow(rules))
        .mcp(coordinator.clone())
}

fn allow(rules: RuleSet) -> Permissions {
    Permissions::builder(PathContext::new("."))
        .scope(Scope::Project, ScopeRules::new(rules))
        .build()
}

fn tool_names(request: &Request) -> Vec<String> {
    request.tools.iter().map(|t| t.name.to_string()).collect()
}

async fn gone_within(pid: u32, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while alive(pid) {
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    true
}

/// The events a subscription holds now.
async fn received(observer: &mut mux_orchestrator::Subscription) -> Vec<LoopEvent> {
    let mut events = Vec::new();
    while let Ok(Some(event)) =
        tokio::time::timeout(Duration::from_millis(100), observer.recv()).await
    {
        events.push(event);
    }
    events
}

/// The tool_result blocks of the conversation, as (tool_use_id, is_error, text).
fn tool_results(agent: &Orchestrator) -> Vec<(String, bool, String)> {
    agent
        .messages()
        .iter()
        .filter(|m| m.role == Role::User)
        .flat_map(|m| m.content.clone())
        .filter_map(|block| match block {
            ContentBlock::ToolResult {
                tool_use_id,
                is_error,
                content,
                ..
            } => Some((
                tool_use_id,
                is_error,
                content
                    .iter()
                    .filter_map(|c| match c {
                        ContentBlock::Text { text } => Some(text.clone()),
                        _ => None,
                    })
                    .collect::<String>(),
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_model_calls_a_real_mcp_tool_and_reads_its_result() {
    let servers = McpServers::start(vec![everything("ev")], coordinator_config())
        .await
        .unwrap();
    assert_eq!(servers.report().connected, ["ev"]);
    let pid = pid_of(&servers, "ev");
    let model = ScriptedClient::new()
        .reply(tool_calls(&[(
            "call_1",
            "mcp__ev__echo",
            json!({"message": "hello over MCP"}),
        )]))
        .reply(text("The server said hello."));
    let parent = tokio_util::sync::CancellationToken::new();
    let agent = loop_agent(model.clone(), OrchestratorConfig::new("m"))
        .permissions(allow(RuleSet::new().with_allow("mcp__ev__*").unwrap()))
        .open()
        .face_mcp_servers(servers)
        .cancellation(parent.clone())
        .build();
    assert!(agent.tools().contains("mcp__ev__echo"));

    let summary = agent.run_to_completion("Say hello").await.unwrap();
    assert_eq!(summary.text, "The server said hello.");
    assert_eq!(summary.tool_calls.len(), 1);
    assert_eq!(
        summary.tool_calls[0].output.to_text(),
        "Echo: hello over MCP"
    );
    assert!(!summary.tool_calls[0].output.is_error);
    // The model saw the MCP tool in its list, and the result came back paired with the call.
    let requests = model.requests();
    assert!(tool_names(&requests[0]).contains(&"mcp__ev__echo".to_owned()));
    assert_eq!(
        tool_results(&agent),
        [(
            "call_1".to_owned(),
            false,
            "Echo: hello over MCP".to_owned()
        )]
    );

    agent.shutdown().await;
    assert!(!alive(pid), "the server outlived shutdown");
    assert!(!agent.tools().contains("mcp__ev__echo"));
    // Shutdown ends later runs at once and leaves the caller's token alone.
    assert!(matches!(
        agent.run_to_completion("again").await,
        Err(LoopError::Cancelled)
    ));
    assert!(!parent.is_cancelled());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_rules_deny_an_mcp_tool_by_name_and_allow_its_server_by_wildcard() {
    let coordinator = started(vec![everything("ev")]).await;
    let mut events = coordinator.subscribe();
    let model = ScriptedClient::new()
        .reply(tool_calls(&[
            ("call_echo", "mcp__ev__echo", json!({"message": "secret"})),
            ("call_sum", "mcp__ev__get-sum", json!({"a": 2, "b": 3})),
        ]))
        .reply(text("done"));
    let rules = RuleSet::new()
        .with_allow("mcp__ev__*")
        .unwrap()
        .with_deny("mcp__ev__echo")
        .unwrap();
    let agent = with_mcp(model, rules, &coordinator).conversation();
    let mut observer = agent.subscribe();

    let summary = agent.run_to_completion("add and echo").await.unwrap();
    let echo = &summary.tool_calls[0].output;
    assert!(echo.is_error, "{echo:?}");
    assert!(
        echo.to_text().contains("mcp__ev__echo"),
        "{}",
        echo.to_text()
    );
    let sum = &summary.tool_calls[1].output;
    assert!(!sum.is_error);
    assert!(sum.to_text().contains('5'), "{}", sum.to_text());

    let mut denied = Vec::new();
    for event in received(&mut observer).await {
        if let LoopEvent::ToolDenied { call_id, .. } = event {
            denied.push(call_id);
        }
    }
    assert_eq!(denied, ["call_echo"]);
    // The denied call never reached the server; the allowed one did.
    let mut called = Vec::new();
    while let Some(Received::Event(event)) = events.try_recv() {
        if let McpEvent::CallStarted { tool, .. } = event {
            called.push(tool);
        }
    }
    assert_eq!(called, ["get-sum"]);
    // A coordinator passed with `mcp` is the caller's: shutdown leaves it running.
    agent.shutdown().await;
    assert!(coordinator.connection("ev").unwrap().state().is_connected());
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_mid_mcp_call_sends_cancelled_and_answers_the_tool_use() {
    let coordinator = started(vec![everything("ev")]).await;
    let mut mcp_events = coordinator.subscribe();
    let model = ScriptedClient::new().reply(tool_calls(&[(
        "call_long",
        "mcp__ev__trigger-long-running-operation",
        json!({"duration": 30, "steps": 30}),
    )]));
    let agent = with_mcp(
        model,
        RuleSet::new().with_allow("mcp__ev").unwrap(),
        &coordinator,
    )
    .conversation();

    let Run {
        mut events,
        input,
        handle,
    } = agent.run("take your time").unwrap();
    let drained = tokio::time::timeout(Duration::from_secs(20), async {
        let mut progress = 0;
        while let Some(event) = events.recv().await {
            // Cancel once the server has reported progress: the call is surely running there.
            if let LoopEvent::ToolOutputDelta { call_id, .. } = &event {
                assert_eq!(call_id, "call_long");
                progress += 1;
                if progress == 1 {
                    input.send(LoopInput::Cancel).await;
                }
            }
        }
        progress
    })
    .await
    .expect("the run did not end within 20 s of a 30 s call being cancelled");
    assert!(drained >= 1);
    let outcome = handle.wait().await;
    assert!(matches!(outcome, Err(LoopError::Cancelled)), "{outcome:?}");

    // The server was told: the call ended as cancelled (notifications/cancelled sent).
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(received) = mcp_events.recv().await {
            if let Received::Event(McpEvent::CallEnded { call_id, end, .. }) = received
                && call_id == "call_long"
            {
                return end;
            }
        }
        panic!("the event stream ended")
    })
    .await
    .unwrap();
    assert_eq!(ended, mux_mcp::CallEnd::Cancelled);
    // Every tool_use is answered.
    let results = tool_results(&agent);
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].0, "call_long");
    assert!(results[0].1);
    // The server keeps working.
    let echo = coordinator
        .call_tool(
            "ev",
            "echo",
            json!({"message": "still here"}),
            &ToolContext::new("after"),
        )
        .await
        .unwrap();
    assert!(format!("{echo:?}").contains("still here"));
    coordinator.stop_all().await;
}

#[derive(Deserialize, JsonSchema)]
struct ControlArgs {
    /// `connect` or `disconnect`.
    action: String,
    /// The server.
    server: String,
}

/// Connects or disconnects an MCP server, so a scripted model can change the tool set
/// between its own turns.
struct ServerControl(Coordinator);

impl TypedTool for ServerControl {
    type Args = ControlArgs;
    const NAME: &'static str = "server_control";
    fn description(&self) -> String {
        "Connects or disconnects an MCP server".into()
    }
    async fn call(&self, args: ControlArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        match args.action.as_str() {
            "disconnect" => self
                .0
                .disconnect(&args.server)
                .await
                .map_err(ToolError::other)?,
            "connect" => {
                self.0
                    .connect(&args.server)
                    .await
                    .map_err(ToolError::other)?;
            }
            other => return Err(ToolError::failed(format!("unknown action {other}"))),
        }
        Ok(ToolOutput::text(format!("{} {}", args.action, args.server)))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_of_a_disconnected_server_disappear_and_return_after_a_reconnect() {
    let coordinator = Coordinator::new(coordinator_config());
    let report = coordinator
        .start_all_and_wait(vec![everything("a"), everything("b")])
        .await
        .unwrap();
    assert_eq!(report.connected, ["a", "b"]);
    let registry = Registry::new();
    registry
        .register_typed(ServerControl(coordinator.clone()))
        .unwrap();
    let control = |id: &str, action: &str| {
        tool_calls(&[(
            id,
            "server_control",
            json!({"action": action, "server": "b"}),
        )])
    };
    let model = ScriptedClient::new()
        .reply(control("c1", "disconnect"))
        .reply(control("c2", "connect"))
        .reply(tool_calls(&[(
            "c3",
            "mcp__b__echo",
            json!({"message": "back"}),
        )]))
        .reply(text("done"));
    let rules = RuleSet::new()
        .with_allow("server_control")
        .unwrap()
        .with_allow("mcp__b__echo")
        .unwrap();
    let agent = with_mcp(model.clone(), rules, &coordinator)
        .tools(registry.list())
        // Only echo and get-sum, from every server.
        .mcp_filter(McpFilter::Or(vec![
            McpFilter::Spec(mux_tool::ToolFilter::glob("mcp__*__echo").unwrap()),
            McpFilter::Spec(mux_tool::ToolFilter::glob("mcp__*__get-sum").unwrap()),
        ]))
        .conversation();
    let mut observer = agent.subscribe();

    let summary = agent.run_to_completion("juggle servers").await.unwrap();
    assert_eq!(summary.tool_calls[2].output.to_text(), "Echo: back");

    let requests = model.requests();
    let mcp_tools = |i: usize| -> Vec<String> {
        tool_names(&requests[i])
            .into_iter()
            .filter(|n| n.starts_with("mcp__"))
            .collect()
    };
    let all = [
        "mcp__a__echo",
        "mcp__a__get-sum",
        "mcp__b__echo",
        "mcp__b__get-sum",
    ];
    assert_eq!(mcp_tools(0), all);
    assert_eq!(mcp_tools(1), ["mcp__a__echo", "mcp__a__get-sum"]);
    assert_eq!(mcp_tools(2), all);
    assert_eq!(mcp_tools(3), all);

    let mut changes = Vec::new();
    for event in received(&mut observer).await {
        if let LoopEvent::ToolsChanged { added, removed, .. } = event {
            changes.push((added, removed));
        }
    }
    let b_tools = vec!["mcp__b__echo".to_owned(), "mcp__b__get-sum".to_owned()];
    assert_eq!(
        changes,
        [(vec![], b_tools.clone()), (b_tools, vec![])],
        "one removal, then one addition"
    );
    coordinator.stop_all().await;
}

#[derive(Deserialize, JsonSchema)]
struct WaitArgs {
    /// The qualified tool name.
    name: String,
    /// Wait for it to be there (true) or gone (false).
    present: bool,
}

/// Waits until the coordinator offers a tool, or no longer does. mux-mcp re-lists a server's
/// tools in the background after `tools/list_changed`, so a model turn that changed the list
/// waits here for the refresh before its next turn.
struct WaitForTool(Coordinator);

impl TypedTool for WaitForTool {
    type Args = WaitArgs;
    const NAME: &'static str = "wait_for_tool";
    fn description(&self) -> String {
        "Waits for an MCP tool to appear or go".into()
    }
    async fn call(&self, args: WaitArgs, _: ToolContext) -> Result<ToolOutput, ToolError> {
        for _ in 0..500 {
            let there = self
                .0
                .tools()
                .iter()
                .any(|t| t.spec().name.as_str() == args.name);
            if there == args.present {
                return Ok(ToolOutput::text("ok"));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        Err(ToolError::failed(format!("{} did not change", args.name)))
    }
}

/// Our list-changing server (official TypeScript SDK), in `tests/peers`.
fn list_changing(name: &str) -> ServerSpec {
    let peers = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers");
    let sdk = peers.join("node_modules/@modelcontextprotocol/sdk/package.json");
    assert!(
        sdk.exists(),
        "{} is missing: run `cargo xtask peers` (cargo xtask ci does it) to install the MCP test servers",
        sdk.display()
    );
    let script = peers.join("list_changing_server.mjs");
    ServerSpec::stdio(name, "node", [script.to_string_lossy().into_owned()])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_added_and_removed_by_list_changed_follow_in_the_next_turn() {
    let coordinator = started(vec![list_changing("lc")]).await;
    let registry = Registry::new();
    registry
        .register_typed(WaitForTool(coordinator.clone()))
        .unwrap();
    let later = "mcp__lc__added-later";
    let model = ScriptedClient::new()
        .reply(tool_calls(&[
            ("add", "mcp__lc__add-tool", json!({})),
            (
                "w1",
                "wait_for_tool",
                json!({"name": later, "present": true}),
            ),
        ]))
        .reply(tool_calls(&[
            ("use", later, json!({"text": "hi"})),
            ("remove", "mcp__lc__remove-tool", json!({})),
            (
                "w2",
                "wait_for_tool",
                json!({"name": later, "present": false}),
            ),
        ]))
        .reply(text("done"));
    let rules = RuleSet::new()
        .with_allow("wait_for_tool")
        .unwrap()
        .with_allow("mcp__lc__*")
        .unwrap();
    let agent = with_mcp(model.clone(), rules, &coordinator)
        .tools(registry.list())
        .conversation();
    let mut observer = agent.subscribe();

    let summary = agent.run_to_completion("grow and shrink").await.unwrap();
    let outputs: Vec<String> = summary
        .tool_calls
        .iter()
        .map(|c| c.output.to_text())
        .collect();
    assert_eq!(outputs, ["added", "ok", "later: hi", "removed", "ok"]);
    let requests = model.requests();
    let offered = |i: usize| tool_names(&requests[i]).contains(&later.to_owned());
    assert!(!offered(0), "not there before add-tool");
    assert!(
        offered(1),
        "added by list_changed, offered in the next turn"
    );
    assert!(
        !offered(2),
        "removed by list_changed, gone in the next turn"
    );

    let changes: Vec<(Vec<String>, Vec<String>)> = received(&mut observer)
        .await
        .into_iter()
        .filter_map(|event| match event {
            LoopEvent::ToolsChanged { added, removed, .. } => Some((added, removed)),
            _ => None,
        })
        .collect();
    assert_eq!(
        changes,
        [
            (vec![later.to_owned()], vec![]),
            (vec![], vec![later.to_owned()])
        ]
    );
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_fails_to_start_is_reported_and_dropping_the_orchestrator_stops_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let servers = everything_and_a_broken_one(dir.path()).await;
    assert_eq!(servers.report().connected, ["ev"]);
    assert_eq!(servers.report().failed.len(), 1);
    let pid = pid_of(&servers, "ev");

    let model = ScriptedClient::new().reply(text("one")).reply(text("two"));
    let agent = loop_agent(model, OrchestratorConfig::new("m"))
        .open()
        .face_mcp_servers(servers)
        .build();
    let mut observer = agent.subscribe();
    agent.run_to_completion("first").await.unwrap();
    agent.run_to_completion("second").await.unwrap();
    let mut failed = Vec::new();
    for event in received(&mut observer).await {
        if let LoopEvent::McpServerFailed { server, reason } = event {
            failed.push((server, reason));
        }
    }
    assert_eq!(failed.len(), 1, "reported once: {failed:?}");
    assert_eq!(failed[0].0, "broken");
    assert!(failed[0].1.contains("broken"), "{}", failed[0].1);

    assert!(alive(pid));
    drop(agent);
    assert!(
        gone_within(pid, Duration::from_secs(10)).await,
        "the server outlived its orchestrator"
    );
}

#[tokio::test]
async fn a_bad_config_is_a_typed_error_naming_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("mcp.json");
    std::fs::write(&config, r#"{"mcpServers": {"x": {"args": []}}}"#).unwrap();
    let err = McpServers::load(&config, coordinator_config())
        .await
        .unwrap_err();
    assert!(
        matches!(err, mux_orchestrator::McpStartError::Config(_)),
        "{err:?}"
    );
    assert!(err.to_string().contains("`x`"), "{err}");
}

/// The same through the agent: `AgentBuilder::mcp_servers` reports a server that did not
/// start on the agent's first run, once, and `Agent::shutdown` stops the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_server_that_fails_to_start_is_reported_once_and_shutdown_stops_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let servers = everything_and_a_broken_one(dir.path()).await;
    let pid = pid_of(&servers, "ev");
    let model = ScriptedClient::new().reply(text("one")).reply(text("two"));
    let agent = mux_orchestrator::Agent::builder(model, "m")
        .mcp_servers(servers)
        .build()
        .unwrap();
    let mut failed = Vec::new();
    for prompt in ["first", "second"] {
        let mut run = agent.stream(prompt).unwrap();
        while let Some(event) = run.events.recv().await {
            if let LoopEvent::McpServerFailed { server, .. } = event {
                failed.push((prompt, server));
            }
        }
        run.handle.wait().await.unwrap();
    }
    assert_eq!(failed, [("first", "broken".to_owned())]);
    assert!(alive(pid));
    agent.shutdown().await;
    assert!(!alive(pid), "the server outlived the agent's shutdown");
}
