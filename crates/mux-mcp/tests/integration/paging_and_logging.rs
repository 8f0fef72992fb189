//! `tools/list` pagination and server logging against our own TypeScript SDK server
//! (`tests/peers/paging_logging_server.mjs`), which serves its tools over three pages and sends
//! `notifications/message` on request.

use crate::common;

use std::time::Duration;

use mux_mcp::{Coordinator, LogEntry, LogLevel, LogSource, McpEvent, Received};
use mux_tool::{Tool, ToolContext};
use serde_json::json;

const SCRIPT: &str = "paging_logging_server.mjs";

async fn started(name: &str) -> Coordinator {
    let coordinator = common::coordinator();
    let report = coordinator
        .start_all_and_wait(vec![common::sdk_server(name, SCRIPT)])
        .await
        .unwrap();
    assert_eq!(report.connected, [name], "{report:?}");
    coordinator
}

async fn call_text(coordinator: &Coordinator, name: &str, args: serde_json::Value) -> String {
    let tool = coordinator
        .tools()
        .into_iter()
        .find(|tool| tool.spec().name.as_str() == name)
        .unwrap_or_else(|| panic!("no tool {name}"));
    let out = tool.call(args, ToolContext::new("c")).await.unwrap();
    assert!(!out.is_error, "{out:?}");
    out.to_text()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_of_tools_becomes_a_proxy_in_server_order() {
    let coordinator = started("pg").await;
    let names: Vec<String> = coordinator
        .proxies()
        .iter()
        .map(|proxy| proxy.spec().name.to_string())
        .collect();
    assert_eq!(
        names,
        [
            "mcp__pg__delta",
            "mcp__pg__alpha",
            "mcp__pg__kilo",
            "mcp__pg__charlie",
            "mcp__pg__log-messages",
            "mcp__pg__bravo",
            "mcp__pg__cursors-seen",
            "mcp__pg__echo",
        ]
    );
    // The connected state holds the same list, with what each page said about its tools.
    let connection = coordinator.connection("pg").unwrap();
    let state = connection.state();
    let tools = state.tools();
    assert_eq!(tools.len(), 8);
    assert_eq!(tools[7].name, "echo");
    assert_eq!(tools[7].description, "Answers its text; served on page 3.");
    assert_eq!(
        tools[7].input_schema["properties"]["text"]["type"],
        "string"
    );
    assert_eq!(tools[3].description, "Answers its text; served on page 2.");

    // The client asked for page 1 without a cursor, then passed each `nextCursor` once.
    assert_eq!(
        call_text(&coordinator, "mcp__pg__cursors-seen", json!({})).await,
        r#"[null,"page-1","page-2"]"#
    );
    // A tool from the last page is callable through its proxy.
    assert_eq!(
        call_text(&coordinator, "mcp__pg__echo", json!({"text": "last page"})).await,
        "echo: last page"
    );
    coordinator.stop_all().await;
}

fn server_entry(event: &McpEvent) -> Option<&LogEntry> {
    match event {
        McpEvent::Log { server, entry } if server == "lg" && entry.source == LogSource::Server => {
            Some(entry)
        }
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_log_messages_become_log_events_with_level_and_text() {
    let coordinator = started("lg").await;
    let mut events = coordinator.subscribe();
    let text = call_text(
        &coordinator,
        "mcp__lg__log-messages",
        json!({"messages": [
            {"level": "warning", "data": "disk almost full"},
            {"level": "debug", "data": {"free_mb": 12}},
            {"level": "notice", "data": "rotated the log"},
            {"level": "critical", "data": "disk full"},
        ]}),
    )
    .await;
    assert_eq!(text, "logged 4");

    let mut received = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while received.len() < 4 {
        let next = tokio::time::timeout_at(deadline, events.recv()).await;
        match next {
            Ok(Some(Received::Event(event))) => {
                if let Some(entry) = server_entry(&event) {
                    received.push((entry.level, entry.message.clone()));
                }
            }
            Ok(Some(other)) => panic!("unexpected {other:?}"),
            Ok(None) | Err(_) => break,
        }
    }
    // rmcp handles notifications in spawned tasks, so compare without relying on their order.
    received.sort_by(|a, b| a.1.cmp(&b.1));
    let mut expected = vec![
        (
            LogLevel::Warning,
            "[paging-server] disk almost full".to_string(),
        ),
        (
            LogLevel::Debug,
            r#"[paging-server] {"free_mb":12}"#.to_string(),
        ),
        (
            LogLevel::Info,
            "[paging-server] rotated the log".to_string(),
        ),
        (LogLevel::Error, "[paging-server] disk full".to_string()),
    ];
    expected.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(received, expected);

    // The same entries are in the connection's bounded log.
    let logged: Vec<String> = coordinator
        .connection("lg")
        .unwrap()
        .log()
        .into_iter()
        .filter(|entry| entry.source == LogSource::Server)
        .map(|entry| entry.message)
        .collect();
    assert_eq!(logged.len(), 4, "{logged:?}");
    assert!(logged.contains(&"[paging-server] disk full".to_string()));
    coordinator.stop_all().await;
}
