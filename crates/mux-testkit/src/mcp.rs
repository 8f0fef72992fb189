//! An MCP server with one tool, `echo`, for tests and benchmarks that need a Rust MCP peer in
//! process or in a child (rmcp's server side; feature `mcp`).

use std::sync::Arc;

use rmcp::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Value, json};

/// The echo server: one tool, `echo`, that returns its `text` argument after a prefix.
#[derive(Clone, Debug, Default)]
pub struct Echo {
    prefix: String,
}

impl Echo {
    /// Echoes the text as it came.
    pub fn new() -> Self {
        Self::default()
    }

    /// Echoes the text after `prefix` (so a test can tell which server answered).
    pub fn prefixed(prefix: impl Into<String>) -> Self {
        Self {
            prefix: prefix.into(),
        }
    }
}

impl ServerHandler for Echo {
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let Value::Object(schema) =
            json!({"type": "object", "properties": {"text": {"type": "string"}}})
        else {
            return Err(ErrorData::internal_error("schema is not an object", None));
        };
        Ok(ListToolsResult::with_all_items(vec![
            rmcp::model::Tool::new("echo", "Echoes its text", Arc::new(schema)),
        ]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let text = request
            .arguments
            .as_ref()
            .and_then(|args| args.get("text"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let reply = format!("{}{text}", self.prefix);
        Ok(CallToolResult::success(vec![ContentBlock::text(reply)]).into())
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}
