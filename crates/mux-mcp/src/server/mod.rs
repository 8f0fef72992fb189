//! The server side (feature `server`): any mux tool set served as an MCP server over stdio or
//! Streamable HTTP, on rmcp's server.
//!
//! - Tools come from an [`Executor`]: its registry view gives the list (schemas, annotations),
//!   and every call runs through it (validation, hooks, the approval gate, timeouts, the
//!   output limit).
//! - A call's progress becomes `notifications/progress` (when the client sent a progress
//!   token), its partial output `notifications/message` at `info`; `notifications/cancelled`
//!   cancels the call's token; `isError` carries tool errors; JSON output becomes
//!   `structuredContent`.
//! - The approval gate's questions (and a tool's own elicitation, sampling or roots requests)
//!   go to the caller through [`Callers`]: requests over the session for 2025-11-25 clients,
//!   `input_required` results for 2026-07-28 clients. A client that declared neither gets a
//!   refusal, never an unasked run.

mod callers;
mod catalog;
mod convert;
mod error;
mod handler;
mod http;
mod unreadable;

use std::sync::Arc;

use mux_tool::Executor;
use rmcp::ServiceExt;
use rmcp::model::Implementation;

pub use callers::{APPROVAL_KEY, CALLER_TIMEOUT, CallerAnswer, CallerError, Callers};
pub use catalog::{Catalog, CatalogError, Offers, PromptOutcome};
pub use error::ServeError;
pub use handler::{MAX_PAUSED, PAUSE_LIMIT};
pub use http::{
    DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_BODY_BYTES, DEFAULT_MAX_CONNECTIONS, DEFAULT_REQUEST_TIMEOUT,
    HttpOptions, HttpServer,
};

use handler::{Handler, Shared};

/// An MCP server over a mux [`Executor`].
///
/// ```no_run
/// use mux_mcp::{McpServer, HttpOptions};
/// use mux_tool::{Executor, Registry};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = Registry::new();
/// // registry.register_typed(...)?;
/// let server = McpServer::new(Executor::new(registry)).with_name("my-tools", "1.0.0");
/// let http = server.serve_http(HttpOptions::loopback(8848)).await?;
/// println!("serving at {}", http.url());
/// http.wait().await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpServer {
    executor: Executor,
    callers: Callers,
    catalog: Option<Arc<dyn Catalog>>,
    info: Implementation,
    instructions: Option<String>,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("name", &self.info.name)
            .field("tools", &self.executor.tools().names())
            .field("catalog", &self.catalog.is_some())
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// Serves the executor's tools, named `mux` with mux-mcp's version until
    /// [`McpServer::with_name`].
    pub fn new(executor: Executor) -> Self {
        Self {
            executor,
            callers: Callers::new(),
            catalog: None,
            info: Implementation::new("mux", env!("CARGO_PKG_VERSION")),
            instructions: None,
        }
    }

    /// The name and version the server announces.
    pub fn with_name(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.info = Implementation::new(name, version);
        self
    }

    /// Instructions for the client's model.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Routes calls through this table, so the gate's asker (built before the server) can
    /// reach callers. Without it the server has its own ([`McpServer::callers`]).
    pub fn with_callers(mut self, callers: Callers) -> Self {
        self.callers = callers;
        self
    }

    /// Serves resources, prompts and completions from `catalog`.
    pub fn with_catalog(mut self, catalog: Arc<dyn Catalog>) -> Self {
        self.catalog = Some(catalog);
        self
    }

    /// The table of calls in progress: how to ask a call's client.
    pub fn callers(&self) -> Callers {
        self.callers.clone()
    }

    fn shared(self) -> Arc<Shared> {
        Arc::new(Shared::new(
            self.executor,
            self.callers,
            self.catalog,
            self.info,
            self.instructions,
        ))
    }

    /// Serves one session over this process's stdin and stdout until the client closes it
    /// (rmcp's `stdio_pipes`: non-blocking when they are pipes, as under an MCP client).
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        let (read, write) = rmcp::transport::stdio_pipes();
        self.serve_io(read, write).await
    }

    /// Serves one session over a byte stream pair until the client closes it.
    pub async fn serve_io<R, W>(self, read: R, write: W) -> Result<(), ServeError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        let handler = Handler::new(self.shared());
        let running = handler
            .serve((read, write))
            .await
            .map_err(|err| ServeError::Session(err.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|err| ServeError::Session(err.to_string()))?;
        Ok(())
    }

    /// Listens for Streamable HTTP and serves every session (2025-11-25 sessions with
    /// resumable SSE streams, 2026-07-28 stateless requests) until shut down.
    pub async fn serve_http(self, options: HttpOptions) -> Result<HttpServer, ServeError> {
        http::serve(self.shared(), options).await
    }
}
