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

use mux::mcp::HttpOptions;
use mux_examples::mcp_agent_server::{Args, server};

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("mcp_agent_server: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let args = Args::parse(std::env::args().skip(1))?;
    let model = mux_examples::mcp_agent_server::model(&args)?;
    eprintln!("mcp_agent_server: {}", model.description);
    let server = server(&args, model)?;
    let Some(port) = args.http else {
        return server.serve_stdio().await.map_err(|err| err.to_string());
    };
    let mut options = HttpOptions::loopback(port);
    if let Ok(token) = std::env::var("MUX_MCP_TOKEN") {
        options = options.with_bearer_token(token);
    }
    let http = server
        .serve_http(options)
        .await
        .map_err(|err| err.to_string())?;
    // The first line on stdout is the URL, so a script (or a test) can wait for it.
    println!("{}", http.url());
    let _ = tokio::signal::ctrl_c().await;
    http.shutdown().await;
    Ok(())
}
