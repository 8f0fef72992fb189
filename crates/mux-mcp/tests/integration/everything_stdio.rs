//! Interop with `@modelcontextprotocol/server-everything` over stdio.

use crate::common;

use std::time::Duration;

use mux_mcp::{CallError, ConnectionState, LogSource, McpEvent};
use mux_tool::{Content, ProgressSender, Tool, ToolContext, ToolError, ToolUpdate};
use serde_json::json;
use tokio::sync::mpsc;

/// Whether one content item is what a tool should answer with.
type ContentCheck = fn(&Content) -> bool;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_are_listed_and_called() {
    let coordinator = common::coordinator();
    let report = coordinator
        .start_all_and_wait(vec![common::everything("everything")])
        .await
        .unwrap();
    assert_eq!(report.connected, ["everything"], "{report:?}");
    let tools = coordinator.tools();
    eprintln!(
        "{:?}",
        tools
            .iter()
            .map(|t| t.spec().name.to_string())
            .collect::<Vec<_>>()
    );
    let echo = common::find(&tools, "mcp__everything__echo");
    assert!(echo.spec().input_schema["properties"]["message"].is_object());
    common::echoes(&echo, "hi", "c1").await;

    // Each tool answers with content of its own kind.
    let cases: [(&str, serde_json::Value, ContentCheck); 5] = [
        (
            "get-sum",
            json!({"a": 2, "b": 3}),
            |c| matches!(c, Content::Text { text, .. } if text.contains('5')),
        ),
        (
            "get-tiny-image",
            json!({}),
            |c| matches!(c, Content::Image { mime_type, .. } if mime_type == "image/png"),
        ),
        (
            "get-structured-content",
            json!({"location": "New York"}),
            |c| matches!(c, Content::Json { .. }),
        ),
        ("get-resource-links", json!({"count": 2}), |c| {
            matches!(c, Content::ResourceLink { .. })
        }),
        ("get-resource-reference", json!({"resourceId": 2}), |c| {
            matches!(c, Content::Resource { .. })
        }),
    ];
    for (i, (tool, arguments, expected)) in cases.into_iter().enumerate() {
        let out = common::find(&tools, &format!("mcp__everything__{tool}"))
            .call(arguments, ToolContext::new(format!("c{}", i + 2)))
            .await
            .unwrap();
        assert!(out.content.iter().any(expected), "{tool}: {out:?}");
    }

    let connection = coordinator.connection("everything").unwrap();
    let pid = connection.pid().unwrap();
    assert!(
        connection
            .log()
            .iter()
            .any(|e| e.source == LogSource::Stderr),
        "{:?}",
        connection.log()
    );
    coordinator.stop_all().await;
    assert!(!common::alive(pid), "stop_all left the server running");
    assert_eq!(connection.state(), ConnectionState::Disconnected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_tool_context() {
    let coordinator = common::running(common::everything("ev")).await;
    let long = common::find(
        &coordinator.tools(),
        "mcp__ev__trigger-long-running-operation",
    );
    let (tx, mut rx) = mpsc::channel(16);
    let cx = ToolContext::new("p1").with_progress(ProgressSender::new(tx));
    let out = long
        .call(json!({"duration": 0.4, "steps": 4}), cx)
        .await
        .unwrap();
    assert!(out.to_text().contains("completed"), "{out:?}");
    let mut seen = Vec::new();
    while let Ok(event) = rx.try_recv() {
        if let ToolUpdate::Progress {
            progress, total, ..
        } = event.update
        {
            assert_eq!(event.call_id, "p1");
            seen.push((progress, total));
        }
    }
    assert_eq!(
        seen,
        [
            (1.0, Some(4.0)),
            (2.0, Some(4.0)),
            (3.0, Some(4.0)),
            (4.0, Some(4.0))
        ]
    );
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_ends_promptly_and_the_server_keeps_working() {
    let coordinator = common::running(common::everything("ev")).await;
    common::cancel_once_started(
        &coordinator,
        "mcp__ev__trigger-long-running-operation",
        json!({"duration": 30, "steps": 30}),
        "slow",
    )
    .await;
    let echo = common::find(&coordinator.tools(), "mcp__ev__echo");
    common::echoes(&echo, "still here", "after").await;
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_is_an_error_output_suggesting_a_simpler_retry() {
    let coordinator = common::coordinator();
    let spec = common::everything("ev").with_tool_timeout(Duration::from_millis(300));
    coordinator.start_all_and_wait(vec![spec]).await.unwrap();
    let long = common::find(
        &coordinator.tools(),
        "mcp__ev__trigger-long-running-operation",
    );
    let out = long
        .call(json!({"duration": 30, "steps": 30}), ToolContext::new("t"))
        .await
        .unwrap();
    assert!(out.is_error);
    assert!(out.to_text().contains("simpler request"), "{out:?}");
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_megabyte_result_comes_through() {
    let coordinator = common::running(common::everything("ev")).await;
    let echo = common::find(&coordinator.tools(), "mcp__ev__echo");
    let message = "x".repeat(1024 * 1024);
    let out = echo
        .call(json!({"message": message}), ToolContext::new("big"))
        .await
        .unwrap();
    assert_eq!(out.to_text().len(), "Echo: ".len() + 1024 * 1024);
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_refreshes_the_tools_with_an_event() {
    // server-everything registers its capability-dependent tools after initialization and
    // announces them with notifications/tools/list_changed.
    let coordinator = common::coordinator();
    let mut events = coordinator.subscribe();
    coordinator
        .start_all_and_wait(vec![common::everything("ev")])
        .await
        .unwrap();
    let changed = common::wait_for(&mut events, Duration::from_secs(10), |e| {
        matches!(e, McpEvent::ToolsChanged { .. })
    })
    .await;
    let Some(McpEvent::ToolsChanged { server, tools }) = changed else {
        panic!("no ToolsChanged event")
    };
    assert_eq!(server, "ev");
    assert!(
        tools.iter().any(|t| t.name == "simulate-research-query"),
        "{tools:?}"
    );
    assert!(
        coordinator
            .connection("ev")
            .unwrap()
            .log()
            .iter()
            .any(|e| e.message.contains("tool list changed"))
    );
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_fails_fast_and_the_same_proxy_works_after_reconnect() {
    let coordinator = common::running(common::everything("ev")).await;
    let mut events = coordinator.subscribe();
    let tools = coordinator.tools();
    let long = common::find(&tools, "mcp__ev__trigger-long-running-operation");
    let echo = common::find(&tools, "mcp__ev__echo");
    let connection = coordinator.connection("ev").unwrap();
    let pid = connection.pid().unwrap();
    let call = tokio::spawn(async move {
        long.call(
            json!({"duration": 30, "steps": 30}),
            ToolContext::new("doomed"),
        )
        .await
    });
    common::wait_for(&mut events, Duration::from_secs(5), |e| {
        matches!(e, McpEvent::CallStarted { .. })
    })
    .await
    .unwrap();
    common::signal(pid, "-KILL");
    let killed_at = std::time::Instant::now();
    let result = tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .unwrap()
        .unwrap();
    let failed_after = killed_at.elapsed();
    let Err(ToolError::Other(error)) = result else {
        panic!("expected a typed error, got {result:?}")
    };
    let error = error.downcast_ref::<CallError>().expect("a CallError");
    assert!(
        matches!(error.failure, mux_mcp::CallFailure::ConnectionLost),
        "{error:?}"
    );
    assert!(
        failed_after < Duration::from_secs(1),
        "took {failed_after:?}"
    );
    // The coordinator reconnects with backoff; the same proxy then works.
    common::reconnected(&mut events, Duration::from_secs(20))
        .await
        .expect("reconnected");
    assert_ne!(connection.pid(), Some(pid));
    common::echoes(&echo, "back", "again").await;
    coordinator.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnected_server_gives_a_clear_error() {
    let coordinator = common::running(common::everything("ev")).await;
    let echo = common::find(&coordinator.tools(), "mcp__ev__echo");
    let pid = coordinator.connection("ev").unwrap().pid().unwrap();
    coordinator.disconnect("ev").await.unwrap();
    assert!(!common::alive(pid));
    let result = echo
        .call(json!({"message": "x"}), ToolContext::new("d"))
        .await;
    let Err(error) = result else {
        panic!("{result:?}")
    };
    assert!(
        error
            .to_string()
            .contains("`ev` is not connected (it is disconnected)"),
        "{error}"
    );
    // Reconnecting brings the same proxy back.
    coordinator.reconnect("ev").await.unwrap();
    assert_eq!(
        echo.call(json!({"message": "y"}), ToolContext::new("e"))
            .await
            .unwrap()
            .to_text(),
        "Echo: y"
    );
    coordinator.stop_all().await;
}
