//! The examples' coding agent, described once and served on every face (`acp_agent`,
//! `web_agent`, `one_agent`): mux's built-in tools confined to each session's directory, the
//! project's instructions, and the default approvals (read-only tools run; edits and commands
//! ask the editor or the page).

use std::sync::Arc;

use mux::llm::LlmClient;
use mux::orchestrator::{Agent, AgentBuildError, AgentBuilder};

/// The instructions every face shares.
pub const INSTRUCTIONS: &str = "You are a coding assistant working in the user's project. \
Look before you act; cite file names.";

/// The agent over `client` and `model`; without a face it works in the current directory.
pub fn agent(client: Arc<dyn LlmClient>, model: &str) -> Result<Agent, AgentBuildError> {
    builder(client, model).build()
}

/// The agent's description, for a caller that changes a setting (its root, its store).
pub fn builder(client: Arc<dyn LlmClient>, model: &str) -> AgentBuilder {
    Agent::builder_shared(client, model)
        .instructions(INSTRUCTIONS)
        .builtin_tools()
        .project_instructions()
}
