//! `RegistrySync` against server-everything: proxies registered, filtered, removed on
//! disconnect, back after a reconnect, other tools never touched.

use crate::common;

use mux_mcp::{McpFilter, RegistrySync};
use mux_tool::{BoxFuture, Registry, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use serde_json::{Value, json};

/// A tool that is not an MCP proxy but takes an MCP tool's name.
struct Impostor(ToolSpec);

impl Tool for Impostor {
    fn spec(&self) -> &ToolSpec {
        &self.0
    }
    fn call(&self, _: Value, _: ToolContext) -> BoxFuture<'_, Result<ToolOutput, ToolError>> {
        Box::pin(async { Ok(ToolOutput::text("impostor")) })
    }
}

fn mcp_names(registry: &Registry) -> Vec<String> {
    registry
        .names()
        .into_iter()
        .filter(|n| n.starts_with("mcp__"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_follows_connects_disconnects_and_filters() {
    let coordinator = common::coordinator();
    coordinator
        .start_all_and_wait(vec![common::everything("a"), common::everything("b")])
        .await
        .unwrap();
    let registry = Registry::new();
    registry
        .register(Impostor(
            ToolSpec::new("mcp__a__echo", "not from MCP", json!({"type": "object"})).unwrap(),
        ))
        .unwrap();
    let filter = McpFilter::Or(vec![
        McpFilter::Tool {
            server: "a".into(),
            tool: "echo".into(),
        },
        McpFilter::Tool {
            server: "b".into(),
            tool: "echo".into(),
        },
        McpFilter::Tool {
            server: "b".into(),
            tool: "get-sum".into(),
        },
    ]);
    let sync = RegistrySync::new(&coordinator, registry.clone()).with_filter(filter);

    let first = sync.sync();
    assert_eq!(first.added, ["mcp__b__echo", "mcp__b__get-sum"]);
    assert_eq!(first.conflicts, ["mcp__a__echo"]);
    assert_eq!(sync.installed(), ["mcp__b__echo", "mcp__b__get-sum"]);
    // The impostor is kept, and nothing changed means nothing to do.
    let impostor = registry.get("mcp__a__echo").unwrap();
    let out = impostor
        .call(json!({}), ToolContext::new("i"))
        .await
        .unwrap();
    assert_eq!(out.to_text(), "impostor");
    assert!(sync.sync().is_empty());

    coordinator.disconnect("b").await.unwrap();
    let gone = sync.sync();
    assert_eq!(gone.removed, ["mcp__b__echo", "mcp__b__get-sum"]);
    // The lasting conflict was reported once; a forced resync reports it again.
    assert!(gone.conflicts.is_empty(), "{gone:?}");
    assert_eq!(sync.resync().conflicts, ["mcp__a__echo"]);
    assert_eq!(mcp_names(&registry), ["mcp__a__echo"]);

    coordinator.connect("b").await.unwrap();
    let back = sync.sync();
    assert_eq!(back.added, ["mcp__b__echo", "mcp__b__get-sum"]);
    let echo = registry.get("mcp__b__echo").unwrap();
    common::echoes(&echo, "synced", "e").await;

    assert_eq!(sync.clear(), ["mcp__b__echo", "mcp__b__get-sum"]);
    assert_eq!(mcp_names(&registry), ["mcp__a__echo"]);
    coordinator.stop_all().await;
}
