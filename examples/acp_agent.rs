//! A mux agent for editors: the Agent Client Protocol (v1) on stdin and stdout.
//!
//! ```text
//! cargo run --example acp_agent
//! ```
//!
//! An editor launches it (see docs/acp.md for Zed's `agent_servers` entry) and opens sessions
//! in a project: the agent works in the session's directory with the built-in file, search,
//! shell and todo tools. Reads are allowed; edits and commands ask the editor.
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

use mux::acp::{AcpAgent, SessionParts, SessionSetup};
use mux::llm::LlmClient;
use mux::orchestrator::OrchestratorConfig;
use mux::orchestrator::context::ProjectInstructions;
use mux::orchestrator::session::FileSessionStore;
use mux::tool::Registry;
use mux::tool::builtin::{
    Bash, EditFile, Glob, Grep, ListDir, ReadFile, Sandbox, TodoWrite, WriteFile,
};

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("acp_agent: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let chosen = mux_examples::offline::choose_model()?;
    eprintln!("acp_agent: {}", chosen.description);
    let (client, model) = (chosen.client, chosen.model);
    let sessions = sessions_dir()?;
    let mut agent = AcpAgent::new(move |setup: &SessionSetup| session(setup, &client, &model))
        .info("mux-acp-example", env!("CARGO_PKG_VERSION"))
        .session_store(Arc::new(FileSessionStore::new(sessions)))
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

/// One session's agent, rooted at the session's directory.
fn session(
    setup: &SessionSetup,
    client: &Arc<dyn LlmClient>,
    model: &str,
) -> Result<SessionParts, String> {
    let root = &setup.cwd;
    let sandbox = Sandbox::new(root).map_err(|e| e.to_string())?;
    let tools = Registry::new();
    let registered = [
        tools.register_typed(ListDir::new(sandbox.clone())),
        tools.register_typed(ReadFile::new(sandbox.clone())),
        tools.register_typed(Glob::new(sandbox.clone())),
        tools.register_typed(Grep::new(sandbox.clone())),
        tools.register_typed(WriteFile::new(sandbox.clone())),
        tools.register_typed(EditFile::new(sandbox.clone())),
        tools.register_typed(TodoWrite),
        tools.register_typed(Bash::new(sandbox)),
    ];
    for result in registered {
        result.map_err(|e| e.to_string())?;
    }
    // Reads and the todo list are allowed by rule; edits and commands ask the editor.
    let permissions = mux_examples::allowing(
        root,
        &["list_dir", "read_file", "glob", "grep", "todo_write"],
    )?;
    let config = OrchestratorConfig::new(model).system_prompt(
        "You are a coding assistant working inside the user's editor. Look before you act; \
         cite file names.",
    );
    let instructions = ProjectInstructions::new(root);
    Ok(
        SessionParts::new(Arc::clone(client), config, tools, permissions)
            .configure(move |builder| builder.context(instructions)),
    )
}
