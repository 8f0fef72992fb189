//! Interop over Streamable HTTP (server-everything on 127.0.0.1) and with server-filesystem.

use crate::common;

use std::time::Duration;

use mux_mcp::{ConnectError, ConnectionOptions, ServerConnection, ServerSpec};
use mux_tool::{ProgressSender, Tool, ToolContext, ToolUpdate};
use serde_json::json;

async fn wait_listening(port: u16) {
    for _ in 0..300 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("server-everything did not listen on port {port}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_lists_calls_and_reports_progress() {
    let port = common::free_port();
    let mut server = common::everything_http_command(port).spawn().unwrap();
    wait_listening(port).await;
    let coordinator = common::coordinator();
    let spec = ServerSpec::http("web", format!("http://127.0.0.1:{port}/mcp"))
        .with_header("X-Test", "1")
        .with_bearer_token("not-checked-by-this-server");
    let report = coordinator.start_all_and_wait(vec![spec]).await.unwrap();
    assert_eq!(report.connected, ["web"], "{report:?}");
    let tools = coordinator.tools();
    let echo = tools
        .iter()
        .find(|t| t.spec().name.as_str() == "mcp__web__echo")
        .unwrap();
    common::echoes(echo, "over http", "h1").await;

    let long = tools
        .iter()
        .find(|t| t.spec().name.as_str() == "mcp__web__trigger-long-running-operation")
        .unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let out = long
        .call(
            json!({"duration": 0.3, "steps": 3}),
            ToolContext::new("h2").with_progress(ProgressSender::new(tx)),
        )
        .await
        .unwrap();
    assert!(out.to_text().contains("completed"));
    let mut steps = 0;
    while let Ok(event) = rx.try_recv() {
        if matches!(event.update, ToolUpdate::Progress { .. }) {
            steps += 1;
        }
    }
    assert_eq!(steps, 3);
    let big = "y".repeat(1024 * 1024);
    let out = echo
        .call(json!({"message": big}), ToolContext::new("h3"))
        .await
        .unwrap();
    assert_eq!(out.to_text().len(), 6 + 1024 * 1024);
    coordinator.stop_all().await;
    server.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_is_not_there_fails_to_connect() {
    let port = common::free_port();
    let connection = ServerConnection::new(
        ServerSpec::http("nobody", format!("http://127.0.0.1:{port}/mcp")),
        ConnectionOptions {
            connect_timeout: Duration::from_secs(10),
            ..ConnectionOptions::default()
        },
    );
    let err = connection.connect().await.unwrap_err();
    assert!(
        matches!(
            err,
            ConnectError::Handshake { .. } | ConnectError::Timeout { .. }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("`nobody`"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_filesystem_reads_inside_its_root() {
    let root = std::env::temp_dir().join(format!("mux-mcp-fs-{}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("hello.txt"), "hello from mux").unwrap();
    let root = root.canonicalize().unwrap();
    let coordinator = common::coordinator();
    let report = coordinator
        .start_all_and_wait(vec![common::filesystem("fs", &root)])
        .await
        .unwrap();
    assert_eq!(report.connected, ["fs"], "{report:?}");
    let tools = coordinator.tools();
    let read = tools
        .iter()
        .find(|t| t.spec().name.as_str() == "mcp__fs__read_text_file")
        .unwrap();
    assert!(read.spec().annotations.read_only);
    let path = root.join("hello.txt");
    let out = read
        .call(json!({"path": path}), ToolContext::new("f1"))
        .await
        .unwrap();
    assert!(!out.is_error);
    assert!(out.to_text().contains("hello from mux"), "{out:?}");
    // Outside the root: the server answers with isError, which becomes an error output.
    let out = read
        .call(json!({"path": "/etc/hostname"}), ToolContext::new("f2"))
        .await
        .unwrap();
    assert!(out.is_error, "{out:?}");
    let write = tools
        .iter()
        .find(|t| t.spec().name.as_str() == "mcp__fs__write_file")
        .unwrap();
    assert!(!write.spec().annotations.read_only);
    coordinator.stop_all().await;
}
