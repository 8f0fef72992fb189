//! mux is agentic infrastructure for Rust: the middle layer between an application's UI and
//! an LLM. This facade re-exports the layers behind features:
//!
//! | feature | module | what it brings |
//! |---|---|---|
//! | `tool` (default) | [`tool`] | the `Tool` trait, typed tools, registry, filters, executor |
//! | `builtin` | [`builtin`] | files, search, bash and todo tools, sandboxed to a root |
//! | `web` | [`builtin`] | adds `web_fetch` (reqwest with rustls) |
//! | `llm` | [`llm`] | messages, `LlmClient`, stream events, accumulator, errors, retries |
//! | `anthropic`, `openai`, `gemini` | [`llm`]`::anthropic`, ... | the providers (reqwest + rustls) |
//! | `permission` | [`permission`] | modes, `Tool(specifier)` rules, scopes, shell-aware matching, the approval gate |
//! | `mcp` | [`mcp`] | MCP servers as tools: configs, connections, coordinator, tool proxies (with `orchestrator`: the loop offers them) |
//! | `testing` | [`llm`]`::testing` | a scripted model and a local replay server for tests |
//! | `orchestrator` | [`orchestrator`] | the think-act loop: events, approvals, sessions, hooks, compaction |
//! | `sqlite`, `postgres` | [`orchestrator`]`::session` | session stores on SQLite (a file, WAL) and PostgreSQL (shared by many processes), on sqlx |
//! | `agents` | [`agents`] | runtime and handles, subagents, `task` tool, voting, decomposition, presets, console face |
//! | `web-face` | [`web`] | the web face: AG-UI 1.0 over HTTP/SSE as an axum `Router`, approvals as interrupts, reattach and stop |
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
#![forbid(unsafe_code)]

/// The README's code, compiled and run as doctests.
#[cfg(all(doctest, feature = "full"))]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

#[cfg(feature = "tool")]
#[doc(inline)]
pub use mux_tool as tool;

#[cfg(feature = "builtin")]
#[doc(inline)]
pub use mux_tool::builtin;

#[cfg(feature = "llm")]
#[doc(inline)]
pub use mux_llm as llm;

#[cfg(feature = "permission")]
#[doc(inline)]
pub use mux_permission as permission;

#[cfg(feature = "mcp")]
#[doc(inline)]
pub use mux_mcp as mcp;

#[cfg(feature = "orchestrator")]
#[doc(inline)]
pub use mux_orchestrator as orchestrator;

#[cfg(feature = "agents")]
#[doc(inline)]
pub use mux_agents as agents;

#[cfg(feature = "web-face")]
#[doc(inline)]
pub use mux_web as web;

/// The names most programs need, in one import.
pub mod prelude {
    #[cfg(feature = "mcp")]
    #[doc(no_inline)]
    pub use mux_mcp::{Coordinator, CoordinatorConfig, McpEvent, ServerSpec, load_config};
    #[cfg(feature = "tool")]
    #[doc(no_inline)]
    pub use mux_tool::{
        Approval, ApprovalGate, ApprovalPolicy, CallOutcome, CallScope, Content, ExecError,
        Executor, PostHook, PostHookAction, PreHook, PreHookAction, Registry, Subject, Tool,
        ToolAnnotations, ToolCall, ToolContext, ToolError, ToolFilter, ToolOutput, ToolSpec,
        TypedTool,
    };

    #[cfg(feature = "llm")]
    #[doc(no_inline)]
    pub use mux_llm::{
        ContentBlock, LlmClient, LlmError, Message, Request, Response, RetryPolicy, Role,
        StopReason, StreamEvent, ToolChoice, Usage,
    };

    #[cfg(feature = "permission")]
    #[doc(no_inline)]
    pub use mux_permission::{
        Answer, Asker, Decision, Mode, PermissionGate, Permissions, Remember, Rule, RuleSet, Scope,
        ScopeRules, Verdict,
    };

    #[cfg(feature = "orchestrator")]
    #[doc(no_inline)]
    pub use mux_orchestrator::{
        Agent, ApprovalDecision, LoopError, LoopEvent, LoopInput, LoopState, Orchestrator,
        OrchestratorConfig, Run, RunSummary,
    };

    #[cfg(feature = "testing")]
    #[doc(no_inline)]
    pub use mux_llm::testing::ScriptedClient;

    #[cfg(feature = "agents")]
    #[doc(no_inline)]
    pub use mux_agents::{
        AgentDefinition, AgentEvent, AgentHandle, AgentRuntime, Decomposition, Voting, presets,
    };
}
