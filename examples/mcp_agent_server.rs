//! One mux agent as an MCP server with one tool, `ask {prompt, session_id?}`: the examples'
//! coding agent working in a root, over stdio (default) or Streamable HTTP.
//!
//! ```text
//! cargo run --example mcp_agent_server -- --root DIR [--settings FILE]... [--http PORT] [--offline]
//! ```
//!
//! Each `ask` answers with the agent's reply and a `session_id`; passing it again continues
//! that conversation. While the agent works, its text streams as log messages and its tool
//! calls as progress. Calls its settings do not allow ask the calling client (elicitation, or
//! `input_required` at 2026-07-28) and are refused when it can do neither. Cancelling the
//! call stops the agent and its commands. It uses `ANTHROPIC_API_KEY` or `OPENAI_API_KEY`
//! when set (unless `--offline`), else an offline scripted model (`call TOOL {json}` calls a tool). Over HTTP it
//! listens on 127.0.0.1 only; with `MUX_MCP_TOKEN` set, every request needs
//! `Authorization: Bearer $MUX_MCP_TOKEN`.

use std::process::ExitCode;

use mux_examples::mcp_agent_server::{Args, server};
use mux_examples::mcp_serving::serve;

#[tokio::main]
async fn main() -> ExitCode {
    mux_examples::exit_code_as("mcp_agent_server", run().await)
}

async fn run() -> Result<(), String> {
    let args = Args::parse(std::env::args().skip(1))?;
    let model = mux_examples::mcp_agent_server::model(&args)?;
    eprintln!("mcp_agent_server: {}", model.description);
    let server = server(&args, model)?;
    serve(server, args.http).await
}
