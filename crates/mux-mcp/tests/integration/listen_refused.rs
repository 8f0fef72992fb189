//! A 2026-07-28 server that advertises `tools.listChanged` but refuses `subscriptions/listen`
//! (an in-process rmcp Streamable HTTP server: rmcp answers the method with "method not
//! found" unless the handler accepts a filter). The connection falls back to unscoped
//! notifications without failing, and says so in its log.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use mux_mcp::{LogLevel, McpEvent, ServerSpec};
use mux_tool::ToolContext;
use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::{Value, json};
use tokio::net::TcpListener;

/// Every wait in these tests ends within this.
const LIMIT: Duration = Duration::from_secs(20);

/// Lists `flip`, plus `flipped` once `flip` was called; `flip` announces the change unscoped.
struct Flipper {
    flipped: Arc<AtomicBool>,
}

fn tool(name: &'static str) -> rmcp::model::Tool {
    let Value::Object(schema) = json!({"type": "object"}) else {
        unreachable!("a JSON object literal")
    };
    rmcp::model::Tool::new(name, "a test tool", Arc::new(schema))
}

impl ServerHandler for Flipper {
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = vec![tool("flip")];
        if self.flipped.load(Ordering::SeqCst) {
            tools.push(tool("flipped"));
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        _request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.flipped.store(true, Ordering::SeqCst);
        context
            .peer
            .notify_tool_list_changed()
            .await
            .map_err(|err| ErrorData::internal_error(err.to_string(), None))?;
        Ok(CallToolResult::success(vec![ContentBlock::text("flipped")]).into())
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
    }
}

/// Serves a fresh [`Flipper`] per session on 127.0.0.1; returns its URL and the task.
async fn serve() -> (String, tokio::task::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let flipped = Arc::new(AtomicBool::new(false));
    let service = StreamableHttpService::new(
        move || {
            Ok(Flipper {
                flipped: flipped.clone(),
            })
        },
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let task = tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let service = service.clone();
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), TowerToHyperService::new(service))
                    .await;
            });
        }
    });
    (format!("http://127.0.0.1:{port}/mcp"), task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_refusing_subscriptions_listen_connects_and_falls_back_to_unscoped_notifications()
{
    let (url, server) = serve().await;
    let coordinator = common::coordinator();
    let mut events = coordinator.subscribe();
    let report = tokio::time::timeout(
        LIMIT,
        coordinator.start_all_and_wait(vec![ServerSpec::http("rs", &url)]),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(report.connected, ["rs"], "{report:?}");
    let connection = coordinator.connection("rs").unwrap();
    assert_eq!(connection.protocol_version().as_deref(), Some("2026-07-28"));
    let log = connection.log();
    let refusal = log
        .iter()
        .find(|e| e.message.contains("does not serve subscriptions/listen"))
        .unwrap_or_else(|| panic!("no refusal in the log: {log:?}"));
    assert_eq!(refusal.level, LogLevel::Info);
    assert!(!log.iter().any(|e| e.level >= LogLevel::Warning), "{log:?}");

    let flip = coordinator
        .tools()
        .into_iter()
        .find(|t| t.spec().name.as_str() == "mcp__rs__flip")
        .unwrap();
    let out = tokio::time::timeout(LIMIT, flip.call(json!({}), ToolContext::new("f")))
        .await
        .unwrap()
        .unwrap();
    assert!(out.to_text().contains("flipped"), "{out:?}");
    let changed = common::wait_for(&mut events, LIMIT, |e| {
        matches!(e, McpEvent::ToolsChanged { tools, .. } if tools.iter().any(|t| t.name == "flipped"))
    })
    .await;
    assert!(changed.is_some(), "{:?}", connection.log());
    tokio::time::timeout(LIMIT, coordinator.stop_all())
        .await
        .unwrap();
    server.abort();
}
