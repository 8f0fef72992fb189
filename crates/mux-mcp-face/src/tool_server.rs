//! Your own tools served over MCP under permission rules:
//! [`ToolServer`], the tools' counterpart of [`crate::AgentTool`].

use mux_mcp::{Callers, McpServer};
use mux_permission::{PermissionGate, Permissions, asker_fn};
use mux_tool::{Executor, Registry};

use crate::caller_answer::{QUOTED_ARGS, answer_of, quote};

/// A registry of tools as an MCP server whose every call passes a permission policy: rules
/// and mode allow or deny, and a call they leave open is put to the calling client
/// ([`Callers::ask_approval`]: elicitation at 2025-11-25, `input_required` at 2026-07-28). A
/// client that can do neither gets the call refused with the reason; it never runs unasked.
///
/// ```no_run
/// use mux_mcp_face::ToolServer;
/// use mux_permission::{PathContext, Permissions};
/// use mux_tool::Registry;
/// use mux_tool::builtin::{self, Sandbox};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let root = std::env::current_dir()?;
/// let tools = Registry::new();
/// builtin::register(&tools, &Sandbox::new(&root)?)?;
/// let permissions = Permissions::builder(PathContext::new(&root)).build();
/// ToolServer::new(tools, permissions).into_server().serve_stdio().await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ToolServer {
    tools: Registry,
    permissions: Permissions,
    callers: Callers,
}

impl ToolServer {
    /// `tools` under `permissions`.
    pub fn new(tools: Registry, permissions: Permissions) -> Self {
        Self {
            tools,
            permissions,
            callers: Callers::new(),
        }
    }

    /// Asks through `callers` (shared with a server built elsewhere) instead of a table of
    /// its own.
    pub fn with_callers(mut self, callers: Callers) -> Self {
        self.callers = callers;
        self
    }

    /// The callers table the server asks through.
    pub fn callers(&self) -> Callers {
        self.callers.clone()
    }

    /// The MCP server: name, version and instructions can still be set on it.
    pub fn into_server(self) -> McpServer {
        let asking = self.callers.clone();
        let asker = asker_fn(move |call, _subject, verdict| {
            let callers = asking.clone();
            async move {
                let question = format!(
                    "Allow `{}` with {}? It needs approval because: {}",
                    call.name,
                    quote(&call.input.to_string(), QUOTED_ARGS),
                    verdict.reason
                );
                answer_of(callers.ask_approval(&call.id, question).await)
            }
        });
        let gate = PermissionGate::new(self.permissions, asker);
        let executor = Executor::builder(self.tools).gate(gate).build();
        McpServer::new(executor).with_callers(self.callers)
    }
}
