//! Interop with `@modelcontextprotocol/server-everything` over stdio.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use mux_mcp::{CallEnd, CallError, ConnectionState, LogSource, McpEvent};
use mux_tool::{Content, ProgressSender, Tool, ToolContext, ToolError, ToolUpdate};
use serde_json::json;
use tokio::sync::mpsc;

fn find(tools: &[Arc<dyn Tool>], name: &str) -> Arc<dyn Tool> {
    tools
        .iter()
        .find(|t| t.spec().name.as_str() == name)
        .cloned()
        .unwrap_or_else(|| panic!("no tool {name} in {:?}", tools.iter().map(|t| t.spec().name.to_string()).collect::<Vec<_>>()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_and_called() {
    let coordinator = common::coordinator();
    let report = coordinator
        .start_all_and_wait(vec![common::everything("everything")])
        .await
        .unwrap();
    assert_eq!(report.connected, ["everything"], "{report:?}");
    let tools = coordinator.tools();
    eprintln!("{:?}", tools.iter().map(|t| t.spec().name.to_string()).collect::<Vec<_>>());
    let echo = find(&tools, "mcp__everything__echo");
    assert!(echo.spec().input_schema["properties"]["message"].is_object());
    let out = echo.call(json!({"message": "hi"}), ToolContext::new("c1")).await.unwrap();
    assert_eq!(out.to_text(), "Echo: hi");
    assert!(!out.is_error);

    let sum = find(&tools, "mcp__everything__get-sum");
    let out = sum.call(json!({"a": 2, "b": 3}), ToolContext::new("c2")).await.unwrap();
    assert!(out.to_text().contains('5'), "{out:?}");

    let image = find(&tools, "mcp__everything__get-tiny-image");
    let out = image.call(json!({}), ToolContext::new("c3")).await.unwrap();
    assert!(out.content.iter().any(|c| matches!(c, Content::Image { mime_type, .. } if mime_type == "image/png")), "{out:?}");

    let structured = find(&tools, "mcp__everything__get-structured-content");
    let out = structured.call(json!({"location": "New York"}), ToolContext::new("c4")).await.unwrap();
    assert!(out.content.iter().any(|c| matches!(c, Content::Json { .. })), "{out:?}");

    let links = find(&tools, "mcp__everything__get-resource-links");
    let out = links.call(json!({"count": 2}), ToolContext::new("c5")).await.unwrap();
    assert!(out.content.iter().any(|c| matches!(c, Content::ResourceLink { .. })), "{out:?}");

    let reference = find(&tools, "mcp__everything__get-resource-reference");
    let out = reference.call(json!({"resourceId": 2}), ToolContext::new("c6")).await.unwrap();
    assert!(out.content.iter().any(|c| matches!(c, Content::Resource { .. })), "{out:?}");

    let connection = coordinator.connection("everything").unwrap();
    let pid = connection.pid().unwrap();
    assert!(connection.log().iter().any(|e| e.source == LogSource::Stderr), "{:?}", connection.log());
    coordinator.stop_all().await;
    assert!(!common::alive(pid), "stop_all left the server running");
    assert_eq!(connection.state(), ConnectionState::Disconnected);
}
