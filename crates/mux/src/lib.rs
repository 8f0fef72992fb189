//! mux is agentic infrastructure for Rust: the middle layer between an application's UI and
//! an LLM. This facade re-exports the layers behind features:
//!
//! | feature | module | what it brings |
//! |---|---|---|
//! | `tool` (default) | [`mod@tool`] | the `Tool` trait, typed tools, registry, filters, executor |
//! | `builtin` | [`builtin`] | files, search, bash and todo tools, sandboxed to a root |
//! | `web-fetch` | [`builtin`] | adds `web_fetch` (reqwest with rustls) |
//! | `llm` | [`llm`] | messages, `LlmClient`, stream events, accumulator, errors, retries |
//! | `anthropic`, `openai`, `gemini` | [`llm`]`::anthropic`, ... | the providers (reqwest + rustls) |
//! | `permission` | [`permission`] | modes, `Tool(specifier)` rules, scopes, shell-aware matching, the approval gate |
//! | `mcp` | [`mcp`] | MCP servers as tools: configs, connections, coordinator, tool proxies (with `orchestrator`: the loop offers them) |
//! | `mcp-server` | [`mcp`] | the server side: any tool set served over stdio and Streamable HTTP (`McpServer`, `Callers`), an agent as one tool (`AgentTool`), your tools under rules (`ToolServer`) |
//! | `testing` | [`llm`]`::testing` | a scripted model and a local replay server for tests |
//! | `store` | [`store`] | sessions and runs in memory and in files (`sqlite`, `postgres`: in databases) |
//! | `orchestrator` | [`orchestrator`] | the think-act loop: events, approvals, sessions, hooks, compaction |
//! | `sqlite`, `postgres` | [`orchestrator`]`::session` | session stores on SQLite (a file, WAL) and PostgreSQL (shared by many processes), on sqlx |
//! | `agents` | [`agents`] | runtime and handles, subagents, `task` tool, voting, decomposition, presets, console face |
//! | `acp` | [`acp`] | the ACP face: a mux agent inside editors over the Agent Client Protocol (stdio) |
//! | `web` | [`web`] | the web face: AG-UI 1.0 over HTTP/SSE as an axum `Router`, approvals as interrupts, reattach and stop |
//! | `a2a` | [`a2a`] | the A2A face: one agent over A2A 1.0 (JSON-RPC over HTTP + SSE), approvals as `input-required` |
//! | `temporal` | [`temporal`] | agents on Temporal: the loop as a workflow, model and tool calls as activities, approvals as updates |
//! | `page` | [`web`]`::page` | the web face's chat page: `AguiRouter::with_page()` serves `/`, `/app.js`, `/app.css` |
//! | `full` | all of the above | every layer |
//!
//! Library authors who only define tools can depend on `mux-tool` directly; applications
//! depend on `mux` and pick features.
//!
//! # Example
//!
//! ```
//! # #[cfg(feature = "tool")] {
//! use mux::prelude::*;
//! use mux::tool::{CallScope, Executor, ToolCall};
//! use serde_json::json;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Args { city: String }
//!
//! struct Weather;
//! impl TypedTool for Weather {
//!     type Args = Args;
//!     const NAME: &'static str = "weather";
//!     fn description(&self) -> String { "Current weather for a city".into() }
//!     fn annotations(&self) -> ToolAnnotations { ToolAnnotations::read_only() }
//!     async fn call(&self, args: Args, _: ToolContext) -> Result<ToolOutput, ToolError> {
//!         Ok(ToolOutput::text(format!("Sunny in {}", args.city)))
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let registry = Registry::new();
//! registry.register_typed(Weather).unwrap();
//! let executor = Executor::new(registry);
//! let outcome = executor
//!     .execute(ToolCall::new("1", "weather", json!({"city": "Oslo"})), &CallScope::default())
//!     .await;
//! assert_eq!(outcome.output().to_text(), "Sunny in Oslo");
//! # });
//! # }
//! ```
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]

/// The README's code, compiled and run as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// docs/web.md's code, compiled and run as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/web.md")]
pub struct WebDocDoctests;

/// docs/web-reference.md (no Rust code today; any block added is compiled and run).
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/web-reference.md")]
pub struct WebReferenceDocDoctests;

/// docs/web-design.md (no Rust code today; any block added is compiled and run).
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/web-design.md")]
pub struct WebDesignDocDoctests;

/// docs/mcp.md's code, compiled and run as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/mcp.md")]
pub struct McpDocDoctests;

/// docs/mcp-reference.md's code, compiled and run as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/mcp-reference.md")]
pub struct McpReferenceDocDoctests;

/// docs/mcp-design.md (no Rust code today; any block added is compiled and run).
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/mcp-design.md")]
pub struct McpDesignDocDoctests;

/// docs/sessions.md's code, compiled and run as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/sessions.md")]
pub struct SessionsDocDoctests;

/// docs/sessions-reference.md's code, compiled and run as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/sessions-reference.md")]
pub struct SessionsReferenceDocDoctests;

/// docs/sessions-design.md (no Rust code today; any block added is compiled and run).
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/sessions-design.md")]
pub struct SessionsDesignDocDoctests;

/// docs/benchmarks.md (no code today; any block added is compiled).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/benchmarks.md")]
pub struct BenchmarksDocDoctests;

/// docs/agents.md's code, compiled and run as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/agents.md")]
pub struct AgentsDocDoctests;

/// docs/agents-reference.md (no Rust code today; any block added is compiled and run).
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/agents-reference.md")]
pub struct AgentsReferenceDocDoctests;

/// docs/orchestrator.md's code, compiled and run as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/orchestrator.md")]
pub struct OrchestratorDocDoctests;

/// docs/orchestrator-reference.md's code, compiled as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/orchestrator-reference.md")]
pub struct OrchestratorReferenceDocDoctests;

/// docs/orchestrator-design.md (no Rust code today; any block added is compiled and run).
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/orchestrator-design.md")]
pub struct OrchestratorDesignDocDoctests;

/// docs/permission.md's code, compiled and run as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/permission.md")]
pub struct PermissionDocDoctests;

/// docs/permission-reference.md (no Rust code today; any block added is compiled and run).
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/permission-reference.md")]
pub struct PermissionReferenceDocDoctests;

/// docs/permission-design.md (no Rust code today; any block added is compiled and run).
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/permission-design.md")]
pub struct PermissionDesignDocDoctests;

/// docs/builtin-tools.md's code, compiled and run as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/builtin-tools.md")]
pub struct BuiltinToolsDocDoctests;

/// docs/builtin-tools-reference.md (no Rust code today; any block added is compiled and run).
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/builtin-tools-reference.md")]
pub struct BuiltinToolsReferenceDocDoctests;

/// docs/builtin-tools-design.md (no Rust code today; any block added is compiled and run).
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/builtin-tools-design.md")]
pub struct BuiltinToolsDesignDocDoctests;

/// docs/llm.md's code, compiled and run as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/llm.md")]
pub struct LlmDocDoctests;

/// docs/acp-reference.md (no Rust code today; any block added is compiled and run).
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/acp-reference.md")]
pub struct AcpReferenceDocDoctests;

/// docs/acp-design.md (no Rust code today; any block added is compiled and run).
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/acp-design.md")]
pub struct AcpDesignDocDoctests;

/// docs/tools.md's code, compiled and run as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/tools.md")]
pub struct ToolsDocDoctests;

/// docs/tools-reference.md (no Rust code today; any block added is compiled and run).
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/tools-reference.md")]
pub struct ToolsReferenceDocDoctests;

/// docs/a2a.md's code, compiled and run as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/a2a.md")]
pub struct A2aDocDoctests;

/// This crate's README.md (the crates.io page), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct FacadeReadmeDoctests;

/// docs/architecture.md (no code today; any block added is compiled).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/architecture.md")]
pub struct ArchitectureDocDoctests;

/// docs/xtask.md (no code today; any block added is compiled).
#[cfg(doctest)]
#[doc = include_str!("../../../docs/xtask.md")]
pub struct XtaskDocDoctests;

/// docs/evals.md's code, compiled and run as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/evals.md")]
pub struct EvalsDocDoctests;

/// docs/evals-reference.md (no Rust code today; any block added is compiled and run).
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/evals-reference.md")]
pub struct EvalsReferenceDocDoctests;

/// docs/observability.md's code, compiled and run as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../docs/observability.md")]
pub struct ObservabilityDocDoctests;

#[cfg(feature = "otel")]
pub mod otel;

#[cfg(feature = "tool")]
#[doc(inline)]
pub use mux_tool as tool;

/// Makes a typed tool of an `async fn` (see [`mux_macros::tool`]).
///
/// ```
/// /// The weather in a city.
/// #[mux::tool(read_only)]
/// async fn weather(
///     /// The city, in English.
///     city: String,
/// ) -> Result<String, String> {
///     Ok(format!("Sunny in {city}"))
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let tools = mux::tool::Registry::new();
/// tools.register_typed(Weather)?;
/// assert!(tools.contains("weather"));
/// # Ok(()) }
/// ```
///
/// Every argument must have a JSON Schema (and deserialize); one that has none does not
/// compile:
///
/// ```compile_fail,E0277
/// /// When it happened.
/// #[mux::tool]
/// async fn when(at: std::time::Instant) -> String {
///     format!("{at:?}")
/// }
/// ```
///
/// Nor does a function that is not `async`, or one without a description:
///
/// ```compile_fail
/// /// Not async.
/// #[mux::tool]
/// fn now() -> String {
///     String::new()
/// }
/// ```
///
/// ```compile_fail
/// #[mux::tool]
/// async fn undocumented(x: u8) -> String {
///     x.to_string()
/// }
/// ```
#[cfg(feature = "tool")]
pub use mux_macros::tool;

/// What `#[mux::tool]`'s expansion names; not part of the API.
#[cfg(feature = "tool")]
#[doc(hidden)]
pub mod __private {
    pub use mux_tool::schemars;
    pub use serde;
}

#[cfg(feature = "builtin")]
#[doc(inline)]
pub use mux_tool::builtin;

#[cfg(feature = "llm")]
#[doc(inline)]
pub use mux_llm as llm;

#[cfg(feature = "permission")]
#[doc(inline)]
pub use mux_permission as permission;

/// MCP: servers' tools in the loop (configs, connections, coordinator, tool proxies; mux-mcp),
/// and with `mcp-server` the server side: any tool set served over stdio and Streamable HTTP
/// ([`McpServer`](crate::mcp::McpServer)), an agent as one tool
/// ([`AgentTool`](crate::mcp::AgentTool)) and your tools under permission rules
/// ([`ToolServer`](crate::mcp::ToolServer)), from mux-mcp-face.
#[cfg(feature = "mcp")]
pub mod mcp {
    #[doc(inline)]
    pub use mux_mcp::*;

    #[cfg(feature = "mcp-server")]
    #[doc(inline)]
    pub use mux_mcp_face::{
        ASK_TOOL, AgentTool, AskArgs, DEFAULT_ASK_TIMEOUT, DEFAULT_MAX_SESSIONS, ToolServer,
    };
}

#[cfg(feature = "store")]
#[doc(inline)]
pub use mux_store as store;

#[cfg(feature = "orchestrator")]
#[doc(inline)]
pub use mux_orchestrator as orchestrator;

#[cfg(feature = "agents")]
#[doc(inline)]
pub use mux_agents as agents;

#[cfg(feature = "acp")]
#[doc(inline)]
pub use mux_acp as acp;

#[cfg(feature = "web")]
#[doc(inline)]
pub use mux_web as web;

#[cfg(feature = "a2a")]
#[doc(inline)]
pub use mux_a2a as a2a;

/// Agents on Temporal: an `Agent` as a Temporal workflow (model and tool calls as activities,
/// approvals as updates, cancel as workflow cancellation, the history as a query).
#[cfg(feature = "temporal")]
#[doc(inline)]
pub use mux_temporal as temporal;

/// Evals: datasets of cases run offline from cassettes or live, evaluators, reports, comparisons.
#[cfg(feature = "eval")]
#[doc(inline)]
pub use mux_eval as eval;

/// The names a first program needs, in one import: an agent, a tool of its own, approvals,
/// events, sessions and a scripted model. Everything else is one path away (`mux::tool::…`,
/// `mux::llm::…`, …).
pub mod prelude {
    #[cfg(feature = "tool")]
    #[doc(no_inline)]
    pub use mux_tool::{
        ApprovalPolicy, Registry, Tool, ToolAnnotations, ToolContext, ToolError, ToolOutput,
        TypedTool,
    };

    #[cfg(feature = "llm")]
    #[doc(no_inline)]
    pub use mux_llm::{LlmClient, Message, Response};

    #[cfg(feature = "permission")]
    #[doc(no_inline)]
    pub use mux_permission::{Answer, Mode, Permissions};

    #[cfg(feature = "orchestrator")]
    #[doc(no_inline)]
    pub use mux_orchestrator::{
        Agent, LlmClientExt, LoopError, LoopEvent, LoopInput, Orchestrator, OrchestratorConfig,
        RunSummary, session::FileSessionStore,
    };

    #[cfg(all(feature = "orchestrator", feature = "mcp"))]
    #[doc(no_inline)]
    pub use mux_orchestrator::McpServers;

    #[cfg(feature = "testing")]
    #[doc(no_inline)]
    pub use mux_llm::testing::ScriptedClient;
}
