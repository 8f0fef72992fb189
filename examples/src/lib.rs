//! Helpers shared by the runnable examples in this folder. Run an example from the repository
//! root with `cargo run --example NAME`.

use std::fmt::Display;
use std::process::ExitCode;

pub mod a2a_agent;
pub mod coding_agent;
pub mod evals;
pub mod llm_call;
pub mod mcp_agent_server;
pub mod mcp_inspect;
pub mod mcp_serving;
pub mod mcp_tools_server;
pub mod offline;
pub mod permission_check;
pub mod tool_call;
pub mod web_agent;

/// Prints a step of an example as `==> what` followed by an indented detail.
pub fn step(what: impl Display, detail: impl Display) {
    println!("==> {what}");
    for line in detail.to_string().lines() {
        println!("    {line}");
    }
}

/// An example's exit: success, or `error: MESSAGE` on stderr and a failure code.
pub fn exit_code(result: Result<(), String>) -> ExitCode {
    exit_code_as("error", result)
}

/// An example's exit: success, or `PROGRAM: MESSAGE` on stderr and a failure code.
pub fn exit_code_as(program: &str, result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("{program}: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A permission policy over `root` whose project scope allows the named tools by rule; every
/// other call asks. The examples allow their read-only tools this way.
pub fn allowing(
    root: &std::path::Path,
    tools: &[&str],
) -> Result<mux::permission::Permissions, String> {
    use mux::permission::{PathContext, Permissions, RuleSet, Scope, ScopeRules};
    let rules = tools
        .iter()
        .try_fold(RuleSet::new(), |rules, tool| rules.with_allow(tool))
        .map_err(|e| e.to_string())?;
    Ok(Permissions::builder(PathContext::new(root))
        .scope(Scope::Project, ScopeRules::new(rules))
        .build())
}
