//! An agent with MCP servers of its own keeps them in every editor session; the servers the
//! editor passes are reported as unavailable, never silently dropped.

use mux_acp::AcpAgent;
use mux_llm::testing::ScriptedClient;
use mux_mcp::{Coordinator, CoordinatorConfig};
use mux_orchestrator::Agent;
use serde_json::json;

use crate::harness::Peer;

#[tokio::test]
async fn the_editors_servers_are_reported_and_the_agents_coordinator_stays() {
    let coordinator = Coordinator::new(CoordinatorConfig::default());
    let agent = Agent::builder(ScriptedClient::new(), "scripted")
        .mcp(coordinator)
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut peer = Peer::start(AcpAgent::new(agent));
    peer.initialize().await;
    let servers = json!([{"name": "editors", "command": "/bin/true", "args": [], "env": []}]);
    let (response, _) = peer
        .request(
            "session/new",
            json!({"cwd": dir.path(), "mcpServers": servers}),
        )
        .await;
    assert!(response["result"]["sessionId"].is_string(), "{response}");
    let note = peer.next_message().await;
    let text = note["params"]["update"]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("`editors` is unavailable"), "{note}");
    assert!(text.contains("MCP servers of its own"), "{note}");
}
