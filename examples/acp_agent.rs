//! A mux agent for editors: the Agent Client Protocol (v1) on stdin and stdout.
//!
//! ```text
//! cargo run --example acp_agent
//! ```
//!
//! An editor launches it (see docs/acp.md for Zed's `agent_servers` entry) and opens sessions
//! in a project: the agent works in the session's directory with the built-in file, search,
//! shell and todo tools. Read-only tools run; edits and commands ask the editor.
//!
//! - With `ANTHROPIC_API_KEY`, `OPENAI_API_KEY` or `OPENAI_BASE_URL` it uses that provider
//!   (`MUX_MODEL` picks the model), as the quickstart does.
//! - With none it runs offline on the quickstart's scripted model: it lists the directory,
//!   reads the README and asks to run `git log`; a prompt `call TOOL {json}` calls any tool.
//! - `/explain` is a slash command for the quickstart's question.
//! - Sessions are kept in `MUX_ACP_SESSIONS` (default `~/.local/share/mux/acp-sessions`), so
//!   the editor can list and reload them.
//! - A session's directory must not be `/`, a home directory or one holding a home:
//!   `MUX_ACP_ALLOW_BROAD_ROOTS=1` allows them.
//! - An input line over `MUX_ACP_MAX_LINE_BYTES` (default 64 MiB) is refused.
//!
//! Nothing but protocol goes to stdout; diagnostics go to stderr.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use mux::acp::AcpAgent;
use mux::orchestrator::session::FileSessionStore;

#[tokio::main]
async fn main() -> ExitCode {
    mux_examples::exit_code_as("acp_agent", run().await)
}

async fn run() -> Result<(), String> {
    let chosen = mux_examples::offline::choose_model()?;
    eprintln!("acp_agent: {}", chosen.description);
    // The agent, described once (examples/src/coding_agent.rs); each editor session gets
    // its tools at the session's directory.
    let agent = mux_examples::coding_agent::agent(chosen.client, &chosen.model)
        .map_err(|e| e.to_string())?;
    let mut agent = AcpAgent::new(agent)
        .info("mux-acp-example", env!("CARGO_PKG_VERSION"))
        .session_store(Arc::new(FileSessionStore::new(sessions_dir()?)))
        .env_key_auth(
            "anthropic-api-key",
            "Anthropic API key",
            "ANTHROPIC_API_KEY",
        )
        .env_key_auth("openai-api-key", "OpenAI API key", "OPENAI_API_KEY")
        .command(
            "explain",
            "Explain this project",
            "Look around this directory and tell me in a few sentences what this project is. $ARGUMENTS",
        );
    match std::env::var("MUX_ACP_ALLOW_BROAD_ROOTS").as_deref() {
        Ok("1") => agent = agent.allow_broad_roots(true),
        Ok("0") | Err(std::env::VarError::NotPresent) => {}
        Ok(other) => {
            return Err(format!(
                "MUX_ACP_ALLOW_BROAD_ROOTS is 0 or 1, not `{other}`"
            ));
        }
        Err(err) => return Err(format!("MUX_ACP_ALLOW_BROAD_ROOTS: {err}")),
    }
    if let Some(bytes) = std::env::var_os("MUX_ACP_MAX_LINE_BYTES") {
        let bytes = bytes
            .to_str()
            .and_then(|b| b.parse::<usize>().ok())
            .filter(|b| *b > 0)
            .ok_or("MUX_ACP_MAX_LINE_BYTES must be a number of bytes")?;
        agent = agent.max_line_bytes(bytes);
    }
    agent.serve_stdio().await.map_err(|e| e.to_string())
}

fn sessions_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("MUX_ACP_SESSIONS") {
        return Ok(PathBuf::from(dir));
    }
    let home = std::env::var_os("HOME").ok_or("set HOME or MUX_ACP_SESSIONS")?;
    Ok(PathBuf::from(home).join(".local/share/mux/acp-sessions"))
}
